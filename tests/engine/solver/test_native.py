"""The compiled search (native.c) is the same search as the pure-Python reference.

On a node budget (no clock) both must give the same verdict, the same node
count and the same winning line, from deals and from positions in the middle
of games, on every level, with and without pruning. Any difference in move
order, pruning or position equality shows up as a different node count long
before it could change a verdict.
"""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from engine.deal import deal_layout
from engine.game import Game
from engine.levels import LEVELS, Rules
from engine.moves import legal_moves
from engine.solver import native, solve
from engine.solver.prune import is_blocked_any_suit
from engine.state import State, apply_deal, apply_move
from tests.engine.solver.test_soundness import replays_to_a_win, small_position

REQUIRED = os.environ.get("SCORPION_REQUIRE_NATIVE", "") not in ("", "0")

if not native.available():
    if REQUIRED:
        raise RuntimeError(f"SCORPION_REQUIRE_NATIVE is set but {native.LIBRARY} is not built")
    pytest.skip(
        f"the compiled solver is not built ({native.LIBRARY}; `make native`)",
        allow_module_level=True,
    )


def same_search(state: State, rules: Rules, max_nodes: int, prune: bool = True) -> str:
    """Run both searches on a node budget; assert they agree; the verdict."""
    reference = solve(state, rules, budget_ms=None, max_nodes=max_nodes, prune=prune, native=False)
    compiled = solve(state, rules, budget_ms=None, max_nodes=max_nodes, prune=prune, native=True)
    context = (rules.name, max_nodes, prune, state)
    assert (compiled.result, compiled.nodes) == (reference.result, reference.nodes), context
    assert compiled.actions == reference.actions, context
    return compiled.result


def mid_game(rules: Rules, number: int, rng: random.Random) -> State:
    """The position after 5 to 30 random legal moves (and maybe the deal) of deal ``number``."""
    state = State.from_deal(deal_layout(rules.layout, number))
    for _ in range(rng.randrange(5, 30)):
        moves = legal_moves(state, rules)
        if state.stock and (not moves or rng.random() < 0.1):
            apply_deal(state)
        elif not moves or len(state.found) == 4:
            break
        else:
            apply_move(state, *rng.choice(moves))
    return state


@pytest.mark.parametrize("level", list(LEVELS))
def test_same_verdicts_nodes_and_lines_from_deals(level: str) -> None:
    rules = LEVELS[level]
    seen = set()
    for number in range(1, 13):
        state = State.from_deal(deal_layout(rules.layout, number))
        seen.add(same_search(state, rules, 3_000))
        same_search(state, rules, 300, prune=False)
    assert seen - {"unknown"}, "some deal should be decided within the budget"


@pytest.mark.parametrize("level", list(LEVELS))
def test_same_search_from_positions_in_the_middle_of_games(level: str) -> None:
    rules = LEVELS[level]
    rng = random.Random(f"native-{level}")
    for number in range(100, 110):
        same_search(mid_game(rules, number, rng), rules, 2_000)


@pytest.mark.parametrize("level", list(LEVELS))
def test_same_search_on_small_positions_with_sets_to_remove(level: str) -> None:
    rules = LEVELS[level]
    rng = random.Random(f"native-small-{level}")
    results = [same_search(small_position(rng, rules), rules, 5_000) for _ in range(25)]
    assert "won" in results


def test_a_compiled_win_replays_through_the_checked_engine() -> None:
    rules = LEVELS["medium"]
    game = Game(rules, 7)
    verdict = solve(game.state, rules, budget_ms=None, max_nodes=100_000, native=True)
    assert verdict.result == "won"
    assert replays_to_a_win(game.state, rules, verdict.actions)


def test_budgets_bound_the_compiled_search() -> None:
    rules = LEVELS["relaxed"]
    state = State.from_deal(deal_layout(rules.layout, 3))
    assert solve(state, rules, budget_ms=0, native=True).result == "unknown"
    assert solve(state, rules, budget_ms=None, max_nodes=10, native=True).nodes == 10
    capped = solve(state, rules, budget_ms=None, max_positions=50, native=True)
    assert capped.result == "unknown" and capped.nodes < 50


def test_pure_python_can_be_asked_for(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SCORPION_PURE_PYTHON", "1")
    assert not native.available()
    monkeypatch.setenv("SCORPION_PURE_PYTHON", "0")
    assert native.available()


def test_a_position_out_of_range_is_rejected_not_searched() -> None:
    bad = State([[60], [1, 2]], [0, 0])  # no card 60
    with pytest.raises(ValueError, match="rejected the position"):
        solve(bad, LEVELS["hard"], native=True)
    hidden_top = State([[1, 2]], [2])  # more face-down cards than cards
    with pytest.raises(ValueError, match="rejected the position"):
        solve(hidden_top, LEVELS["hard"], native=True)


def test_an_unloadable_library_falls_back_with_a_warning(tmp_path: Path) -> None:
    broken = tmp_path / "_native.so"
    broken.write_bytes(b"not a shared library")
    with pytest.warns(RuntimeWarning, match="runs in pure Python"):
        assert native.load(broken) is None
    assert native.load(tmp_path / "missing.so") is None


def test_same_search_where_rule_9_prunes_on_relaxed() -> None:
    """Relaxed positions where the any-suit derivation (rule 9) prunes: at the root
    (lost with no node) and inside the search, both searches must agree."""
    rules = LEVELS["relaxed"]
    rng = random.Random("native-rule-9")
    at_root = inside = 0
    for _ in range(60):
        state = small_position(rng, rules)
        if is_blocked_any_suit(state):
            at_root += 1
            assert same_search(state, rules, 2_000) == "lost"
        elif same_search(state, rules, 2_000) == "lost":
            inside += 1
    assert at_root and inside, (at_root, inside)
