"""Replay files (shared/spec/replay.md): export, the checked reader, rebuild, verify.

Deals used below, as ``scorpion-engine deal --reveal`` prints them (face-down
cards in parentheses):

hard/classic deal 1::

    stock: (9C) (2H) (6H)
    1: (JD) (5H) (KH) AS 4H TH 8D
    2: (2D) (KD) (3H) AH AC 8H QS
    3: (9H) (KC) (2S) 3C 4D 2C 6C
    4: (JC) (9S) (KS) 4C 7S JH 3D
    5: 5D 5S 9D 5C 3S 7D 8C
    6: 7H AD QD TS TD 6D TC
    7: 7C QC JS QH 4S 8S 6S

hard deal 5::

    stock: (AD) (7C) (TS)
    1: (AH) (3D) (3C) 5H 8H 9D TH
    2: (8S) (5C) (4S) 6S JH KS 6D
    3: (2D) (AS) (3S) 8D JC QD 6H
    4: (QS) (9C) (5D) TD 7D 4H 6C
    5: 4C KH KC 7S 5S AC QC
    6: 9H 4D 3H JD QH 2H JS
    7: 2S 2C KD 7H 8C TC 9S
"""

from __future__ import annotations

import copy
import functools
import json
from typing import Any

import pytest

from engine.cards import card_str
from engine.deal import deal_layout
from engine.errors import NotFaceUp, ReplayFormatError
from engine.game import Game
from engine.levels import LEVEL_NAMES, LEVELS
from engine.replay import (
    ReplayActionError,
    export_replay,
    parse_replay,
    rebuild,
    verify,
)
from tests.engine.conftest import FLIP_MOVE, HARD_5_AFTER_FLIP_MOVE
from tests.helpers import hint_player_win

VERIFY_VALID_KEYS = {
    "valid",
    "won",
    "score",
    "moves",
    "undos",
    "hints",
    "suits_removed",
    "columns",
    "face_down",
    "stock",
    "reserve",
}
VERIFY_INVALID_KEYS = {"valid", "index", "code", "message"}

# hard deal 1: four legal moves, each onto a card of its own suit, none flips.
DEAL1_MOVES: list[dict[str, Any]] = [
    {"type": "move", "card": "7D", "to": 1, "t": 1_000},
    {"type": "move", "card": "5S", "to": 7, "t": 2_000},
    {"type": "move", "card": "JS", "to": 2, "t": 3_000},
    {"type": "move", "card": "5C", "to": 3, "t": 4_000},
]
# hard deal 5: 5H (with 8H 9D TH on it) onto 6H turns 3C in column 1 face up.


def doc(level: str, deal: int, actions: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "format": "scorpion-replay",
        "version": 1,
        "level": level,
        "deal": deal,
        "actions": actions,
    }


def names(text: str) -> list[str]:
    return text.split()


# -- a won game, for game_over and the win bonus -----------------------------------


@functools.cache
# -- export ---------------------------------------------------------------------------


def test_export_of_a_played_game() -> None:
    game = Game(LEVELS["hard"], 5)
    game.move("5h", 3, 1_000)  # R2: any input spelling; the file is canonical
    game.move("JC", None, 1_000)  # auto-move (R11): no "to" in the file
    game.hint(2_500)
    with pytest.raises(NotFaceUp):  # a rejected action is no action
        game.move("AH", 2, 2_600)
    game.deal(3_000)
    game.undo(4_000)
    game.restart(4_000)
    game.move(game.state.cols[0][-4], 3, 9_000)  # 5H again, named by its int
    exported = export_replay(game)
    assert exported == {
        "format": "scorpion-replay",
        "version": 1,
        "level": "hard",
        "deal": 5,
        "actions": [
            {"type": "move", "card": "5H", "to": 3, "t": 1_000},
            {"type": "move", "card": "JC", "t": 1_000},
            {
                "type": "hint",
                "suggested": {"action": "move", "card": "9H", "to": 5},  # what the hint said
                "t": 2_500,
            },
            {"type": "deal", "t": 3_000},
            {"type": "undo", "t": 4_000},
            {"type": "restart", "t": 4_000},
            {"type": "move", "card": "5H", "to": 3, "t": 9_000},
        ],
    }
    assert json.loads(json.dumps(exported)) == exported
    assert export_replay(rebuild(parse_replay(exported))) == exported


