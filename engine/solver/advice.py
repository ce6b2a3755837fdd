"""What the solver tells a player: hints (R20) and "can this still be won?".

Both take the true position (face-down cards included: the server knows them)
and a time budget, and never change the position they are given.

- ``solver_hint``: the first action of a win the solver finds within the
  budget; otherwise the one-move-ahead heuristic of ``engine.hints``. Either
  way the hint names a face-up card (or the stock deal), never a hidden one.
- ``proved_lost``: True only when the solver proved that no sequence of
  actions wins from here. That is stronger than the dead end of R16 (no
  useful move at all) and is reported separately.
"""

from __future__ import annotations

from engine.events import Hinted
from engine.hints import suggest
from engine.levels import Rules
from engine.solver.search import solve
from engine.state import State

__all__ = ["proved_lost", "solver_hint"]

HINT_BUDGET_MS = 300
LOST_BUDGET_MS = 300


def solver_hint(state: State, rules: Rules, budget_ms: float = HINT_BUDGET_MS) -> Hinted:
    """The best action for ``state``: a winning line's first step, else the heuristic."""
    verdict = solve(state.copy(), rules, budget_ms=budget_ms)
    if verdict.result == "won" and verdict.actions:
        first = verdict.actions[0]
        if first.type == "deal":
            return Hinted("deal")
        return Hinted("move", first.card, first.to)
    return suggest(state, rules)


def proved_lost(state: State, rules: Rules, budget_ms: float = LOST_BUDGET_MS) -> bool:
    """Whether the solver proves, within the budget, that ``state`` cannot be won."""
    return solve(state.copy(), rules, budget_ms=budget_ms).result == "lost"
