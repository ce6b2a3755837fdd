"""Hints that are a plan (engine.solver.plan): followed, they win without repeating.

The planner the server runs for its hints (tests/server/test_advisor.py and
test_hint_player.py play through the server)."""

from __future__ import annotations

import pickle
from functools import cache

import pytest

from engine.cards import parse_card
from engine.deal import deal_layout
from engine.events import Hinted
from engine.game import Action, Game
from engine.levels import LEVELS, Rules
from engine.moves import Move, legal_moves
from engine.solver import solve
from engine.solver.plan import Advice, advise, candidates, is_bare_shuttle, play, shorten
from engine.state import State, apply_move, undo

SEARCH_MS = 20_000  # generous: the first hint of each game must find the win


def cards(text: str) -> list[int]:
    return [parse_card(card) for card in text.split()]


@cache
def won_deals(level: str, count: int = 5) -> tuple[int, ...]:
    """The first deals the solver wins on a small node budget (deterministic)."""
    rules = LEVELS[level]
    found = []
    for number in range(1, 200):
        state = State.from_deal(deal_layout(rules.layout, number))
        if solve(state, rules, budget_ms=None, max_nodes=20_000).result == "won":
            found.append(number)
            if len(found) == count:
                break
    assert found, level
    return tuple(found)


def follow_hints(rules: Rules, game: Game, keep_plan: bool, budget_ms: float = SEARCH_MS) -> int:
    """Play ``game`` by its hints alone until won; the number of hints. Fails on a
    repeated position, a ``none`` hint or too many hints."""
    seen = {game.state.key()}
    advice: Advice | None = None
    for hints in range(1, 3_000):
        advice = advise(
            game.state,
            rules,
            seen=seen,
            plan=advice if keep_plan else None,
            budget_ms=budget_ms,
        )
        hint = advice.hint
        assert hint.action != "none", (advice.basis, game.state)
        game.play(Action(hint.action, hint.card, hint.to))  # the checked engine
        key = game.state.key()
        assert key == advice.after
        assert key not in seen, f"hint {hints} returned to a position already seen"
        seen.add(key)
        if game.won:
            return hints
    raise AssertionError("no win within 3,000 hints")


@pytest.mark.parametrize("level", list(LEVELS))
def test_following_the_plan_wins_every_solver_won_deal_without_repeating(level: str) -> None:
    rules = LEVELS[level]
    for number in won_deals(level):
        game = Game(rules, number)
        first = advise(game.state, rules, budget_ms=SEARCH_MS)
        assert first.basis == "plan" and first.line
        assert follow_hints(rules, game, keep_plan=True) == len(first.line)


@pytest.mark.parametrize("level", list(LEVELS))
def test_asking_afresh_each_time_also_wins_without_repeating(level: str) -> None:
    """Without the plan passed back each hint searches again; ``seen`` keeps the
    new lines off the positions already played."""
    rules = LEVELS[level]
    for number in won_deals(level):
        follow_hints(rules, Game(rules, number), keep_plan=False)


def test_a_plan_is_followed_only_along_its_line() -> None:
    rules = LEVELS["medium"]
    game = Game(rules, won_deals("medium")[0])
    plan = advise(game.state, rules, budget_ms=SEARCH_MS)
    assert plan.continued(game.state) == plan  # asked again before playing: the same step
    state = game.state.copy()
    play(state, plan.hint)
    step = plan.continued(state)
    assert step is not None and step.hint == plan.line[1][1] and step.line == plan.line[1:]
    assert advise(state, rules, plan=plan, budget_ms=0) == step  # followed, not searched
    elsewhere = game.state.copy()
    off_line = next(h for h, child in candidates(elsewhere, rules) if child.key() != plan.after)
    play(elsewhere, off_line)
    assert plan.continued(elsewhere) is None


# Every card face up, the stock undealt, a king alone with two empty columns
# beside it: the old hint moved the king between them for ever.
def shuttle_position() -> State:
    cols = [
        cards("KS"),
        [],
        [],
        cards("KH QH JH TH 9H 8H 7H 6H 5H 4H 3H"),
        cards("QS JS TS 9S 8S 7S 6S 5S 4S 3S 2S"),
        [],
        [],
    ]
    return State(cols, [0] * 7, stock=cards("AS 2H AH"), found=[2, 3])