def test_a_replayed_hint_gives_the_suggestion_it_records() -> None:
    document = {
        "format": "scorpion-replay",
        "version": 1,
        "level": "hard",
        "deal": 5,
        "actions": [
            {"type": "hint", "suggested": {"action": "none", "reason": "lost"}, "t": 10},
            {"type": "hint", "suggested": {"action": "move", "card": "kd", "to": 2}, "t": 20},
            {"type": "hint", "t": 30},  # a replay without suggestions: the heuristic's
        ],
    }
    game = Game(LEVELS["hard"], 5)
    shown = [game.play(action)[0].to_dict() for action in parse_replay(document).actions]
    assert shown == [
        {"type": "hint", "action": "none", "reason": "lost"},
        {"type": "hint", "action": "move", "card": "KD", "to": 2},
        Game(LEVELS["hard"], 5).hint(30)[0].to_dict(),
    ]
    # The log keeps the hint as recorded: an export claims no suggestion for it.
    assert export_replay(rebuild(parse_replay(document)))["actions"][2] == {"type": "hint", "t": 30}


@pytest.mark.parametrize(
    "suggested",
    [
        "move",
        {"action": "jump"},
        {"action": "move", "card": "ZZ", "to": 1},
        {"action": "move", "card": "KD"},
        {"action": "move", "to": 1},
        {"action": "move", "card": "KD", "to": 0},
        {"action": "none", "reason": 7},
    ],
)
def test_a_bad_suggestion_is_no_replay(suggested: object) -> None:
    document = {
        "format": "scorpion-replay",
        "version": 1,
        "level": "hard",
        "deal": 5,
        "actions": [{"type": "hint", "suggested": suggested}],
    }
    with pytest.raises(ReplayFormatError):
        parse_replay(document)


@pytest.mark.parametrize("level", LEVEL_NAMES)
def test_export_of_a_new_game_names_its_level_and_deal(level: str) -> None:
    assert export_replay(Game(LEVELS[level], 32_001)) == doc(level, 32_001, [])


# -- parse_replay: what is not a replay ----------------------------------------------


def _changed(**changes: Any) -> dict[str, Any]:
    base = doc("hard", 1, [dict(action) for action in DEAL1_MOVES])
    base.update(changes)
    return base


def _without(key: str) -> dict[str, Any]:
    base = _changed()
    del base[key]
    return base


def _with_actions(*actions: Any) -> dict[str, Any]:
    return _changed(actions=list(actions))


