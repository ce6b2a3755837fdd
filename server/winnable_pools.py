"""Winnable deals for every level, grown in the background while the server runs.

Theory of operation
-------------------
``WinnablePools`` holds, per level, deal numbers the solver has won under
that level's rules. Easy deals only such deals (seed 004); every other level
deals one on request (``new_game`` with ``winnable: true``). Each deal is
dealt to one game only: it leaves the pool, and the database's pool too, so
no other node deals it (``Store.claim_easy_deal``). A game's number is shown
once it ends (PROTOCOL.md section 7), and a player who collected the pool's
numbers that way could otherwise read the face-down cards of anyone dealt
one of them. A deal dealt wakes the finder, which fills the pool again; each
load from the database also drops the deals other nodes dealt. Easy and medium
play the same rules, so they share one pool (easy's, which starts from the
list shipped with the engine, ``engine.solver.easy``); every other level has
a pool of its own, empty until deals are found.

``WinnableDealFinder`` loads what was found before (by any node: the
``easy_deals`` table, by level) and then keeps trying fresh random deal
numbers in the solver workers, one at a time and only while no hint or check
is waiting for them, until each pool holds its target. The pools below their
target take turns, one attempt each, so a level whose deals are rarely won
(relaxed) slows none of the others down. A deal it wins is stored first,
then offered. The target is the cluster's, not each node's: every
``REFRESH_S`` the finder reads the table again, so the deals other nodes on
the same database found count too, and a pool the nodes filled together stops
growing on every node (at most what the nodes find in one such interval more).
With a deal in the pool starting a game never waits for a search; a level
whose pool is still empty searches for one at once, for a few seconds
(``GameService``), else answers ``unavailable`` (retry shortly).
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Final

from engine.levels import LEVEL_NAMES, get_level
from engine.solver.easy import WinnableDeals
from server.logs import detached
from server.loop import stop_task
from server.store import Store, StoreError
from server.workers import SolverPool

__all__ = ["FIND_BUDGET_MS", "DealPool", "WinnableDealFinder", "WinnablePools", "pool_name"]

FIND_BUDGET_MS: Final = 300  # per attempt: most winnable deals are won in a few ms
IDLE_S: Final = 1.0  # how long to wait while the workers are busy
REFRESH_S: Final = 30.0  # how often to count the deals other nodes found
_SHARED: Final = {"medium": "easy"}  # the same rules (easy only adds its choice of deals)

log = logging.getLogger(__name__)


def pool_name(level: str) -> str:
    """The pool that serves ``level``'s winnable deals."""
    return _SHARED.get(level, level)


class DealPool(WinnableDeals):
    """Deal numbers to draw from, at random, like the engine's pool; but it may be empty:
    a server's pools start so, and grow (``draw`` raises IndexError while empty)."""

    def __init__(self, numbers: Iterable[int] = ()) -> None:
        self._numbers = list(numbers)
        self._known = set(self._numbers)


class WinnablePools:
    """Per level, the deals the solver has won under its rules (module docstring)."""

    def __init__(self, easy: WinnableDeals | None = None) -> None:
        # Not the list shipped in the engine: a public list of deals would let a player
        # find their deal among it from the first view (PROTOCOL.md section 7). A
        # server's pools are its own, found at random in 1..2^53 and kept in its database.
        self.easy: WinnableDeals = easy if easy is not None else DealPool()
        self._pools: dict[str, WinnableDeals] = {"easy": self.easy}
        for level in LEVEL_NAMES:
            self._pools.setdefault(pool_name(level), DealPool())
        # Per pool, the deals that are in the database (found by a finder, here or on another
        # node): dealing one takes it out of the database too (``GameService``). The others
        # were given to this server in memory (tests), and are dealt once by this process.
        self._stored: dict[str, set[int]] = {name: set() for name in self._pools}
        self.on_take: Callable[[], None] | None = None  # a deal left a pool (the finder refills)

    @property
    def names(self) -> list[str]:
        """Every pool's name (a level's name)."""
        return list(self._pools)

    def pool(self, level: str) -> WinnableDeals:
        return self._pools[pool_name(level)]

    def count(self, level: str) -> int:
        return len(self.pool(level))

    def add(self, level: str, deal: int, *, stored: bool = False) -> None:
        """Offer ``deal`` on ``level``'s pool; ``stored``: it is in the database's pool."""
        self.pool(level).add(deal)
        if stored:
            self._stored[pool_name(level)].add(deal)

    def draw(self, level: str, rng: random.Random, avoid: Collection[int] = ()) -> int | None:
        """A winnable deal of ``level`` (not one of ``avoid`` while any is left), or None."""
        pool = self.pool(level)
        return pool.draw(rng, avoid) if len(pool) else None

    def take(self, level: str, deal: int) -> bool:
        """Take ``deal`` out of ``level``'s pool, to be dealt once; whether it is stored
        (then the database's pool must give it up too: ``Store.claim_easy_deal``)."""
        name = pool_name(level)
        self._pools[name].discard(deal)
        stored = deal in self._stored[name]
        self._stored[name].discard(deal)
        if self.on_take is not None:
            self.on_take()
        return stored

    def set_stored(self, name: str, deals: Iterable[int]) -> None:
        """The database's pool ``name`` now holds ``deals``: offer them, and no longer offer a
        stored deal it has given up (another node dealt it)."""
        now = set(deals)
        pool, stored = self._pools[name], self._stored[name]
        for gone in stored - now:
            pool.discard(gone)
        for deal in now - stored:
            pool.add(deal)
        self._stored[name] = now


