"""What the solver tells a player about a position: "can this still be won?".

``proved_lost`` takes the true position (face-down cards included: the server
knows them) and a time budget, and never changes the position it is given. It
is True only when the solver proved that no sequence of actions wins from
here. That is stronger than the dead end of R16 (no useful move at all) and is
reported separately. Hints (R20) come from ``engine.solver.plan.advise``.
"""

from __future__ import annotations

from engine.levels import Rules
from engine.solver.search import solve
from engine.state import State

__all__ = ["proved_lost"]

LOST_BUDGET_MS = 300


def proved_lost(state: State, rules: Rules, budget_ms: float = LOST_BUDGET_MS) -> bool:
    """Whether the solver proves, within the budget, that ``state`` cannot be won."""
    return solve(state.copy(), rules, budget_ms=budget_ms).result == "lost"
