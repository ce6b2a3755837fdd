"""The rule book, rule by rule (R7-R25), on hand-made positions and the seed example."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from engine import errors, moves
from engine.cards import parse_card
from engine.events import (
    Dealt,
    Event,
    Flipped,
    Hinted,
    Moved,
    Score,
    Stuck,
    SuitRemoved,
    Won,
)
from engine.game import Game
from engine.hints import suggest
from engine.levels import LEVELS, get_level
from engine.state import State, apply_move
from tests.engine.conftest import custom_game

# A spade run king..two, the ace elsewhere: one move from a removed set.
SPADES_K_TO_2 = "KS QS JS TS 9S 8S 7S 6S 5S 4S 3S 2S"


def snapshot(game: Game) -> tuple[list[list[int]], list[int], int, int]:
    """What a rejected action must not change."""
    state = game.state
    return [list(col) for col in state.cols], list(state.down), game.earned, game.moves


# -- the seed 000 example (rules.md) ------------------------------------------


def test_seed_example_first_move(seed_game: Game) -> None:
    events = seed_game.move("4H", 7, t=0)
    view_cols = seed_game.state.cols
    assert [parse_card(c) for c in "QH 3C".split()] == view_cols[1][3:]
    assert seed_game.state.down[1] == 3
    assert view_cols[6] == [parse_card(c) for c in "AD QD 9D 6S 2H TD 5H 4H 7S".split()]
    assert events[0] == Moved(parse_card("4H"), 2, 7, 2)
    assert seed_game.score() == 5  # R23: the 4H landed on the 5H


# -- rejections (R10), one per code ---------------------------------------------


@pytest.mark.parametrize(
    ("card", "to", "code"),
    [
        ("2S", 5, "not_face_up"),  # face down in column 1
        ("6C", 5, "not_face_up"),  # in the stock
        ("3S", 0, "bad_column"),
        ("3S", 8, "bad_column"),
        ("3S", 1, "same_column"),
        ("3S", 5, "not_one_lower"),  # onto 5C
        ("8H", 4, "same_column"),
        ("8H", 3, "not_one_lower"),  # onto 3H
        ("8H", 1, "not_one_lower"),  # onto 3S
        ("TD", 6, "same_suit_required"),  # onto JC
        ("8C", 4, "same_suit_required"),  # onto 9S
    ],
)
def test_move_rejections(seed_game: Game, card: str, to: int, code: str) -> None:
    before = snapshot(seed_game)
    with pytest.raises(errors.RuleViolation) as caught:
        seed_game.move(card, to)
    assert caught.value.code == code
    assert snapshot(seed_game) == before
    assert seed_game.actions == []


def test_empty_column_kings_only() -> None:
    game = custom_game("hard", ["KH 5S", "", "4D"])
    with pytest.raises(errors.EmptyColumnKingsOnly):
        game.move("5S", 2)
    game.move("KH", 2)  # a king (with what lies on it) is welcome
    assert game.state.cols[1] == [parse_card("KH"), parse_card("5S")]


@pytest.mark.parametrize("level", ["easy", "medium"])
def test_empty_column_any_card(level: str) -> None:
    game = custom_game(level, ["KH 5S", "", "4D"])
    game.move("5S", 2)
    assert game.state.cols[1] == [parse_card("5S")]


def test_error_order_face_up_before_column(seed_game: Game) -> None:
    with pytest.raises(errors.NotFaceUp):
        seed_game.move("2S", 99)


def test_error_order_kings_only_before_rank() -> None:
    game = custom_game("classic", ["5S", ""])
    with pytest.raises(errors.EmptyColumnKingsOnly):
        game.move("5S", 2)


def test_nothing_on_an_ace() -> None:
    game = custom_game("relaxed", ["AS", "KH"])
    with pytest.raises(errors.NotOneLower):
        game.move("KH", 1)


def test_no_destination(seed_game: Game) -> None:
    with pytest.raises(errors.NoDestination):
        seed_game.move("3S")  # the 4S is face down


def test_stock_empty_on_second_deal(seed_game: Game) -> None:
    seed_game.deal()
    with pytest.raises(errors.StockEmpty):
        seed_game.deal()


def test_stock_only_when_stuck_option() -> None:
    rules = get_level("hard").with_options(stock_only_when_stuck=True)
    game = Game(rules, 1)
    with pytest.raises(errors.StockNotAllowed):
        game.deal()
    stuck = custom_game("hard", ["3S", "9H"], stock="KC")
    stuck.rules = rules
    stuck.deal()
    assert stuck.state.stock == []


def test_nothing_to_undo(seed_game: Game) -> None:
    with pytest.raises(errors.NothingToUndo):
        seed_game.undo()


@pytest.mark.parametrize("code", sorted(errors._MESSAGES))
def test_messages_in_three_languages(code: str) -> None:
    texts = {errors.message_for(code, locale, card="4H", column=7) for locale in errors.LOCALES}
    assert len(texts) == 3
    assert all(text.strip() for text in texts)
    assert errors.message_for(code, "xx", card="4H", column=7) == errors.message_for(
        code, "en", card="4H", column=7
    )


def test_violation_carries_localised_message(seed_game: Game) -> None:
    with pytest.raises(errors.SameSuitRequired) as caught:
        seed_game.move("TD", 6)
    assert "TD" in caught.value.message("fi")
    assert caught.value.message("ru") != caught.value.message("en")


# -- the level table -------------------------------------------------------------


@pytest.mark.parametrize(
    ("level", "kings_only", "any_suit", "undo_limit", "scoring", "layout"),
    [
        ("easy", False, False, None, "timed", "scorpion"),
        ("medium", False, False, None, "timed", "scorpion"),
        ("hard", True, False, None, "timed", "scorpion"),
        ("classic", True, False, 100, "points", "scorpion"),
        ("relaxed", True, True, 100, "points", "scorpion"),
        ("three-blind-mice", True, False, None, "timed", "three-blind-mice"),
    ],
)
def test_level_table(
    level: str, kings_only: bool, any_suit: bool, undo_limit: int | None, scoring: str, layout: str
) -> None:
    rules = LEVELS[level]
    assert (rules.kings_only, rules.any_suit, rules.undo_limit, rules.scoring, rules.layout) == (
        kings_only,
        any_suit,
        undo_limit,
        scoring,
        layout,
    )
    assert rules.solver_deals == (level == "easy")
    assert not rules.stock_only_when_stuck


def test_unknown_level() -> None:
    with pytest.raises(ValueError, match="unknown level"):
        get_level("impossible")


def test_scorpion_layout() -> None:
    state = Game(LEVELS["hard"], 7).state
    assert [len(col) for col in state.cols] == [7] * 7
    assert state.down == [3, 3, 3, 3, 0, 0, 0]
    assert len(state.stock) == 3 and state.reserve == []


def test_three_blind_mice_layout_and_reserve() -> None:
    game = Game(LEVELS["three-blind-mice"], 7)
    state = game.state
    assert [len(col) for col in state.cols] == [5] * 10
    assert state.down == [0] * 7 + [3, 3, 3]
    assert len(state.reserve) == 2 and state.stock == []
    with pytest.raises(errors.StockEmpty):
        game.deal()


def test_reserve_card_plays_like_a_one_card_group() -> None:
    game = custom_game("three-blind-mice", ["9C", "5H", ""], reserve="8C KD")
    events = game.move("8C")
    assert events[0] == Moved(parse_card("8C"), 0, 1, 1)
    assert events[0].to_dict()["from"] == "reserve"
    game.move("KD", 3)
    assert game.state.reserve == []
    game.undo()
    assert game.state.reserve == [parse_card("KD")]


def test_undoing_a_reserve_move_says_where_the_card_returns() -> None:
    game = custom_game("three-blind-mice", ["9C", "5H", "", "4H"], reserve="8C KD 7S")
    game.move("8C")  # from the reserve's first place
    undone = game.undo()
    back = next(e for e in undone if isinstance(e, Moved))
    assert back.to_dict() == {
        "type": "moved", "card": "8C", "from": 1, "to": "reserve", "count": 1, "index": 1
    }  # fmt: skip
    assert game.state.reserve == [parse_card(c) for c in ("8C", "KD", "7S")]
    game.move("KD", 3)  # from the middle
    back = next(e for e in game.undo() if isinstance(e, Moved))
    assert back.to_dict()["index"] == 2
    game.move("4H", 2)  # between columns: no index
    back = next(e for e in game.undo() if isinstance(e, Moved))
    assert "index" not in back.to_dict()


def test_relaxed_builds_on_any_suit() -> None:
    game = custom_game("relaxed", ["9C", "8H"])
    game.move("8H", 1)
    assert game.score() == 0  # R23: an any-suit placement earns nothing


def test_hard_needs_the_same_suit() -> None:
    game = custom_game("hard", ["9C", "8H"])
    with pytest.raises(errors.SameSuitRequired):
        game.move("8H", 1)


# -- R7, R11: groups and auto-move ---------------------------------------------------


def test_group_moves_unchecked_above_the_picked_card() -> None:
    game = custom_game("classic", ["5S 8D 2C KH", "9D"])
    game.move("8D", 2)
    assert game.state.cols[1] == [parse_card(c) for c in "9D 8D 2C KH".split()]
    assert game.state.cols[0] == [parse_card("5S")]


def test_auto_move_prefers_same_suit_then_non_empty_then_leftmost() -> None:
    game = custom_game("relaxed", ["KS 4C", "5H", "", "5C", "5D"])
    game.move("4C")
    assert game.state.cols[3][-1] == parse_card("4C")  # same suit wins over leftmost
    game = custom_game("relaxed", ["KS 4C", "", "5H", "5D"])
    game.rules = game.rules.with_options(kings_only=False)
    game.move("4C")
    assert game.state.cols[2][-1] == parse_card("4C")  # non-empty before empty, then leftmost


def test_auto_move_to_leftmost_empty_column() -> None:
    game = custom_game("medium", ["3S 7H", "", "2C", ""])
    game.move("7H")
    assert game.state.cols[1] == [parse_card("7H")]


def test_auto_move_never_moves_a_whole_column_to_an_empty_one() -> None:
    game = custom_game("hard", ["KS QS", "", "3H"])
    with pytest.raises(errors.NoDestination):
        game.move("KS")
    game.move("KS", 2)  # named explicitly, it is legal
    assert game.state.cols[0] == []


# -- R12 flips, R13 stock -------------------------------------------------------------


def test_flip_after_move_scores_five_on_points() -> None:
    game = custom_game("classic", ["2C 8D", "9D"], face_down=[1, 0])
    events = game.move("8D", 2)
    assert Flipped(1, parse_card("2C")) in events
    assert game.state.down[0] == 0
    assert game.score() == 10  # same suit + flip


def test_deal_puts_one_card_on_columns_one_to_three_even_empty() -> None:
    game = custom_game("classic", ["5H", "", "9S", "2C"], stock="4H KD 8S")
    events = game.deal()
    assert events[0] == Dealt(tuple(parse_card(c) for c in "4H KD 8S".split()))
    assert game.state.cols[:3] == [
        [parse_card("5H"), parse_card("4H")],
        [parse_card("KD")],
        [parse_card("9S"), parse_card("8S")],
    ]
    assert game.moves == 1
    assert game.score() == 0  # R23: the deal itself earns nothing


# -- R14 removal, R15 win --------------------------------------------------------------


def test_set_completed_in_destination_is_removed() -> None:
    game = custom_game("classic", [SPADES_K_TO_2, "AS"], found="HDC")
    events = game.move("AS", 1)
    assert SuitRemoved(0, 1, 4) in events
    assert game.state.cols[0] == []
    assert game.won
    won = [event for event in events if isinstance(event, Won)]
    assert won and won[0].suits == 4


def test_set_uncovered_in_source_is_removed() -> None:
    game = custom_game("classic", [SPADES_K_TO_2 + " AS 9H", "TH"], face_down=[0, 0], found="D")
    events = game.move("9H", 2)
    assert SuitRemoved(0, 1, 2) in events
    assert game.state.cols[0] == []
    assert game.score() == 105  # same suit + the set


def test_two_stacked_sets_and_a_flip_beneath() -> None:
    hearts = "KH QH JH TH 9H 8H 7H 6H 5H 4H 3H 2H AH"
    game = custom_game("classic", ["3C " + hearts + " " + SPADES_K_TO_2, "AS"], face_down=[1, 0])
    events = game.move("AS", 1)
    assert [e for e in events if isinstance(e, SuitRemoved)] == [
        SuitRemoved(0, 1, 1),
        SuitRemoved(1, 1, 2),
    ]
    assert Flipped(1, parse_card("3C")) in events
    assert game.score() == 5 + 200 + 5
    game.undo()
    assert game.state.cols[0][-1] == parse_card("2S") and game.state.down[0] == 1
    assert game.score() == 0 and game.state.found == []


def test_covered_set_stays() -> None:
    game = custom_game("classic", [SPADES_K_TO_2 + " AS 9H", "8H"])
    events = game.move("8H", 1)
    assert not any(isinstance(event, SuitRemoved) for event in events)
    assert game.state.found == [] and len(game.state.cols[0]) == 15


def test_game_over_rejects_everything() -> None:
    game = custom_game("hard", [SPADES_K_TO_2, "AS"], found="HDC")
    game.move("AS", 1, t=5_000)
    with pytest.raises(errors.GameOver):
        game.move("AS")
    actions: list[Callable[[], list[Event]]] = [game.deal, game.undo, game.restart, game.hint]
    for action in actions:
        with pytest.raises(errors.GameOver):
            action()


# -- R16 dead ends -----------------------------------------------------------------------


def test_dead_end_detected_after_the_last_useful_move() -> None:
    game = custom_game("hard", ["3S 9H", "KD", "5D 8C", "TH"])
    events = game.move("9H", 4)
    assert isinstance(events[-1], Stuck)
    assert game.stuck
    game.undo()
    assert not game.stuck


def test_not_stuck_while_stock_remains() -> None:
    game = custom_game("hard", ["3S 9H", "KD", "5D 8C", "TH"], stock="2C 2D 2H")
    events = game.move("9H", 4)
    assert not any(isinstance(e, Stuck) for e in events)


def test_whole_column_to_empty_does_not_count_as_a_way_out() -> None:
    game = custom_game("hard", ["KD", "", "5D 8C", "9H", "TH"])
    events = game.move("9H", 5)
    assert isinstance(events[-1], Stuck)


# -- R18 undo limits, R19 restart, R20 hints ------------------------------------------------


def _shuttle(game: Game, count: int) -> None:
    """``count`` legal king moves between empty columns 2 and 3."""
    for _ in range(count):
        king_column = 2 if game.state.cols[1] else 3
        game.move("KS", 5 - king_column)


@pytest.mark.parametrize(("level", "remaining"), [("classic", 70), ("relaxed", 70), ("hard", 120)])
def test_undo_limit(level: str, remaining: int) -> None:
    game = custom_game(level, ["AH", "KS", "", "2D"])
    _shuttle(game, 150)
    for _ in range(60):
        game.undo()
    _shuttle(game, 30)
    assert game.undo_depth == remaining
    for _ in range(remaining):
        game.undo()
    with pytest.raises(errors.NothingToUndo):
        game.undo()


def test_restart_rewinds_and_clears_history(seed_game: Game) -> None:
    start = seed_game.state.copy()
    seed_game.restart()  # allowed at the deal
    seed_game.move("4H", 7)
    seed_game.deal()
    seed_game.restart()
    assert seed_game.state == start
    assert seed_game.score() == 0
    assert seed_game.undos == 2 and seed_game.moves == 2  # points: restarts are not moves
    with pytest.raises(errors.NothingToUndo):
        seed_game.undo()


def test_hints_are_counted_not_undone(seed_game: Game) -> None:
    seed_game.move("4H", 7)
    events = seed_game.hint()
    assert events[0].to_dict()["type"] == "hint"
    assert seed_game.hints == 1
    seed_game.undo()  # undoes the move, not the hint
    assert seed_game.state.cols[6][-1] == parse_card("5H")
    assert seed_game.hints == 1


def test_hint_names_a_face_up_card(seed_game: Game) -> None:
    hint = seed_game.suggestion()
    assert hint.action == "move" and hint.card is not None
    seed_game.move(hint.card, hint.to)


# -- R23 points ---------------------------------------------------------------------------


def test_following_the_engines_hints_does_not_go_round_in_a_circle() -> None:
    """Relaxed deal 4: the heuristic alone moved 3C between two hosts of its rank, hint
    after hint (from the 35th on). A hint does not lead back to a position on the way."""
    game = Game(LEVELS["relaxed"], 4)
    seen = {game.state.key()}
    for _ in range(80):
        hinted = game.hint()[0]
        assert isinstance(hinted, Hinted)
        if hinted.action == "none" or game.won:
            break
        if hinted.action == "deal":
            game.deal()
        else:
            assert hinted.card is not None
            game.move(hinted.card, hinted.to)
        assert game.state.key() not in seen
        seen.add(game.state.key())
    assert game.positions() <= seen


def test_a_hint_that_would_only_lead_back_is_none() -> None:
    game = Game(LEVELS["hard"], 1)
    game.deal()  # no stock left to fall back on
    assert suggest(game.state, game.rules).action == "move"
    every = {game.state.key()}
    for move in moves.legal_moves(game.state, game.rules, useful_only=True):
        fork = game.state.copy()
        apply_move(fork, *move)
        every.add(fork.key())
    assert suggest(game.state, game.rules, every) == Hinted("none", reason="seen")


def test_points_king_to_empty_column_earns_nothing() -> None:
    game = custom_game("classic", ["AH KS", ""])
    game.move("KS", 2)
    assert game.score() == 0


def test_points_flip_after_deal_set_removal() -> None:
    game = custom_game(
        "classic", ["2D " + SPADES_K_TO_2, "9C", "TC"], face_down=[1, 0, 0], stock="AS 7H 6H"
    )
    game.deal()
    assert game.state.found == [0]
    assert game.score() == 100 + 5  # the set and the card it uncovered


def test_points_undo_takes_back_exactly_and_play_never_lowers() -> None:
    game = custom_game("classic", ["2C 8D", "9D", "AH KS", ""], face_down=[1, 0, 0, 0])
    game.move("8D", 2)
    assert game.score() == 10
    game.move("KS", 4)
    assert game.score() == 10
    game.undo()
    game.undo()
    assert game.score() == 0


# -- R24 timed, R25 counters ------------------------------------------------------------------


def test_timed_ten_per_move_and_thirty_second_penalty_boundary() -> None:
    game = custom_game("hard", ["AH KS", "", "", "2D"])
    game.move("KS", 2, t=1_000)
    game.move("KS", 3, t=2_000)
    game.move("KS", 2, t=3_000)
    game.move("KS", 3, t=4_000)
    assert game.score(29_999) == 40
    assert game.score(30_000) == 10
    assert game.score(60_000) == 0  # never below zero
    assert game.score(1_000_000) == 0


def test_timed_set_bonus_and_win_bonus() -> None:
    game = custom_game("hard", [SPADES_K_TO_2, "AS"], found="HDC")
    events = game.move("AS", 1, t=95_500)
    # earned 10 (move) + 10 (suit); 3 penalties; bonus 600000 // 95
    expected = 20 - 90
    assert game.score() == max(0, expected) + 600_000 // 95
    assert isinstance(events[-1], Won)
    assert events[-1].score == game.score()
    assert game.score(500_000) == game.score()  # the clock stops at the win


def test_win_bonus_uses_at_least_one_second() -> None:
    game = custom_game("medium", [SPADES_K_TO_2, "AS"], found="HDC")
    game.move("AS", 1, t=400)
    assert game.score() == 20 + 600_000


@pytest.mark.parametrize(("level", "moves"), [("hard", 2), ("classic", 1)])
def test_move_then_undo_counters(level: str, moves: int) -> None:
    game = custom_game(level, ["AH KS", ""])
    game.move("KS", 2)
    game.undo()
    assert (game.moves, game.undos) == (moves, 1)
    assert game.score() == 0


def test_timed_undo_takes_back_and_earns_nothing() -> None:
    game = custom_game("hard", ["AH KS", "", "2C"])
    game.move("KS", 2, t=100)
    assert game.score() == 10
    game.undo(t=300)
    assert game.score() == 0
    game.restart(t=400)
    assert game.moves == 3 and game.undos == 2


def test_play_time_never_goes_back() -> None:
    game = custom_game("hard", ["AH KS", ""])
    game.move("KS", 2, t=1_000)
    with pytest.raises(ValueError, match="backwards"):
        game.undo(t=999)


def test_score_event_after_every_action(seed_game: Game) -> None:
    for events in (seed_game.move("4H", 7), seed_game.hint(), seed_game.undo()):
        assert any(isinstance(event, Score) for event in events)


def test_state_equality_and_copy_are_independent() -> None:
    state = Game(LEVELS["hard"], 3).state
    other = state.copy()
    assert other == state and other.key() == state.key()
    other.cols[0].append(other.cols[1].pop())
    assert other != state and other.key() != state.key()
    assert isinstance(state, State)


@pytest.mark.parametrize("kings_only", [True, False])
@pytest.mark.parametrize("any_suit", [True, False])
def test_a_placement_is_accepted_exactly_when_no_rule_refuses_it(
    kings_only: bool, any_suit: bool
) -> None:
    """check_move tests a placement with ``accepts`` and names the refusal with
    ``_placement_error``: the two must agree on every card and every column top."""
    rules = get_level("hard").with_options(kings_only=kings_only, any_suit=any_suit)
    for card in range(52):
        for target in [[], *([top] for top in range(52))]:
            refusal = moves._placement_error(rules, target, card)
            assert moves.accepts(rules, target, card) == (refusal is None), (card, target)