class WinnableDealFinder:
    """Fills every pool up to its target (module docstring)."""

    def __init__(
        self,
        store: Store,
        solver: SolverPool,
        pools: WinnablePools,
        targets: Mapping[str, int],
        *,
        rng: random.Random | None = None,
    ) -> None:
        self.store = store
        self.solver = solver
        self.pools = pools
        self.targets = {name: targets.get(name, 0) for name in pools.names}
        self.found = 0  # deals this finder added
        self._rng = rng if rng is not None else random.SystemRandom()
        self._task: asyncio.Task[None] | None = None
        self._closed = False
        self._full_once = False
        self._turn = -1
        self._loaded = -REFRESH_S  # time.monotonic() of the last load
        pools.on_take = self.start  # a dealt deal leaves its pool short: fill it again

    async def load(self) -> None:
        """The pools as the database holds them: the deals found by any node, less those
        any node has dealt."""
        for name in self.pools.names:
            self.pools.set_stored(name, await self.store.easy_deals(name))
        self._loaded = time.monotonic()

    def short(self) -> list[str]:
        """The pools below their target."""
        return [name for name, target in self.targets.items() if self.pools.count(name) < target]

    def next_pool(self) -> str | None:
        """The pool whose turn it is (the pools below target in turn), or None when all are full."""
        short = self.short()
        if not short:
            return None
        self._turn += 1
        return short[self._turn % len(short)]

    def start(self) -> None:
        """Fill the pools below their target, unless that is under way (or closed)."""
        if self._closed or (self._task is not None and not self._task.done()):
            return
        if self.short():
            self._task = detached(self._run(), name="winnable-deal-finder")

    async def wait(self) -> None:
        """Until every pool is full (for tests)."""
        if self._task is not None:
            await asyncio.shield(self._task)

    async def close(self) -> None:
        self._closed = True
        await stop_task(self._task)
        self._task = None

    async def _run(self) -> None:
        while True:
            if time.monotonic() - self._loaded >= REFRESH_S:
                try:
                    await self.load()  # what the other nodes found counts as well
                except StoreError:
                    log.warning("could not count the deals found; retrying later", exc_info=True)
                    self._loaded = time.monotonic()
            name = self.next_pool()
            if name is None:
                break
            if self.solver.broken:
                log.warning("the solver pool failed: the winnable pools stop growing")
                return
            if self.solver.pending:
                await asyncio.sleep(IDLE_S)  # players' hints and checks come first
                continue
            seed = self._rng.getrandbits(64)
            deal = await self.solver.find_winnable(get_level(name), seed, FIND_BUDGET_MS)
            if deal is None or deal in self.pools.pool(name):
                continue
            try:
                await self.store.add_easy_deal(name, deal)
            except StoreError:
                log.warning("could not keep a winnable deal; retrying later", exc_info=True)
                await asyncio.sleep(IDLE_S)
                continue
            self.pools.add(name, deal, stored=True)
            self.found += 1
        counts = ", ".join(f"{name} {self.pools.count(name)}" for name in self.pools.names)
        # Said once; after that the pools are filled again after every game dealt from them.
        log.log(
            logging.DEBUG if self._full_once else logging.INFO,
            "the winnable pools are full: %s",
            counts,
        )
        self._full_once = True
