"""Hypothesis properties over random play on every level (R7-R25).

A game is driven by a list of choices, each (kind, pick, dt): ``kind`` says
what to try, ``pick`` selects among the options the position offers, ``dt`` is
how much play time passes first (never negative, so time never goes back). The
kinds cover every action a player has: a legal move from ``legal_moves``, the
move the hint heuristic would play, an auto-move of a face-up card (R11, may
raise NoDestination), any card to any column (mostly rejected), the stock deal,
undo, restart and hint. Every action goes through the checked ``Game`` API.

Scores are recomputed here from R23/R24's formulas, not with engine.scoring.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st

from engine.cards import card_str
from engine.deal import MAX_DEAL, deal_layout
from engine.errors import RuleViolation
from engine.events import Event
from engine.game import Action, Game
from engine.levels import LEVEL_NAMES, LEVELS, Rules
from engine.moves import legal_moves
from engine.replay import export_replay, parse_replay, rebuild
from engine.state import State, apply_deal, apply_move, undo
from engine.view import public_view

# Weighted action kinds. Random play: moves dominate so games get somewhere,
# restart is rare. Greedy play mostly follows the hint, so sets get removed and
# games are won now and then.
RANDOM_KINDS: tuple[str, ...] = (
    ("move",) * 12
    + ("good",) * 16
    + ("auto",) * 5
    + ("any",) * 5
    + ("deal",) * 2
    + ("undo",) * 6
    + ("hint",) * 2
    + ("restart",) * 2
)
GREEDY_KINDS: tuple[str, ...] = ("good",) * 40 + ("auto", "any", "undo", "hint", "move")

Choice = tuple[str, int, int]
GameSpec = tuple[str, int, list[Choice]]


def plans(kinds: tuple[str, ...]) -> st.SearchStrategy[list[Choice]]:
    choice = st.tuples(st.sampled_from(kinds), st.integers(0, 2**16), st.integers(0, 6_000))
    return st.integers(1, 150).flatmap(lambda n: st.lists(choice, min_size=n, max_size=n))


# Deal numbers from both generators of R6: the LCG below 32000, MT19937 above.
deal_numbers = st.one_of(st.integers(1, 31_999), st.integers(32_000, MAX_DEAL))
games: st.SearchStrategy[GameSpec] = st.tuples(
    st.sampled_from(LEVEL_NAMES),
    deal_numbers,
    st.one_of(plans(RANDOM_KINDS), plans(GREEDY_KINDS)),
)

# Games that following the hint wins (found once by trying deals 1..60), then
# one action of each kind after the win (R15: all rejected with game_over).
_AFTER_WIN: list[Choice] = [(kind, 0, 500) for kind in ("move", "good", "auto", "any")] + [
    (kind, 0, 0) for kind in ("deal", "undo", "restart", "hint")
]
# R18's example on a level that keeps the last 100 moves: 150 moves, 60 undos,
# 30 more moves, then undo until nothing is left (70 succeed).
_UNDO_LIMIT_PLAN: list[Choice] = (
    [("move", 7919 * i, 100) for i in range(150)]
    + [("undo", 0, 100)] * 60
    + [("move", 31 * i, 100) for i in range(30)]
    + [("undo", 0, 0)] * 75
)
EXAMPLES: tuple[GameSpec, ...] = (
    ("easy", 4, [("good", 0, 1_000)] * 59 + _AFTER_WIN),
    ("classic", 56, [("good", 0, 700)] * 52 + _AFTER_WIN),
    ("three-blind-mice", 3, [("good", 0, 2_500)] * 50 + _AFTER_WIN),
    ("relaxed", 1, _UNDO_LIMIT_PLAN),
)


def on_random_games(test: Callable[[GameSpec], None]) -> Callable[..., None]:
    """Run ``test`` on random games of every level, and on the EXAMPLES above."""
    run = given(games)(test)
    for spec in EXAMPLES:
        run = example(spec)(run)
    return settings(max_examples=80, deadline=None)(run)


ALL_CARDS = list(range(52))


def expected_score(rules: Rules, earned: int, t: int) -> int:
    """R23/R24 for a game that is not won: points = earned; timed loses 30 per full 30 s."""
    if rules.scoring == "points":
        return earned
    return max(0, earned - 30 * (t // 30_000))


@dataclass(frozen=True)
class Snapshot:
    """Everything an action may change, read through the public API."""

    state: State
    key: bytes
    earned: int
    moves: int
    undos: int
    hints: int
    depth: int
    actions: tuple[Action, ...]
    time: int
    won: bool
    stuck: bool
    at: int
    score: int  # at play time ``at``


def snapshot(game: Game, t: int) -> Snapshot:
    return Snapshot(
        state=game.state.copy(),
        key=game.state.key(),
        earned=game.earned,
        moves=game.moves,
        undos=game.undos,
        hints=game.hints,
        depth=game.undo_depth,
        actions=tuple(game.actions),
        time=game.time,
        won=game.won,
        stuck=game.stuck,
        at=t,
        score=game.score(t),
    )


def hidden_names(state: State) -> frozenset[str]:
    """The names of every face-down card and every stock card."""
    hidden = {card_str(card) for card in state.stock}
    for col, down in zip(state.cols, state.down, strict=True):
        hidden.update(card_str(card) for card in col[:down])
    return frozenset(hidden)


def face_up_cards(state: State) -> list[int]:
    up = [card for col, down in zip(state.cols, state.down, strict=True) for card in col[down:]]
    return up + list(state.reserve)


def strings_in(value: Any) -> Iterator[str]:
    """Every string anywhere in a JSON-like value, dict keys included."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from strings_in(key)
            yield from strings_in(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from strings_in(item)


@dataclass(frozen=True)
class Outcome:
    """One action of a driven game: what was tried and what came of it."""

    kind: str
    tried: Action
    before: Snapshot
    hidden_before: frozenset[str]
    events: list[Event] | None
    error: RuleViolation | None

    @property
    def t(self) -> int:
        return self.tried.t


def choose(game: Game, kind: str, pick: int, t: int) -> Action:
    """The action ``kind`` stands for in this position, ``pick`` choosing among options."""
    state, rules = game.state, game.rules
    if kind == "move":
        options = legal_moves(state, rules)
        if options:
            src, start, dst = options[pick % len(options)]
            card = state.reserve[start] if src < 0 else state.cols[src][start]
            return Action("move", card, dst + 1, t)
    elif kind == "good":
        hint = game.suggestion()
        if hint.action == "move" and hint.card is not None:
            return Action("move", hint.card, hint.to, t)
        if hint.action == "deal":
            return Action("deal", t=t)
        if game.undo_depth:  # a dead end: back off one step
            return Action("undo", t=t)
    elif kind == "auto":
        up = face_up_cards(state)
        if up:
            return Action("move", up[pick % len(up)], None, t)
    elif kind == "any":
        return Action("move", pick % 52, (pick // 52) % (len(state.cols) + 2), t)
    elif kind in ("deal", "undo", "restart"):
        return Action(kind, t=t)
    return Action("hint", t=t)


def perform(game: Game, action: Action) -> list[Event]:
    """Play ``action`` through the checked API."""
    if action.type == "move":
        assert action.card is not None
        return game.move(action.card, action.to, action.t)
    if action.type == "deal":
        return game.deal(action.t)
    if action.type == "undo":
        return game.undo(action.t)
    if action.type == "restart":
        return game.restart(action.t)
    return game.hint(action.t)


def drive(game: Game, plan: list[Choice]) -> Iterator[Outcome]:
    """Play ``plan`` on ``game``, yielding after every action what it did."""
    t = 0
    for kind, pick, dt in plan:
        t += dt
        before = snapshot(game, t)
        hidden = hidden_names(game.state)
        tried = choose(game, kind, pick, t)
        try:
            events = perform(game, tried)
        except RuleViolation as exc:
            yield Outcome(kind, tried, before, hidden, None, exc)
        else:
            yield Outcome(kind, tried, before, hidden, events, None)


def assert_conserved(state: State) -> None:
    cards = state.all_cards()
    assert len(cards) == 52
    assert sorted(cards) == ALL_CARDS


# -- properties -------------------------------------------------------------------


@on_random_games
def test_52_cards_are_conserved(spec: GameSpec) -> None:
    level, deal, plan = spec
    game = Game(LEVELS[level], deal)
    assert_conserved(game.state)
    for _outcome in drive(game, plan):
        assert_conserved(game.state)


def complete_set_on_top(col: list[int], down: int) -> bool:
    """R14: the top 13 cards are K Q J ... 2 A of one suit, all face up."""
    if len(col) - down < 13:
        return False
    top = col[-13:]
    suit = top[0] // 13
    return all(card == suit * 13 + rank for card, rank in zip(top, range(12, -1, -1), strict=True))


@on_random_games
def test_no_top_card_face_down_and_no_set_left_on_top(spec: GameSpec) -> None:
    """After every action: R12 flipped every face-down top card, R14 removed every set."""
    level, deal, plan = spec
    game = Game(LEVELS[level], deal)
    for _outcome in drive(game, plan):
        state = game.state
        for col, down in zip(state.cols, state.down, strict=True):
            assert 0 <= down <= len(col)
            assert not col or down < len(col)
            assert not complete_set_on_top(col, down)
        assert len(set(state.found)) == len(state.found) <= 4
        assert game.won == (len(state.found) == 4)


@on_random_games
def test_undo_restores_the_previous_state_score_and_depth(spec: GameSpec) -> None:
    """R18/R24/R25: undo takes back a move or deal with all it caused and earned."""
    level, deal, plan = spec
    rules = LEVELS[level]
    # The snapshot before each move or deal that undo may still take back.
    taken_back: list[Snapshot] = []
    game = Game(LEVELS[level], deal)
    for outcome in drive(game, plan):
        if outcome.error is not None:
            continue
        before = outcome.before
        action = game.actions[-1]
        if action.type in ("move", "deal"):
            taken_back.append(before)
        elif action.type == "restart":
            taken_back.clear()
        elif action.type == "undo":
            previous = taken_back.pop()
            assert game.state == previous.state
            assert game.state.key() == previous.key
            assert game.earned == previous.earned
            assert game.score(previous.at) == previous.score
            assert game.score(outcome.t) == expected_score(rules, previous.earned, outcome.t)
            assert game.undo_depth == before.depth - 1
            if rules.undo_limit is None:
                assert game.undo_depth == previous.depth
            else:  # R18: what fell off the end of a limited history stays gone
                assert game.undo_depth <= previous.depth
            assert game.undos == before.undos + 1
            assert game.moves == before.moves + (1 if rules.scoring == "timed" else 0)
            assert game.hints == before.hints


@on_random_games
def test_undo_right_after_an_action_restores_the_score_at_the_same_t(spec: GameSpec) -> None:
    """Every accepted move or deal, undone at once at the same t, leaves no trace
    but the counters (R18, R24, R25)."""
    level, deal, plan = spec
    rules = LEVELS[level]
    game = Game(LEVELS[level], deal)
    for outcome in drive(game, plan):
        if outcome.error is not None or game.won:
            continue
        if game.actions[-1].type not in ("move", "deal"):
            continue
        before, t = outcome.before, outcome.t
        after_action = snapshot(game, t)
        game.undo(t)
        assert game.state == before.state
        assert game.earned == before.earned
        assert game.score(t) == before.score
        limit = rules.undo_limit
        assert game.undo_depth == (before.depth if limit is None else min(before.depth, limit - 1))
        assert game.undos == before.undos + 1
        timed = rules.scoring == "timed"
        assert game.moves == after_action.moves + (1 if timed else 0)
        assert game.moves == before.moves + (2 if timed else 1)
        # Play it again so the walk continues from the position it reached.
        game.play(game.actions[-2])
        assert game.state == after_action.state
        assert game.earned == after_action.earned


@on_random_games
def test_restart_equals_the_deal_and_scores_as_if_all_were_undone(spec: GameSpec) -> None:
    """R19: the deal again, history cleared, score as if everything were undone."""
    level, deal, plan = spec
    rules = LEVELS[level]
    game = Game(LEVELS[level], deal)
    for outcome in drive(game, plan):
        if outcome.error is not None or game.actions[-1].type != "restart":
            continue
        before, t = outcome.before, outcome.t
        assert game.state == State.from_deal(game.layout)
        assert game.state == State.from_deal(deal_layout(rules.layout, deal))
        assert game.earned == 0
        assert game.undo_depth == 0
        assert game.score(t) == expected_score(rules, 0, t)
        assert game.undos == before.undos + 1
        assert game.moves == before.moves + (1 if rules.scoring == "timed" else 0)
        assert game.hints == before.hints
        if rules.undo_limit is None:
            # Literally undo everything on a twin game: same position, same score.
            twin = Game(rules, deal)
            for action in game.actions[:-1]:
                twin.play(action)
            while twin.undo_depth:
                twin.undo(t)
            assert twin.state == game.state
            assert twin.earned == game.earned
            assert twin.score(t) == game.score(t)


@on_random_games
def test_view_and_events_never_show_a_hidden_card(spec: GameSpec) -> None:
    """engine.view and engine.events: no face-down or stock card leaves the engine
    (architecture.md, Hidden information)."""
    level, deal, plan = spec
    game = Game(LEVELS[level], deal)
    for outcome in drive(game, plan):
        hidden_now = hidden_names(game.state)
        view = public_view(game, outcome.t)
        leaked = set(strings_in(view)) & hidden_now
        assert not leaked, f"view shows hidden cards {leaked}"
        assert view["stock"] == len(game.state.stock)
        # The deal number of an unfinished easy game would reveal every card.
        withheld = game.rules.solver_deals and not game.won
        assert view["deal"] == (None if withheld else deal)
        for event in outcome.events or []:
            data = event.to_dict()
            names = set(strings_in(data))
            assert not names & hidden_now, f"{data} names a hidden card"
            if data["type"] == "flipped":
                # It reveals the card that was face down and now lies face up.
                assert data["card"] in outcome.hidden_before
                face_up = game.state.face_up(data["column"] - 1)
                assert data["card"] in {card_str(card) for card in face_up}
            elif data["type"] != "dealt":
                # Only a flip or a deal may name a card that was hidden before it.
                assert not names & outcome.hidden_before, f"{data} names a hidden card"


def auto_destination(state: State, rules: Rules, card: int) -> int | None:
    """R11 from the rule text: among the legal destinations of ``card`` (never a whole
    column onto an empty one) prefer same suit, then a non-empty column, then the
    leftmost. 1-based, or None for no_destination."""
    fits = []
    for src, start, dst in legal_moves(state, rules):
        moved = state.reserve[start] if src < 0 else state.cols[src][start]
        target = state.cols[dst]
        if moved != card or (src >= 0 and start == 0 and not target):
            continue
        same_suit = bool(target) and target[-1] // 13 == card // 13
        fits.append((not same_suit, not target, dst))
    return min(fits)[2] + 1 if fits else None


@on_random_games
def test_checked_moves_agree_with_legal_moves(spec: GameSpec) -> None:
    """Game.move accepts exactly the moves legal_moves lists (R7-R9), and an
    auto-move goes where R11 says."""
    level, deal, plan = spec
    rules = LEVELS[level]
    game = Game(rules, deal)
    for outcome in drive(game, plan):
        tried, state = outcome.tried, outcome.before.state
        if tried.type != "move" or outcome.before.won:
            continue
        assert tried.card is not None
        legal = {
            (state.reserve[start] if src < 0 else state.cols[src][start], dst + 1)
            for src, start, dst in legal_moves(state, rules)
        }
        if tried.to is None:
            to = auto_destination(state, rules, tried.card)
            if to is None:
                assert outcome.error is not None
                assert outcome.error.code == "no_destination"
            else:
                assert outcome.error is None, outcome.error.code
                assert outcome.events is not None
                assert outcome.events[0].to_dict()["to"] == to
        elif (tried.card, tried.to) in legal:
            assert outcome.error is None, outcome.error.code
        else:
            assert outcome.error is not None, "an illegal move was accepted"


@on_random_games
def test_every_action_reports_its_score_and_counters(spec: GameSpec) -> None:
    """engine.events: an accepted action ends with ``score`` (then ``won`` or ``stuck``)."""
    level, deal, plan = spec
    game = Game(LEVELS[level], deal)
    for outcome in drive(game, plan):
        if outcome.events is None:
            continue
        types = [event.to_dict()["type"] for event in outcome.events]
        tail = ["score", "won"] if game.won else ["score", "stuck"] if game.stuck else ["score"]
        if outcome.tried.type == "hint":  # the position did not change: "stuck" is optional
            assert types[-len(tail) :] == tail or types[-1] == "score"
        else:
            assert types[-len(tail) :] == tail
        assert types.count("score") == 1
        score = outcome.events[types.index("score")].to_dict()
        assert score == {
            "type": "score",
            "score": game.score(outcome.t),
            "moves": game.moves,
            "undos": game.undos,
            "hints": game.hints,
            "earned": game.earned,
            "undo_depth": game.undo_depth,
            "stuck": game.stuck,
        }


def assert_same_game(copy: Game, game: Game) -> None:
    assert copy.state == game.state
    assert copy.score() == game.score()
    assert copy.score(game.time + 61_000) == game.score(game.time + 61_000)
    assert copy.results() == game.results()
    assert (copy.moves, copy.undos, copy.hints) == (game.moves, game.undos, game.hints)
    assert copy.earned == game.earned
    assert copy.won_at == game.won_at
    assert copy.undo_depth == game.undo_depth
    assert copy.stuck == game.stuck
    assert copy.actions == game.actions


@on_random_games
def test_replay_export_then_rebuild_gives_the_same_game(spec: GameSpec) -> None:
    level, deal, plan = spec
    game = Game(LEVELS[level], deal)
    for _outcome in drive(game, plan):
        pass  # play the whole plan
    doc = export_replay(game)
    assert_same_game(rebuild(parse_replay(doc)), game)
    through_json = json.loads(json.dumps(doc))
    assert through_json == doc
    copy = rebuild(parse_replay(through_json))
    assert_same_game(copy, game)
    assert export_replay(copy) == doc


@on_random_games
def test_rejected_actions_change_nothing(spec: GameSpec) -> None:
    """R10/R15: a RuleViolation leaves state, counters, score and actions untouched."""
    level, deal, plan = spec
    game = Game(LEVELS[level], deal)
    for outcome in drive(game, plan):
        if outcome.error is None:
            continue
        assert snapshot(game, outcome.t) == outcome.before, outcome.error.code


@on_random_games
def test_unchecked_apply_then_undo_restores_every_position(spec: GameSpec) -> None:
    """The solver's fast path: apply_move / apply_deal then undo is the identity."""
    level, deal, plan = spec
    rules = LEVELS[level]
    game = Game(LEVELS[level], deal)
    assert_apply_undo_is_identity(game.state, rules)
    for _outcome in drive(game, plan):
        assert_apply_undo_is_identity(game.state, rules)


def assert_apply_undo_is_identity(state: State, rules: Rules) -> None:
    work = state.copy()
    original, key = work.copy(), work.key()
    for move in legal_moves(work, rules):
        record = apply_move(work, *move)
        assert work != original, move
        assert_conserved(work)
        undo(work, record)
        assert work == original, move
        assert work.key() == key, move
    if work.stock:
        record = apply_deal(work)
        assert not work.stock
        assert_conserved(work)
        undo(work, record)
        assert work == original
        assert work.key() == key
    assert state == original


@on_random_games
def test_stuck_flag_follows_r16(spec: GameSpec) -> None:
    """R16: stuck exactly when the stock is gone and no useful move is left."""
    level, deal, plan = spec
    rules = LEVELS[level]
    game = Game(rules, deal)
    for _outcome in drive(game, plan):
        if game.won:
            break
        state = game.state
        useful = legal_moves(state, rules, useful_only=True)
        assert game.stuck == (not state.stock and not useful)
        assert public_view(game)["stuck"] == game.stuck


def test_undo_limit_keeps_the_last_100_moves() -> None:
    """R18's own example: after 150 moves, 60 undos and 30 more moves, 70 undos remain."""
    game = Game(LEVELS["relaxed"], 1)
    outcomes = list(drive(game, _UNDO_LIMIT_PLAN))
    assert all(outcome.error is None for outcome in outcomes[:240])
    assert game.moves == 180
    assert [outcome.error is None for outcome in outcomes[240:]] == [True] * 70 + [False] * 5
    assert game.undo_depth == 0
    assert game.undos == 130


@on_random_games
def test_an_action_on_a_fork_leaves_the_game_as_it_was(spec: GameSpec) -> None:
    """``fork()`` is independent: the server tries each action on one (see server.service)."""
    level, deal, plan = spec
    game = Game(LEVELS[level], deal)
    for outcome in drive(game, plan):
        if outcome.events is None:
            continue
        # Re-play the same action on a fork of the game as it was before it.
        before = Game(LEVELS[level], deal)
        for action in game.actions[:-1]:
            before.play(action)
        unchanged = snapshot(before, outcome.before.at)
        fork = before.fork()
        fork.play(game.actions[-1])
        assert snapshot(before, outcome.before.at) == unchanged
        assert_same_game(fork, game)