def test_the_heuristic_never_shuttles_and_deals_instead() -> None:
    rules = LEVELS["hard"]
    state = shuttle_position()
    seen = {state.key()}
    advice = advise(state, rules, seen=seen, budget_ms=0)
    assert advice.hint.action != "none"
    assert not (advice.hint.card == parse_card("KS") and advice.hint.to in (2, 3, 6, 7))
    game = Game(rules, 1)
    game.state = state
    follow_hints(rules, game, keep_plan=True, budget_ms=0)


def test_the_heuristic_avoids_seen_and_lost_positions() -> None:
    rules = LEVELS["relaxed"]
    state = State.from_deal(deal_layout(rules.layout, 15))
    options = candidates(state, rules)
    assert len(options) > 2
    keys = [child.key() for _hint, child in options]
    seen, lost = set(keys[: len(keys) // 2]), set(keys[len(keys) // 2 : -1])
    advice = advise(state, rules, seen=seen, lost=lost, budget_ms=0)
    assert advice.basis == "heuristic"
    assert (advice.hint, advice.after) == (options[-1][0], keys[-1])
    assert advice.proved_lost == lost  # met on the way: handed back to be remembered
    searched = advise(state, rules, seen=seen, lost=lost, budget_ms=SEARCH_MS)
    assert searched.after not in seen | lost
    assert searched.basis == "plan" or searched.proved_lost >= lost


def test_every_move_seen_gives_none_with_a_reason() -> None:
    rules = LEVELS["relaxed"]
    state = State.from_deal(deal_layout(rules.layout, 15))
    state.stock = []  # no deal to fall back on
    keys = set()
    for move in legal_moves(state, rules, useful_only=True):
        record = apply_move(state, *move)
        keys.add(state.key())
        undo(state, record)
    repeats = advise(state, rules, seen=keys, budget_ms=0)
    assert repeats.hint == Hinted("none", reason="seen") and repeats.basis == "seen"
    lost = advise(state, rules, lost=keys, budget_ms=0)
    assert lost.hint == candidates(state, rules)[0][0] and lost.basis == "heuristic"
    assert state.key() in lost.proved_lost  # every move loses: so does the position
    both = advise(state, rules, seen=keys, lost=keys, budget_ms=0)
    assert both.hint == Hinted("none", reason="seen")


def test_a_position_proved_lost_still_names_a_move() -> None:
    """R20 (seed 003: a hint shows an available move): hard deal 1 is proved lost at
    the deal, and its hint is still the heuristic's first move."""
    state = Game(LEVELS["hard"], 1).state
    options = candidates(state, LEVELS["hard"])
    advice = advise(state, LEVELS["hard"], seen={state.key()}, budget_ms=2000)
    assert advice.hint == options[0][0] and advice.basis == "heuristic"
    assert state.key() in advice.proved_lost
    # 5H waits for the 4S on the 6H, the 4S for the 5H on the 5S (hard): nothing moves.
    stuck = State([cards("6H 4S"), cards("5S 5H")], [0, 0], found=[2, 3])
    advice = advise(stuck, LEVELS["hard"])
    assert advice.hint == Hinted("none", reason="stuck") and stuck.key() in advice.proved_lost


def test_nothing_to_do_once_won_or_without_moves() -> None:
    won = State([[], []], [0, 0], found=[0, 1, 2, 3])
    advice = advise(won, LEVELS["hard"])
    assert (advice.hint, advice.basis, advice.proved_lost) == (Hinted("none"), "won", frozenset())
    stuck = State([cards("AS"), cards("3S")], [0, 0], found=[1, 2, 3])  # nothing can move
    advice = advise(stuck, LEVELS["relaxed"], budget_ms=0)
    assert advice.hint == Hinted("none", reason="stuck") and stuck.key() in advice.proved_lost


def test_the_heuristic_deals_only_when_the_rules_allow_it() -> None:
    # The one move (9S off its successor onto TH) scores below zero: deal instead,
    # unless the stock may only be dealt when no move is left (R13's option).
    # (The position is lost, cards are missing: no search may say so.)
    state = State([cards("TS 9S"), cards("TH"), [], [], [], [], []], [0] * 7, cards("5D 6D 7D"))
    rules = LEVELS["relaxed"]
    assert advise(state, rules, budget_ms=0).hint.action == "deal"
    strict = rules.with_options(stock_only_when_stuck=True)
    advice = advise(state, strict, budget_ms=0)
    assert (advice.hint.action, advice.hint.card) == ("move", parse_card("9S"))


def test_advice_crosses_process_boundaries() -> None:
    """The server computes hints in worker processes: advice must pickle."""
    rules = LEVELS["hard"]
    advice = advise(Game(rules, won_deals("hard")[0]).state, rules, budget_ms=SEARCH_MS)
    assert pickle.loads(pickle.dumps(advice)) == advice


def test_a_plan_through_a_seen_position_is_not_used() -> None:
    rules = LEVELS["hard"]
    state = Game(rules, won_deals("hard")[0]).state
    line = advise(state, rules, budget_ms=SEARCH_MS).line
    later = state.copy()
    for _key, step in line[:5]:
        play(later, step)
    advice = advise(state, rules, seen={later.key()}, budget_ms=SEARCH_MS)
    assert advice.basis != "plan" or later.key() not in _positions(state, advice.line)


def _positions(state: State, line: tuple[tuple[bytes, Hinted], ...]) -> set[bytes]:
    walk = state.copy()
    keys = set()
    for _key, step in line:
        play(walk, step)
        keys.add(walk.key())
    return keys


def test_play_refuses_what_is_not_a_move_or_a_deal() -> None:
    with pytest.raises(ValueError, match="not a move or a deal"):
        play(shuttle_position(), Hinted("none"))


def test_a_won_line_is_shortened_before_it_is_served() -> None:
    # Relaxed deal 22: the solver's depth-first line is 486 actions; 122 of them win.
    rules = LEVELS["relaxed"]
    state = Game(rules, 22).state
    raw = solve(state.copy(), rules, budget_ms=SEARCH_MS).actions
    advice = advise(state, rules, seen={state.key()}, budget_ms=SEARCH_MS)
    assert advice.basis == "plan" and advice.line == shorten(state, rules, raw)
    assert len(advice.line) < len(raw) // 2
    game = Game(rules, 22)
    keys = []
    for key, step in advice.line:  # each step is played from the position it names
        assert game.state.key() == key
        keys.append(key)
        game.play(Action(step.action, step.card, step.to))
    assert game.won and len(set(keys)) == len(keys)


def test_shorten_keeps_a_line_that_has_no_detour() -> None:
    rules = LEVELS["hard"]
    state = Game(rules, won_deals("hard")[0]).state
    line = shorten(state, rules, solve(state.copy(), rules, budget_ms=SEARCH_MS).actions)
    assert shorten(state, rules, [step for _key, step in line]) == line


def whole_column_moves(state: State, rules: Rules) -> list[Move]:
    return [m for m in legal_moves(state, rules) if m.start == 0 and not state.cols[m.dst]]


def test_a_whole_column_into_an_empty_one_is_a_bare_shuttle_unless_the_deal_lands_differently() -> (
    None
):
    rules = LEVELS["medium"]
    cols = [[], cards("KS"), [], [], cards("QH"), [], cards("7D")]
    before = State(cols, [0] * 7, stock=cards("2C 3C 4C"))
    moves = whole_column_moves(before, rules)
    shuttles = {(m.src, m.dst): is_bare_shuttle(before, m) for m in moves}
    assert shuttles[(1, 0)] is False  # the deal covers columns 1 to 3: it lands differently
    assert shuttles[(4, 3)] is True  # columns 5 and 4 get no stock card: nothing changes
    assert shuttles[(6, 0)] is False
    hinted = {(h.card, h.to) for h, _child in candidates(before, rules)}
    assert (parse_card("KS"), 1) in hinted and (parse_card("QH"), 4) not in hinted
    after = State(cols, [0] * 7)
    assert all(is_bare_shuttle(after, m) for m in whole_column_moves(after, rules))
    hinted = {(h.card, h.to) for h, _child in candidates(after, rules)}
    assert (parse_card("KS"), 1) not in hinted and (parse_card("QH"), 4) not in hinted


def test_candidates_lead_where_they_say() -> None:
    rules = LEVELS["medium"]
    for hinted, child in candidates(Game(rules, 3).state, rules):
        game = Game(rules, 3)
        game.play(Action(hinted.action, hinted.card, hinted.to))
        assert game.state.key() == child.key()


def test_no_deal_among_the_candidates_while_the_rules_want_moves_first() -> None:
    rules = LEVELS["relaxed"]
    state = Game(rules, 3).state
    assert any(h.action == "deal" for h, _child in candidates(state, rules))
    strict = rules.with_options(stock_only_when_stuck=True)
    assert not any(h.action == "deal" for h, _child in candidates(state, strict))