NOT_REPLAYS: dict[str, object] = {
    "a list": [],
    "a string": "scorpion-replay",
    "a number": 1,
    "null": None,
    "format wrong": _changed(format="scorpion"),
    "format missing": _without("format"),
    "version 2": _changed(version=2),
    "version 0": _changed(version=0),
    "version as text": _changed(version="1"),
    "version true": _changed(version=True),
    "version missing": _without("version"),
    "level unknown": _changed(level="expert"),
    "level null": _changed(level=None),
    "level a list": _changed(level=["hard"]),
    "level missing": _without("level"),
    "deal as text": _changed(deal="1"),
    "deal a float": _changed(deal=1.0),
    "deal true": _changed(deal=True),
    "deal missing": _without("deal"),
    "deal 0": _changed(deal=0),
    "deal negative": _changed(deal=-5),
    "actions an object": _changed(actions={"0": DEAL1_MOVES[0]}),
    "actions a string": _changed(actions="move"),
    "actions missing": _without("actions"),
    "action a string": _with_actions("move"),
    "action a list": _with_actions(["move", "7D", 1]),
    "action type unknown": _with_actions({"type": "pass"}),
    "action type upper case": _with_actions({"type": "MOVE", "card": "7D", "to": 1}),
    "action type missing": _with_actions({"card": "7D", "to": 1}),
    "move without card": _with_actions({"type": "move", "to": 1}),
    "card 1X": _with_actions({"type": "move", "card": "1X", "to": 1}),
    "card empty": _with_actions({"type": "move", "card": "", "to": 1}),
    "card a number": _with_actions({"type": "move", "card": 7, "to": 1}),
    "card null": _with_actions({"type": "move", "card": None, "to": 1}),
    "to as text": _with_actions({"type": "move", "card": "7D", "to": "1"}),
    "to a float": _with_actions({"type": "move", "card": "7D", "to": 1.0}),
    "to true": _with_actions({"type": "move", "card": "7D", "to": True}),
    "to 0": _with_actions({"type": "move", "card": "7D", "to": 0}),
    "to null": _with_actions({"type": "move", "card": "7D", "to": None}),
    "to past 2^53-1": _with_actions({"type": "move", "card": "7D", "to": 2**53}),
    "t past 2^53-1": _with_actions({"type": "hint", "t": 2**70}),
    "t decreases": _with_actions({"type": "hint", "t": 2_000}, {"type": "hint", "t": 1_999}),
    "t decreases after an inherited t": _with_actions(
        {"type": "hint", "t": 2_000}, {"type": "hint"}, {"type": "undo", "t": 1_000}
    ),
    "t negative": _with_actions({"type": "hint", "t": -1}),
    "t a float": _with_actions({"type": "hint", "t": 1.5}),
    "t as text": _with_actions({"type": "hint", "t": "100"}),
    "t true": _with_actions({"type": "hint", "t": True}),
    "end_t before the last action": _changed(end_t=3_999),
    "end_t negative": _changed(end_t=-1),
    "end_t a float": _changed(end_t=40_000.0),
    "end_t as text": _changed(end_t="40000"),
    "end_t null": _changed(end_t=None),
    "end_t past 2^53-1": _changed(end_t=2**53),
}


@pytest.mark.parametrize("document", NOT_REPLAYS.values(), ids=NOT_REPLAYS.keys())
def test_parse_rejects_what_is_not_a_replay(document: object) -> None:
    with pytest.raises(ReplayFormatError):
        parse_replay(document)
    with pytest.raises(ReplayFormatError):
        verify(document)


def test_the_base_of_the_rejected_documents_is_a_replay() -> None:
    """The documents above differ from this valid one in one place each."""
    replay = parse_replay(_changed())
    assert replay.rules is LEVELS["hard"]
    assert replay.deal == 1
    assert [action.type for action in replay.actions] == ["move"] * 4
    assert [(card_str(a.card or 0), a.to, a.t) for a in replay.actions] == [
        (m["card"], m["to"], m["t"]) for m in DEAL1_MOVES
    ]


# -- parse_replay: what is accepted ---------------------------------------------------


def test_a_missing_t_is_the_previous_actions_t() -> None:
    replay = parse_replay(
        _with_actions(
            {"type": "hint"},
            {"type": "hint", "t": 700},
            {"type": "undo"},
            {"type": "move", "card": "7D", "to": 1},
            {"type": "deal", "t": 700},
        )
    )
    assert [action.t for action in replay.actions] == [0, 700, 700, 700, 700]


@pytest.mark.parametrize(("spelling", "canonical"), [("10h", "TH"), ("4♥", "4H"), ("th", "TH")])
def test_cards_may_use_any_r2_spelling(spelling: str, canonical: str) -> None:
    replay = parse_replay(_with_actions({"type": "move", "card": spelling, "to": 3}))
    assert card_str(replay.actions[0].card or 0) == canonical


def test_a_replay_in_other_spellings_plays_the_same_game() -> None:
    spelled = [dict(move) for move in DEAL1_MOVES]
    for move, spelling in zip(spelled, ["7d", "5♠", "js", "5♣"], strict=True):
        move["card"] = spelling
    plain = rebuild(parse_replay(doc("hard", 1, DEAL1_MOVES)))
    other = rebuild(parse_replay(doc("hard", 1, spelled)))
    assert other.state == plain.state
    assert export_replay(other) == export_replay(plain) == doc("hard", 1, DEAL1_MOVES)


