"""A pooled PostgreSQL connection checked out and kept, for asyncpg used directly.

The hot paths on PostgreSQL (``pg_writer``'s batches, ``pg_reader``'s reads of
returning players) send their statements through asyncpg itself: through
SQLAlchemy each would cost the pool's check-out and ping, ``BEGIN`` and the
reset, each a wake-up of the event loop. The
connection is one of the engine's pool, so it carries the engine's connect
arguments (``--db-timeout-ms`` bounds each statement here too).

It is not pinged before use: one the server closed (a restart, a failover,
``pg_terminate_backend``) is seen closed by asyncpg at once and replaced
before the next use; after an error whose effect on the connection is unknown
the user drops it (``drop``) and the next use checks out a fresh, pinged one.
One made before the pool was last replaced (a pooled connection failed its
ping: after a partition, likely as half-open as the rest) is dropped too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from server.store.database import outdated_after

__all__ = ["HeldConnection"]


class HeldConnection:
    """One of ``engine``'s connections, kept between uses (module docstring)."""

    def __init__(self, engine: AsyncEngine) -> None:
        self._engine = engine
        self._conn: AsyncConnection | None = None
        self._driver: Any = None  # the asyncpg connection under self._conn
        self._outdated: Callable[[], bool] = _never

    async def driver(self) -> Any:
        """The asyncpg connection, checked out (again) first if there is none, it closed,
        or the pool was replaced since it was made (``database.outdated_after``)."""
        if self._driver is not None and (self._driver.is_closed() or self._outdated()):
            await self.drop()
        if self._conn is None:
            conn = await self._engine.connect()
            try:
                driver = (await conn.get_raw_connection()).driver_connection
            except BaseException:
                await conn.close()
                raise
            self._conn, self._driver = conn, driver
            self._outdated = outdated_after(self._engine, conn)
        return self._driver

    async def drop(self) -> None:
        """Close the connection for good (its state is unknown) and forget it."""
        conn, driver = self._conn, self._driver
        self._conn = self._driver = None
        if conn is None:
            return
        driver.terminate()  # no goodbye: the server may be frozen or gone
        try:
            await conn.invalidate()
            await conn.close()
        except Exception:  # already closed: nothing left to release
            pass

    async def close(self) -> None:
        """Give the connection back to the pool (again: nothing to do)."""
        if self._conn is not None:
            conn, self._conn, self._driver = self._conn, None, None
            await conn.close()


def _never() -> bool:
    return False
