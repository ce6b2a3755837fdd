"""Deal numbers: winnable deals found at run time, deal verdicts, and the deals a player had.

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
from server.store.models import DEAL_VERDICTS, EASY_DEALS, GAMES

__all__ = [
    "delete_easy_deal",
    "fetch_deal_verdict",
    "fetch_easy_deals",
    "fetch_played_deals",
    "insert_deal_verdict",
    "insert_easy_deal",
]


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


async def delete_easy_deal(conn: AsyncConnection, level: str, deal: int) -> bool:
    """Take a deal out of ``level``'s pool; False if it was not there (another took it)."""
    statement = EASY_DEALS.delete().where(EASY_DEALS.c.level == level, EASY_DEALS.c.deal == deal)
    return bool((await conn.execute(statement)).rowcount)


async def fetch_played_deals(conn: AsyncConnection, player_id: int, level: str) -> set[int]:
    """The deal numbers of every game ``player_id`` has started on ``level``."""
    statement = (
        select(GAMES.c.deal)
        .where(GAMES.c.player_id == player_id, GAMES.c.level == level)
        .distinct()
    )
    return set((await conn.execute(statement)).scalars())


async def fetch_deal_verdict(conn: AsyncConnection, level: str, deal: int) -> str | None:
    """``"won"`` or ``"lost"`` if the solver decided ``deal`` under ``level`` before."""
    statement = select(DEAL_VERDICTS.c.verdict).where(
        DEAL_VERDICTS.c.level == level, DEAL_VERDICTS.c.deal == deal
    )
    return (await conn.execute(statement)).scalar_one_or_none()


async def insert_deal_verdict(
    conn: AsyncConnection, level: str, deal: int, verdict: str, now: datetime
) -> bool:
    """Keep a deal's verdict; False if one was there (verdicts never change)."""
    row = {"level": level, "deal": deal, "verdict": verdict, "decided_at": now}
    try:
        async with conn.begin_nested():
            await conn.execute(DEAL_VERDICTS.insert().values(**row))
    except IntegrityError as exc:
        if integrity_kind(exc) == "unique":
            return False
        raise
    return True
