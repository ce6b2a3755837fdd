"""The solver's pruning rules are sound: checked against a search that uses none of them.

Small random positions (two or three suits still in play, the others already
removed) keep the unpruned search exhaustive. On every level: each ``lost`` of
the pruned search must not be ``won`` without pruning, and each ``won`` must
replay to a win through the checked engine.
"""

from __future__ import annotations

import os
import random

import pytest

from engine.cards import parse_card
from engine.game import Game
from engine.levels import LEVELS, Rules
from engine.solver import native, solve
from engine.solver.prune import is_blocked_any_suit
from engine.state import State

# More samples for a deeper check: SOUNDNESS_SAMPLES=1000 pytest tests/engine/solver
SAMPLES = int(os.environ.get("SOUNDNESS_SAMPLES", "40"))


# How far the unpruned search may go (any-suit positions that need more are skipped:
# exhausting them takes the pure-Python search seconds each).
REFERENCE_NODES = {False: 30_000, True: 10_000}

# Per level: columns in use, face-down counts to draw from, verdicts that must occur.
# Any-card levels get more face-down cards (else nearly every position is won);
# any-suit building branches so much that only small tableaus stay exhaustive, and
# it needs many face-down cards for some positions to be lost.
SHAPES: dict[str, tuple[int | None, tuple[int, ...], set[str]]] = {
    "easy": (None, (1, 2, 3, 4), {"won", "lost"}),
    "medium": (None, (1, 2, 3, 4), {"won", "lost"}),
    "hard": (None, (0, 1, 2, 3), {"won", "lost"}),
    "classic": (None, (0, 1, 2, 3), {"won", "lost"}),
    "relaxed": (6, (2, 3, 4), {"won", "lost"}),
    "three-blind-mice": (None, (0, 1, 2, 3), {"won", "lost"}),
}


def small_position(rng: random.Random, rules: Rules) -> State:
    """A random position with two suits on the table (the others removed)."""
    columns, downs, _must_see = SHAPES[rules.name]
    suits = rng.sample(range(4), 2)
    cards = [suit * 13 + rank for suit in suits for rank in range(13)]
    rng.shuffle(cards)
    ncols = 10 if rules.layout == "three-blind-mice" else 7
    stock = [cards.pop() for _ in range(3)] if rules.layout == "scorpion" else []
    reserve = [cards.pop() for _ in range(2)] if rules.layout == "three-blind-mice" else []
    cols: list[list[int]] = [[] for _ in range(ncols)]
    used = columns or ncols - rng.randrange(0, 2)
    for index, card in enumerate(cards):
        cols[index % used].append(card)
    down = [min(len(col) - 1, rng.choice(downs)) if col else 0 for col in cols]
    found = [suit for suit in range(4) if suit not in suits]
    return State(cols, down, stock, reserve, found)


def replays_to_a_win(state: State, rules: Rules, actions: tuple[object, ...]) -> bool:
    game = Game(rules, 1)
    game.state = state.copy()
    for action in actions:
        game.play(action)  # type: ignore[arg-type]
    return game.won


@pytest.mark.parametrize("search", ["python", "native"])
@pytest.mark.parametrize("level", list(LEVELS))
def test_pruned_verdicts_agree_with_exhaustive_search(level: str, search: str) -> None:
    """Both the pure-Python search and the compiled one (when built)."""
    if search == "native" and not native.available():
        pytest.skip(f"the compiled solver is not built ({native.LIBRARY})")
    compiled = search == "native"
    rules = LEVELS[level]
    rng = random.Random(f"soundness-{level}")
    checked = {"won": 0, "lost": 0}
    # The pure-Python reference search took minutes of the suite: with the compiled
    # search built, it checks the pruning at full size, and the equivalence tests
    # (test_native.py) hold the two searches to the same verdicts and lines; the Python
    # one then checks a third as many positions.
    samples = SAMPLES if compiled or not native.available() else max(1, SAMPLES // 3)
    for _ in range(samples):
        state = small_position(rng, rules)
        before = state.copy()
        pruned = solve(state, rules, budget_ms=None, max_nodes=5_000, native=compiled)
        assert state == before, "the solver must leave the position as it found it"
        if pruned.result == "unknown":
            continue
        reference = solve(
            state,
            rules,
            budget_ms=None,
            max_nodes=REFERENCE_NODES[rules.any_suit],
            prune=False,
            native=compiled,
        )
        if reference.result == "unknown":
            continue
        assert pruned.result == reference.result, (level, state)
        if pruned.result == "won":
            assert replays_to_a_win(state, rules, pruned.actions)
        checked[pruned.result] += 1
    must_see = SHAPES[level][2] or {"won"}
    assert all(checked[result] for result in must_see), checked


def test_building_onto_a_successor_that_must_still_move_is_not_forced() -> None:
    """The position that disproved "every build is safe once the stock is dealt".

    Moving 3S onto 4S here loses: the 2S group then lands on 3S with the 5S in
    it, above the 4S that must reach the 5S. The solver must still find the win.
    """
    cols = [
        "4C QC 2S 5S JC AC 8C 7C 6C 5C 2C JS TS 3S",
        "6S 3C 4S",
        "9S TC AS QS",
        "",
        "KS",
        "9C",
        "KC 8S 7S",
    ]
    state = State(
        [[parse_card(card) for card in col.split()] for col in cols],
        [0, 2, 0, 0, 0, 0, 0],
        found=[1, 2],
    )
    verdict = solve(state, LEVELS["hard"], budget_ms=None, max_nodes=200_000)
    assert verdict.result == "won"
    assert replays_to_a_win(state, LEVELS["hard"], verdict.actions)


@pytest.mark.parametrize("search", ["python", "native"])
def test_positions_rule_9_calls_blocked_are_never_won(search: str) -> None:
    """Rule 9 (``is_blocked_any_suit``) on its own: whenever it calls a small relaxed
    position blocked, a search without pruning finds no win there."""
    if search == "native" and not native.available():
        pytest.skip(f"the compiled solver is not built ({native.LIBRARY})")
    rules = LEVELS["relaxed"]
    rng = random.Random("soundness-rule-9")
    confirmed = 0
    for _ in range(SAMPLES * 2):
        state = small_position(rng, rules)
        if not is_blocked_any_suit(state):
            continue
        reference = solve(
            state, rules, budget_ms=None, max_nodes=10_000, prune=False, native=search == "native"
        )
        assert reference.result != "won", state
        confirmed += reference.result == "lost"
    assert confirmed, "some blocked position should be confirmed lost"
