"""``LostChecks``: "can this still be won?" for a game, and whether its deal ever could.

Theory of operation
-------------------
``check(game)`` answers for the game's current position with the solver
pool's lost-position check (``SolverPool.verdict``, which remembers proofs per
position). A position proved lost is then told apart by its deal: **lost from
the deal** when the deal itself is proved lost (nothing the player did lost
it), otherwise **lost after the moves** (the deal was won by the solver or not
decided within the budget).

A deal's verdict never changes, so it is kept in the database
(``Store.deal_verdict``, table ``deal_verdicts``) the first time a search
decides it, by any node, and read from there (and from a small memory in front
of it) ever after: a deal is searched once per database. The check at the deal
itself, when a game starts, is that same question.

``seen(live)`` says whether a game in memory had its check yet, so that
``open_game`` of a game loaded from the store checks it once.
"""

from __future__ import annotations

import logging
import weakref
from collections import OrderedDict
from typing import Final

from engine.game import Game
from engine.state import State
from server.live import LiveGame
from server.store import Store, StoreError
from server.workers import SolverPool

__all__ = ["DEAL_MEMORY", "LostChecks"]

DEAL_MEMORY: Final = 10_000
"""Deal verdicts kept in memory in front of the database."""

log = logging.getLogger(__name__)


class LostChecks:
    """Lost-position checks that tell "lost from the deal" from "lost after your moves"."""

    def __init__(self, store: Store, solver: SolverPool) -> None:
        self.store = store
        self.solver = solver
        self._deals: OrderedDict[tuple[str, int], str] = OrderedDict()
        self._checked: weakref.WeakSet[LiveGame] = weakref.WeakSet()

    def seen(self, live: LiveGame) -> bool:
        """Whether ``live`` (this object in memory) was checked already."""
        return live in self._checked

    async def check(self, live: LiveGame) -> bool | None:
        """None unless the position is proved lost; then whether it was lost from the deal."""
        self._checked.add(live)
        game = live.game
        start = State.from_deal(game.layout)
        if game.state == start:
            return True if await self.deal_verdict(game) == "lost" else None
        if await self.solver.verdict(game.state.copy(), game.rules) != "lost":
            return None
        return await self.deal_verdict(game) == "lost"

    async def deal_verdict(self, game: Game) -> str:
        """``won``, ``lost`` or ``unknown`` for ``game``'s deal: remembered, stored or searched."""
        key = (game.rules.name, game.deal_number)
        known = self._deals.get(key)
        if known is None:
            known = await self._stored(*key)
        if known is None:
            known = await self.solver.verdict(State.from_deal(game.layout), game.rules)
            if known == "unknown":
                return known
            await self._store(*key, known)
        self._deals[key] = known
        self._deals.move_to_end(key)
        while len(self._deals) > DEAL_MEMORY:
            self._deals.popitem(last=False)
        return known

    async def _stored(self, level: str, deal: int) -> str | None:
        try:
            return await self.store.deal_verdict(level, deal)
        except StoreError:
            log.warning("deal verdicts unavailable; searching", exc_info=True)
            return None

    async def _store(self, level: str, deal: int, verdict: str) -> None:
        try:
            await self.store.add_deal_verdict(level, deal, verdict)
        except StoreError:
            log.warning("deal verdict not kept; it will be searched again", exc_info=True)
