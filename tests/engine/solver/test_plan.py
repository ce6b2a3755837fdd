"""Hints that are a plan (engine.solver.plan): followed, they win without repeating."""

from __future__ import annotations

import pickle
from functools import cache

import pytest

from engine.cards import parse_card
from engine.deal import deal_layout
from engine.events import Hinted
from engine.game import Action, Game
from engine.levels import LEVELS, Rules
from engine.moves import legal_moves
from engine.solver import plan, solve
from engine.solver.plan import Advice, advise, play
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


def test_a_plan_is_not_followed_from_elsewhere() -> None:
    rules = LEVELS["medium"]
    game = Game(rules, won_deals("medium")[0])
    plan = advise(game.state, rules, budget_ms=SEARCH_MS)
    assert plan.continues_at(game.state) is False  # not yet played
    state = game.state.copy()
    play(state, plan.line[0])
    assert plan.continues_at(state)


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
    children = {}
    for move in legal_moves(state, rules, useful_only=True):
        record = apply_move(state, *move)
        children[move] = state.key()
        undo(state, record)
    assert len(children) > 2
    keys = list(children.values())
    seen, lost = set(keys[: len(keys) // 2]), set(keys[len(keys) // 2 : -1])
    advice = advise(state, rules, seen=seen, lost=lost, budget_ms=0)
    assert advice.basis in ("heuristic", "plan")
    assert advice.after not in seen | lost
    assert advice.after in (keys[-1], b"") or advice.hint.action == "deal"
    assert lost <= advice.proved_lost


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
    assert (repeats.hint.action, repeats.basis) == ("none", "repeats")
    lost = advise(state, rules, lost=keys, budget_ms=0)
    assert (lost.hint.action, lost.basis) == ("none", "lost")


def test_a_position_proved_lost_says_so() -> None:
    # 5H waits for the 4S on the 6H, the 4S for the 5H on the 5S (hard): lost at once.
    state = State([cards("6H 4S"), cards("5S 5H")], [0, 0], found=[2, 3])
    advice = advise(state, LEVELS["hard"])
    assert (advice.hint.action, advice.basis) == ("none", "lost")
    assert state.key() in advice.proved_lost


def test_nothing_to_do_once_won_or_without_moves() -> None:
    won = State([[], []], [0, 0], found=[0, 1, 2, 3])
    assert advise(won, LEVELS["hard"]).basis == "no_moves"
    stuck = State([cards("AS"), cards("3S")], [0, 0], found=[1, 2, 3])  # nothing can move
    advice = advise(stuck, LEVELS["relaxed"], budget_ms=0)
    assert advice.hint.action == "none" and advice.basis in ("lost", "no_moves")


def test_the_heuristic_deals_only_when_the_rules_allow_it(monkeypatch: pytest.MonkeyPatch) -> None:
    # The one move (9S off its successor onto TH) scores below zero: deal instead,
    # unless the stock may only be dealt when no move is left (R13's option).
    # (The position is lost, cards are missing: no look-ahead may say so.)
    monkeypatch.setattr(plan, "LOOK_AHEAD_NODES", 0)
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
    for action in line[:5]:
        play(later, action)
    advice = advise(state, rules, seen={later.key()}, budget_ms=SEARCH_MS)
    assert advice.basis != "plan" or later.key() not in _positions(state, advice.line)


def _positions(state: State, line: tuple[Action, ...]) -> set[bytes]:
    walk = state.copy()
    keys = set()
    for action in line:
        play(walk, action)
        keys.add(walk.key())
    return keys


def test_play_refuses_what_is_not_a_move_or_a_deal() -> None:
    with pytest.raises(ValueError, match="not a move or a deal"):
        play(shuttle_position(), Hinted("none"))
