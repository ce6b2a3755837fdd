"""Solver work off the event loop: hints and lost-position checks in worker processes.

A search may take its whole budget of CPU; run on the event loop it would
stall every other player, and in a thread it would still hold the GIL. So
``SolverPool`` sends a copy of the position and the (frozen, picklable)
rules to a ``ProcessPoolExecutor`` and awaits the answer. ``pending`` counts
searches in flight so optional work (the lost-position check) can be
skipped when the workers are busy. If the pool breaks, hints fall back to
the engine's one-move heuristic, computed in-process (it is cheap).
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import random
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

from engine.events import Hinted
from engine.hints import suggest
from engine.levels import Rules
from engine.solver.advice import proved_lost, solver_hint
from engine.solver.easy import find_winnable
from engine.state import State

__all__ = ["SolverPool"]

log = logging.getLogger(__name__)


class SolverPool:
    """A process pool running the engine's solver advice."""

    def __init__(self, workers: int, hint_budget_ms: int, lost_budget_ms: int) -> None:
        context = multiprocessing.get_context("forkserver")
        self._pool = ProcessPoolExecutor(max_workers=max(1, workers), mp_context=context)
        self.workers = max(1, workers)
        self.hint_budget_ms = hint_budget_ms
        self.lost_budget_ms = lost_budget_ms
        self.pending = 0
        self.broken = False  # the pool failed; hints fall back to the heuristic

    @property
    def busy(self) -> bool:
        return self.pending >= self.workers

    async def hint(self, state: State, rules: Rules) -> Hinted:
        """The solver's hint for ``state``; the heuristic if the pool fails."""
        loop = asyncio.get_running_loop()
        self.pending += 1
        try:
            return await loop.run_in_executor(
                self._pool, solver_hint, state.copy(), rules, self.hint_budget_ms
            )
        except (BrokenProcessPool, OSError):
            self.broken = True
            log.exception("solver pool failed; using the heuristic hint")
            return suggest(state, rules)
        finally:
            self.pending -= 1

    async def lost(self, state: State, rules: Rules) -> bool:
        """Whether the solver proves ``state`` lost within the budget."""
        loop = asyncio.get_running_loop()
        self.pending += 1
        try:
            return await loop.run_in_executor(
                self._pool, proved_lost, state.copy(), rules, self.lost_budget_ms
            )
        except (BrokenProcessPool, OSError):
            self.broken = True
            log.exception("solver pool failed; skipping the lost-position check")
            return False
        finally:
            self.pending -= 1

    async def find_easy(self, seed: int, budget_ms: int) -> int | None:
        """A random deal number (from ``seed``) the solver wins under easy rules, or None."""
        loop = asyncio.get_running_loop()
        self.pending += 1
        try:
            return await loop.run_in_executor(self._pool, _find_easy, seed, budget_ms)
        except (BrokenProcessPool, OSError):
            self.broken = True
            log.exception("solver pool failed; no easy deal found")
            return None
        finally:
            self.pending -= 1

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


def _find_easy(seed: int, budget_ms: int) -> int | None:
    """In a worker: one attempt at a winnable easy deal."""
    return find_winnable(random.Random(seed), budget_ms, attempts=1)