def test_an_easy_replay_may_name_any_deal() -> None:
    for number in (1, 2, 3, 31_999, 32_000, 10**20):
        assert parse_replay(doc("easy", number, [])).deal == number


def test_parse_does_not_change_the_document() -> None:
    document = _with_actions({"type": "hint"}, {"type": "move", "card": "10d", "to": 1})
    before = copy.deepcopy(document)
    parse_replay(document)
    assert document == before


# -- rebuild: the first illegal action -----------------------------------------------


ILLEGAL: dict[str, tuple[str, int, list[dict[str, Any]], int, str]] = {
    "face-down card": (
        "hard",
        5,
        [FLIP_MOVE, {"type": "hint", "t": 1_500}, {"type": "move", "card": "AH", "to": 2}],
        2,
        "not_face_up",
    ),
    "stock card": ("hard", 5, [{"type": "move", "card": "AD"}], 0, "not_face_up"),
    "column 8": (
        "hard",
        1,
        [*DEAL1_MOVES[:2], {"type": "move", "card": "7D", "to": 8}],
        2,
        "bad_column",
    ),
    "column 11 of 10": (
        "three-blind-mice",
        1,
        [{"type": "move", "card": "JS", "to": 11}],
        0,
        "bad_column",
    ),
    "second deal": (
        "hard",
        1,
        [{"type": "deal"}, {"type": "hint"}, {"type": "deal"}],
        2,
        "stock_empty",
    ),
    "deal without a stock": ("three-blind-mice", 1, [{"type": "deal"}], 0, "stock_empty"),
    "undo at the start": ("hard", 1, [{"type": "undo"}], 0, "nothing_to_undo"),
    "undo past the start": (
        "classic",
        1,
        [DEAL1_MOVES[0], {"type": "undo"}, {"type": "undo"}],
        2,
        "nothing_to_undo",
    ),
    "undo after restart": (
        "hard",
        1,
        [DEAL1_MOVES[0], {"type": "restart"}, {"type": "undo"}],
        2,
        "nothing_to_undo",
    ),
}


@pytest.mark.parametrize(
    ("level", "deal", "actions", "index", "code"), ILLEGAL.values(), ids=ILLEGAL.keys()
)
def test_rebuild_names_the_first_illegal_action(
    level: str, deal: int, actions: list[dict[str, Any]], index: int, code: str
) -> None:
    replay = parse_replay(doc(level, deal, actions))
    with pytest.raises(ReplayActionError) as caught:
        rebuild(replay)
    assert caught.value.index == index
    assert caught.value.violation.code == code
    assert verify(doc(level, deal, actions)) == (
        1,
        {
            "valid": False,
            "index": index,
            "code": code,
            "message": caught.value.violation.message("en"),
        },
    )


@pytest.mark.parametrize(
    "after",
    [
        {"type": "hint"},
        {"type": "undo"},
        {"type": "restart"},
        {"type": "deal"},
        {"type": "move", "card": "KS", "to": 1},
    ],
    ids=lambda action: str(action["type"]),
)
def test_every_action_after_a_won_game_is_game_over(after: dict[str, Any]) -> None:
    won = export_replay(hint_player_win())
    count = len(won["actions"])
    won["actions"].append({**after, "t": won["actions"][-1]["t"] + 1_000})
    with pytest.raises(ReplayActionError) as caught:
        rebuild(parse_replay(won))
    assert (caught.value.index, caught.value.violation.code) == (count, "game_over")
    code, out = verify(won)
    assert code == 1
    assert (out["index"], out["code"]) == (count, "game_over")


# -- verify ---------------------------------------------------------------------------


