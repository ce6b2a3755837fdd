"""Deal numbers: the winnable easy deals found at run time, and the deals a player has had.

The easy level offers only deals the solver has won (seed 004). The engine
ships a list of them; a server grows that pool while it runs and keeps what
it found here, per level, so a restart starts from everything found so far.
``played_deals`` lets the service offer a player deals they have not seen.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection

from server.store.errors import integrity_kind
from server.store.models import EASY_DEALS, GAMES

__all__ = ["fetch_easy_deals", "fetch_played_deals", "insert_easy_deal"]


async def fetch_easy_deals(conn: AsyncConnection, level: str) -> list[int]:
    """Every deal stored for ``level``, oldest first."""
    statement = (
        select(EASY_DEALS.c.deal)
        .where(EASY_DEALS.c.level == level)
        .order_by(EASY_DEALS.c.found_at, EASY_DEALS.c.deal)
    )
    return list((await conn.execute(statement)).scalars())


async def insert_easy_deal(conn: AsyncConnection, level: str, deal: int, now: datetime) -> bool:
    """Store a deal found winnable under ``level``; False if it was already there."""
    try:
        async with conn.begin_nested():
            await conn.execute(EASY_DEALS.insert().values(level=level, deal=deal, found_at=now))
    except IntegrityError as exc:
        if integrity_kind(exc) == "unique":
            return False
        raise
    return True


async def fetch_played_deals(conn: AsyncConnection, player_id: int, level: str) -> set[int]:
    """The deal numbers of every game ``player_id`` has started on ``level``."""
    statement = (
        select(GAMES.c.deal)
        .where(GAMES.c.player_id == player_id, GAMES.c.level == level)
        .distinct()
    )
    return set((await conn.execute(statement)).scalars())
