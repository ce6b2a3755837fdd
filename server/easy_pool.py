"""The easy level's pool of winnable deals, grown in the background while the server runs.

Seed 004's easy level offers only deals the computer has already solved, and
starting a game must never wait for a search. The pool starts from the list
shipped with the engine (``engine.solver.easy``) plus every deal this server
(or another node on the same database) found before (``Store.easy_deals``).
``EasyDealFinder`` then keeps trying fresh random deal numbers in the solver
workers, one at a time and only while no hint or check is waiting for them,
until the pool holds ``target`` deals; each deal it wins is stored first,
then offered. New easy games draw from the pool at once, preferring deals
the player has not had before.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from typing import Final

from engine.solver.easy import WinnableDeals
from server.store import Store, StoreError
from server.workers import SolverPool

__all__ = ["EasyDealFinder"]

LEVEL: Final = "easy"
FIND_BUDGET_MS: Final = 300  # per attempt: most winnable easy deals are won in a few ms
IDLE_S: Final = 1.0  # how long to wait while the workers are busy

log = logging.getLogger(__name__)


class EasyDealFinder:
    """Fills ``pool`` up to ``target`` deals (module docstring)."""

    def __init__(
        self,
        store: Store,
        solver: SolverPool,
        pool: WinnableDeals,
        *,
        target: int,
        rng: random.Random | None = None,
    ) -> None:
        self.store = store
        self.solver = solver
        self.pool = pool
        self.target = target
        self.found = 0  # deals this finder added
        self._rng = rng if rng is not None else random.SystemRandom()
        self._task: asyncio.Task[None] | None = None

    async def load(self) -> None:
        """Add the deals found before (by any node) to the pool."""
        for deal in await self.store.easy_deals(LEVEL):
            self.pool.add(deal)

    def start(self) -> None:
        if len(self.pool) < self.target and self._task is None:
            self._task = asyncio.create_task(self._run(), name="easy-deal-finder")

    async def wait(self) -> None:
        """Until the pool is full (for tests)."""
        if self._task is not None:
            await asyncio.shield(self._task)

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def _run(self) -> None:
        while len(self.pool) < self.target:
            if self.solver.broken:
                log.warning("the solver pool failed: the easy pool stops growing")
                return
            if self.solver.pending:
                await asyncio.sleep(IDLE_S)  # players' hints and checks come first
                continue
            deal = await self.solver.find_easy(self._rng.getrandbits(64), FIND_BUDGET_MS)
            if deal is None or deal in self.pool:
                continue
            try:
                await self.store.add_easy_deal(LEVEL, deal)
            except StoreError:
                log.warning("could not keep easy deal; retrying later", exc_info=True)
                await asyncio.sleep(IDLE_S)
                continue
            self.pool.add(deal)
            self.found += 1
        log.info("the easy pool holds %d winnable deals", len(self.pool))