def test_verify_a_replay_without_actions_gives_the_deal() -> None:
    code, out = verify(doc("hard", 5, []))
    assert code == 0
    assert set(out) == VERIFY_VALID_KEYS
    layout = deal_layout("scorpion", 5)
    assert out == {
        "valid": True,
        "won": False,
        "score": 0,
        "moves": 0,
        "undos": 0,
        "hints": 0,
        "suits_removed": 0,
        "columns": [[card_str(card) for card in col] for col in layout.columns],
        "face_down": [3, 3, 3, 3, 0, 0, 0],
        "stock": ["AD", "7C", "TS"],
        "reserve": [],
    }
    assert out["columns"][0] == names("AH 3D 3C 5H 8H 9D TH")
    assert out["columns"][6] == names("2S 2C KD 7H 8C TC 9S")


def test_verify_after_a_move_that_turns_a_card_face_up() -> None:
    code, out = verify(doc("hard", 5, [FLIP_MOVE]))
    assert code == 0
    assert out == {
        "valid": True,
        "won": False,
        "score": 10,  # R24: +10 for the move
        "moves": 1,
        "undos": 0,
        "hints": 0,
        "suits_removed": 0,
        **HARD_5_AFTER_FLIP_MOVE,
    }


def test_verify_lists_the_stock_in_the_order_it_is_dealt_onto_columns_1_2_3() -> None:
    _code, before = verify(doc("hard", 5, [FLIP_MOVE]))
    code, after = verify(doc("hard", 5, [FLIP_MOVE, {"type": "deal", "t": 2_000}]))
    assert code == 0
    assert after["stock"] == []
    assert [after["columns"][i][-1] for i in range(3)] == before["stock"] == ["AD", "7C", "TS"]
    for i in range(3):
        assert after["columns"][i][:-1] == before["columns"][i]
    assert after["columns"][3:] == before["columns"][3:]
    assert after["face_down"] == before["face_down"]
    assert after["moves"] == 2


def test_verify_after_the_four_moves_of_deal_1() -> None:
    code, out = verify(doc("hard", 1, DEAL1_MOVES))
    assert code == 0
    assert out["columns"] == [
        names("JD 5H KH AS 4H TH 8D 7D 8C"),
        names("2D KD 3H AH AC 8H QS JS QH 4S 8S 6S 5S 9D"),
        names("9H KC 2S 3C 4D 2C 6C 5C 3S"),
        names("JC 9S KS 4C 7S JH 3D"),
        names("5D"),
        names("7H AD QD TS TD 6D TC"),
        names("7C QC"),
    ]
    assert out["face_down"] == [3, 3, 3, 3, 0, 0, 0]
    assert out["stock"] == ["9C", "2H", "6H"]
    assert (out["score"], out["moves"]) == (40, 4)


def test_verify_three_blind_mice_shows_the_reserve() -> None:
    code, out = verify(doc("three-blind-mice", 4, []))
    assert code == 0
    assert set(out) == VERIFY_VALID_KEYS
    assert out["reserve"] == ["4S", "AD"]
    assert out["stock"] == []
    assert out["face_down"] == [0] * 7 + [3] * 3
    assert [len(col) for col in out["columns"]] == [5] * 10
    code, out = verify(doc("three-blind-mice", 4, [{"type": "move", "card": "AD", "t": 100}]))
    assert code == 0
    assert out["reserve"] == ["4S"]
    assert out["columns"][3] == names("JS 9D 7S TH 2D AD")


@pytest.mark.parametrize(
    ("last_t", "score"),
    [(4_000, 40), (29_999, 40), (30_000, 10), (31_000, 10), (59_999, 10), (60_000, 0)],
)
def test_verify_takes_the_timed_score_at_the_last_actions_t(last_t: int, score: int) -> None:
    """R24/R25: four moves earn 40; every full 30 s of play costs 30 (31 s cost 30)."""
    actions = [*DEAL1_MOVES, {"type": "hint", "t": last_t}]
    code, out = verify(doc("hard", 1, actions))
    assert code == 0
    assert (out["score"], out["moves"], out["hints"]) == (score, 4, 1)


