"""PostgreSQL's hot reads: a returning player's sign-in and game, on held connections.

Why: after a restart thousands of players reconnect at once, and each needs
three reads (``sign_in``, ``game_owner``, ``load_game`` or ``restore_game``).
Through SQLAlchemy each read checked a connection out of the pool and pinged
it (``BEGIN``, ``;``, ``ROLLBACK``), sent ``BEGIN``, its statements and the
reset: about ten round trips and as many wake-ups of the event loop for two or three
statements, which made a returning player cost the server twice as much on
PostgreSQL as on SQLite (``bench.reconnect``, docs/benchmarks.md).

How: the same statements as the general path (``compiled``: SQLAlchemy's own,
compiled once, their columns converted as SQLAlchemy does) go through
asyncpg itself on ``READS_HELD`` connections kept from the engine's pool
(``held``), one statement per round trip, outside any ``BEGIN``. The sign-in's
two statements are one here (``compiled.signing_in_query``: the token's player
joined to the player's unfinished game), and so are a game's row and its log
(``compiled.loading_query``: the log as one array; ``compiled.restoring_query``
with the game's snapshot and only the log after it). A read takes a free
connection in turn (first come, first served) and gives it back.

What a read sees is committed state: each statement runs alone, in its own
snapshot, as each statement of a read transaction does at PostgreSQL's
default isolation (read committed), which is what the general path had. An
error drops the connection (its state is unknown) and leaves as SQLAlchemy's
(``DBAPIError`` carrying the SQLSTATE, ``InterfaceError``), so
``translate_errors`` gives it the general path's stable codes; a timeout
(``--db-timeout-ms``, the connection's ``command_timeout``) is ``unavailable``
as there.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime
from typing import Any, Final, TypeVar

import asyncpg
from sqlalchemy import exc as sa_exc
from sqlalchemy.ext.asyncio import AsyncEngine

from server.store.compiled import (
    LOG_AT,
    PLAYER_WIDTH,
    RESTORED_LOG_AT,
    CompiledQuery,
    loading_query,
    restoring_query,
    signing_in_query,
)
from server.store.games import OWNER_QUERY, SNAPSHOT_AT, logged_actions, stored_snapshot
from server.store.held import HeldConnection
from server.store.players import player_record
from server.store.records import GameRecord, LoggedAction, Player, StoredSnapshot
from server.store.writes import game_record

__all__ = ["READS_HELD", "PostgresReader"]

READS_HELD: Final = 3
"""Connections kept for these reads: each read is a few statements of well under a
millisecond, so a few carry more returning players than the server's core can
serve (``bench.reconnect``)."""

T = TypeVar("T")
Driver = Any  # asyncpg.Connection


class PostgresReader:
    """A returning player's reads on connections kept from ``engine``'s pool (module docstring)."""

    def __init__(self, engine: AsyncEngine, held: int = READS_HELD) -> None:
        self._owner = CompiledQuery(OWNER_QUERY, engine.dialect)
        self._signing_in = CompiledQuery(signing_in_query(False), engine.dialect)
        self._signing_in_expiring = CompiledQuery(signing_in_query(True), engine.dialect)
        self._loading = CompiledQuery(loading_query(), engine.dialect)
        self._restoring = CompiledQuery(restoring_query(), engine.dialect)
        self._free: asyncio.Queue[HeldConnection] = asyncio.Queue()
        self._all = [HeldConnection(engine) for _ in range(held)]
        for each in self._all:
            self._free.put_nowait(each)

    async def sign_in(
        self, token_hash: str, issued_after: datetime | None
    ) -> tuple[Player, list[GameRecord]] | None:
        """The token's player and that player's unfinished games (``Store.sign_in``)."""
        query = self._signing_in if issued_after is None else self._signing_in_expiring

        async def read(driver: Driver) -> tuple[Player, list[GameRecord]] | None:
            rows = await _rows(driver, query, token_hash=token_hash, issued_after=issued_after)
            if not rows:
                return None
            games = [row[PLAYER_WIDTH:] for row in rows if row[PLAYER_WIDTH] is not None]
            return player_record(rows[0]), [game_record(game) for game in games]

        return await self._read(read)

    async def game_owner(self, game_id: int) -> int | None:
        async def read(driver: Driver) -> int | None:
            rows = await _rows(driver, self._owner, game_id=game_id)
            return int(rows[0][0]) if rows else None

        return await self._read(read)

    async def load_game(
        self, game_id: int, after_seq: int
    ) -> tuple[GameRecord | None, list[LoggedAction]]:
        """The game's row and its log after ``after_seq`` (``Store.load_game``)."""

        async def read(driver: Driver) -> tuple[GameRecord | None, list[LoggedAction]]:
            rows = await _rows(driver, self._loading, game_id=game_id, after_seq=after_seq)
            if not rows:
                return None, []
            (row,) = rows
            log = zip(*row[LOG_AT:], strict=True) if row[LOG_AT] is not None else ()
            return game_record(row[:LOG_AT]), logged_actions(log)

        return await self._read(read)

    async def restore_game(
        self, game_id: int
    ) -> tuple[GameRecord | None, StoredSnapshot | None, list[LoggedAction]]:
        """The game's row, its snapshot and the log after it, in one statement
        (``Store.restore_game``)."""

        async def read(
            driver: Driver,
        ) -> tuple[GameRecord | None, StoredSnapshot | None, list[LoggedAction]]:
            rows = await _rows(driver, self._restoring, game_id=game_id)
            if not rows:
                return None, None, []
            (row,) = rows
            at = RESTORED_LOG_AT
            log = zip(*row[at:], strict=True) if row[at] is not None else ()
            snapshot = stored_snapshot(*row[SNAPSHOT_AT:at])
            return game_record(row[:SNAPSHOT_AT]), snapshot, logged_actions(log)

        return await self._read(read)

    async def close(self) -> None:
        """Give every kept connection back to the pool."""
        for each in self._all:
            await each.close()

    async def _read(self, read: Callable[[Driver], Awaitable[T]]) -> T:
        """``read`` on a free kept connection, in turn; errors as the general path's."""
        held = await self._free.get()
        try:
            driver = await held.driver()
            return await read(driver)
        except BaseException as exc:
            await held.drop()
            if isinstance(exc, asyncpg.PostgresError):
                raise sa_exc.DBAPIError("read", None, exc) from exc
            if isinstance(exc, asyncpg.InterfaceError | asyncpg.InternalClientError):
                # InternalClientError: a connection the server closed under a statement
                raise sa_exc.InterfaceError("read", None, exc) from exc
            raise
        finally:
            self._free.put_nowait(held)


async def _rows(driver: Driver, query: CompiledQuery, **values: Any) -> Sequence[Sequence[Any]]:
    return query.convert(await driver.fetch(query.sql, *query.parameters(values)))