@pytest.mark.parametrize(("end_t", "score"), [(4_000, 40), (29_999, 40), (30_000, 10), (65_000, 0)])
def test_verify_adds_the_timed_score_at_end_t(end_t: int, score: int) -> None:
    """A game resigned or abandoned after its last action ended later: its score then is
    ``score_at_end``; ``score`` is at the last action's t, as shared/spec/replay.md says
    (four moves, 40 points, the last at 4 s)."""
    code, out = verify(_changed(end_t=end_t))
    assert code == 0
    assert (out["score"], out["score_at_end"], out["moves"]) == (40, score, 4)
    assert "score_at_end" not in verify(_changed())[1]
    assert parse_replay(_changed(end_t=end_t)).end_t == end_t
    assert parse_replay(_changed()).end_t is None  # older files: the last action's t


def test_end_t_changes_neither_a_won_score_nor_points() -> None:
    won = export_replay(hint_player_win())
    later = won["actions"][-1]["t"] + 600_000
    at_end = verify({**won, "end_t": later})[1]
    assert at_end.pop("score_at_end") == at_end["score"] and at_end == verify(won)[1]
    assert verify({**_changed(end_t=600_000), "level": "classic"})[1]["score_at_end"] == 20


def test_export_carries_end_t_before_the_actions() -> None:
    game = Game(LEVELS["hard"], 1)
    game.move("7D", 1, 1_000)
    exported = export_replay(game, end_t=31_000)
    assert list(exported) == ["format", "version", "level", "deal", "end_t", "actions"]
    assert verify(exported)[1]["score_at_end"] == 0  # 10 earned, 30 taken at 31 s
    assert "end_t" not in export_replay(game)


def test_verify_points_do_not_depend_on_time() -> None:
    """R23: four same-suit placements, no flips: 20 points, at any t."""
    actions = [*DEAL1_MOVES, {"type": "hint", "t": 600_000}]
    code, out = verify(doc("classic", 1, actions))
    assert code == 0
    assert out["score"] == 20


@pytest.mark.parametrize(("level", "moves"), [("hard", 4), ("classic", 2)])
def test_verify_counts_moves_undos_and_hints_by_r25(level: str, moves: int) -> None:
    """A move, undo, hint, restart, move: an undo and a restart add a move under timed."""
    actions = [
        DEAL1_MOVES[0],
        {"type": "undo", "t": 1_500},
        {"type": "hint", "t": 1_600},
        {"type": "restart", "t": 1_700},
        DEAL1_MOVES[1] | {"t": 2_000},
    ]
    code, out = verify(doc(level, 1, actions))
    assert code == 0
    assert (out["moves"], out["undos"], out["hints"]) == (moves, 2, 1)
    assert out["columns"][4] == names("5D")  # only the last move stands


def test_verify_a_won_replay() -> None:
    game = hint_player_win()
    replay = export_replay(game)
    code, out = verify(json.loads(json.dumps(replay)))
    assert code == 0
    moves = len(replay["actions"])
    last_t = replay["actions"][-1]["t"]
    earned = 10 * moves + 10 * 4  # R24: +10 a move, +10 more a completed suit
    bonus = 600_000 // max(1, last_t // 1_000)
    assert out == {
        "valid": True,
        "won": True,
        "score": max(0, earned - 30 * (last_t // 30_000)) + bonus,
        "moves": moves,
        "undos": 0,
        "hints": 0,
        "suits_removed": 4,
        "columns": [[] for _ in range(7)],
        "face_down": [0] * 7,
        "stock": [],
        "reserve": [],
    }


def test_verify_an_invalid_replay() -> None:
    actions = [FLIP_MOVE, {"type": "move", "card": "AH", "to": 2, "t": 2_000}]
    code, out = verify(doc("hard", 5, actions))
    assert code == 1
    assert set(out) == VERIFY_INVALID_KEYS
    assert out["valid"] is False
    assert out["index"] == 1
    assert out["code"] == "not_face_up"
    assert isinstance(out["message"], str)
    assert "AH" in out["message"]
    assert "\n" not in out["message"]
