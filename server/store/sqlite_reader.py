"""SQLite's hot reads: a returning player's sign-in and game, many per trip to one thread.

Why: through SQLAlchemy's async adapter every step of a read is a trip to
aiosqlite's connection thread and back (the pool's check-out, ``BEGIN``, each
statement's cursor, execute and fetch, the reset), and each trip ends with a
wake-up of the event loop from another thread. After a restart, thousands of
players reconnect at once, and each needs three reads (``sign_in``,
``game_owner``, ``load_game``): those trips, not the SQL, were most of the
server's time, and the queue for the pool's 15 connections grew past the
database timeout, so requests were refused and sent again, and the server
fell further behind.

How: each read is a function of a plain ``sqlite3`` connection. Reads queue
up like writes do (``committer.GroupCommitter``: the first waits one loop
iteration for others to join); a batch of up to ``MAX_BATCH`` runs on this
reader's own thread in one read transaction (``BEGIN``, the statements,
``ROLLBACK``) and comes back in one wake-up. The statements are SQLAlchemy's
own (``games.GAME_QUERY`` and the others the general path runs), compiled once
for SQLite, and the columns go through SQLAlchemy's own conversions, so both
paths return the same records.

What a read sees is committed state: its own connection, in WAL mode, reads
the last committed transaction (a batch sees one snapshot). A read that fails
(``sqlite3.Error``) fails alone, as SQLAlchemy's ``OperationalError``, which
``translate_errors`` maps like any other; a read waiting longer than the
database timeout is answered ``StoreUnavailable`` (its statement still runs
later, and nothing waits for it).
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import fields
from datetime import datetime
from typing import Any, Final, TypeVar

from sqlalchemy import Dialect, Select
from sqlalchemy.exc import OperationalError

from server.store.committer import GroupCommitter
from server.store.database import configure_sqlite_connection
from server.store.errors import StoreUnavailable, translate_errors
from server.store.games import (
    ACTION_COLUMNS,
    ACTIONS_QUERY,
    GAME_QUERY,
    OWNER_QUERY,
    games_query,
)
from server.store.players import player_record, token_query
from server.store.records import ActionRecord, GameRecord, GameStatus, Player
from server.store.writes import game_record

__all__ = ["MAX_BATCH", "SqliteReader"]

MAX_BATCH: Final = 256
"""Reads per trip to the thread at most."""

T = TypeVar("T")
Read = Callable[[sqlite3.Connection], Any]

# The log's columns are the record's fields in order (``to_col`` is ``to``).
assert [c.name for c in ACTION_COLUMNS] == [
    "to_col" if f.name == "to" else f.name for f in fields(ActionRecord)
]


class _Query:
    """A SQLAlchemy statement compiled for SQLite: its SQL, parameter order, conversions."""

    def __init__(self, statement: Select[*tuple[Any, ...]], dialect: Dialect) -> None:
        compiled = statement.compile(dialect=dialect)
        self.sql = str(compiled)
        self.names = list(compiled.positiontup or ())
        self.fixed = compiled.params  # the statement's own values (``status_1``...)
        binds: dict[str, Any] = dict(compiled._bind_processors)
        self.binds = [binds.get(name) for name in self.names]
        self.columns = [
            column.type.dialect_impl(dialect).result_processor(dialect, None)
            for column in statement.selected_columns
        ]

    def rows(self, conn: sqlite3.Connection, **values: Any) -> list[list[Any]]:
        """The rows for ``values``, each column converted as SQLAlchemy would."""
        parameters = []
        for name, bind in zip(self.names, self.binds, strict=True):
            value = values[name] if name in values else self.fixed[name]
            parameters.append(value if bind is None else bind(value))
        return [
            [v if f is None else f(v) for f, v in zip(self.columns, row, strict=True)]
            for row in conn.execute(self.sql, parameters)
        ]


class SqliteReader:
    """Reads of the SQLite file ``path`` on a thread of their own (module docstring)."""

    def __init__(
        self, path: str, dialect: Dialect, busy_ms: int, timeout: float | None = None
    ) -> None:
        self._path = path
        self._busy_ms = busy_ms
        self._timeout = timeout
        self._conn: sqlite3.Connection | None = None  # used on the thread only
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sqlite-reader")
        self._batches: GroupCommitter[Read, Any] = GroupCommitter(self._run, max_batch=MAX_BATCH)
        self._closed = False
        self._queries = {
            "token": _Query(token_query(False), dialect),
            "token_expiring": _Query(token_query(True), dialect),
            "unfinished": _Query(games_query(GameStatus.ACTIVE, None), dialect),
            "owner": _Query(OWNER_QUERY, dialect),
            "game": _Query(GAME_QUERY, dialect),
            "actions": _Query(ACTIONS_QUERY, dialect),
        }

    async def sign_in(
        self, token_hash: str, issued_after: datetime | None
    ) -> tuple[Player, list[GameRecord]] | None:
        """The token's player and that player's unfinished games (``Store.sign_in``)."""
        token = self._queries["token" if issued_after is None else "token_expiring"]
        unfinished = self._queries["unfinished"]

        def read(conn: sqlite3.Connection) -> tuple[Player, list[GameRecord]] | None:
            found = token.rows(conn, token_hash=token_hash, issued_after=issued_after)
            if not found:
                return None
            player = player_record(found[0])
            rows = unfinished.rows(conn, player_id=player.id)
            return player, [game_record(row) for row in rows]

        result: tuple[Player, list[GameRecord]] | None = await self._read(read)
        return result

    async def game_owner(self, game_id: int) -> int | None:
        owner = self._queries["owner"]

        def read(conn: sqlite3.Connection) -> int | None:
            rows = owner.rows(conn, game_id=game_id)
            return int(rows[0][0]) if rows else None

        result: int | None = await self._read(read)
        return result

    async def load_game(
        self, game_id: int, after_seq: int
    ) -> tuple[GameRecord | None, list[ActionRecord]]:
        """The game's row and its log after ``after_seq`` (``Store.load_game``)."""
        game, actions = self._queries["game"], self._queries["actions"]

        def read(conn: sqlite3.Connection) -> tuple[GameRecord | None, list[ActionRecord]]:
            rows = game.rows(conn, game_id=game_id)
            if not rows:
                return None, []
            log = actions.rows(conn, game_id=game_id, after_seq=after_seq)
            return game_record(rows[0]), [ActionRecord(*row) for row in log]

        result: tuple[GameRecord | None, list[ActionRecord]] = await self._read(read)
        return result

    async def close(self) -> None:
        """Answer the queued reads, close the connection, stop the thread (again: nothing)."""
        if self._closed:
            return
        self._closed = True
        await self._batches.close()
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(self._thread, self._disconnect)
        self._thread.shutdown(wait=True)

    async def _read(self, read: Read) -> Any:
        with translate_errors():
            if self._closed:
                raise StoreUnavailable("the store is closed")
            try:
                async with asyncio.timeout(self._timeout):
                    return await self._batches.submit(read)
            except TimeoutError as exc:
                raise StoreUnavailable("the database did not answer in time") from exc

    async def _run(self, batch: Sequence[Read]) -> list[Any]:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._thread, self._transaction, batch)

    # -- on the thread ------------------------------------------------------------

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            conn = sqlite3.connect(self._path, check_same_thread=True)
            configure_sqlite_connection(conn, self._busy_ms)
            self._conn = conn
        return self._conn

    def _disconnect(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def _transaction(self, batch: Sequence[Read]) -> list[Any]:
        """One read transaction for ``batch``: each read's result, or its error."""
        try:
            conn = self._connection()
            conn.execute("BEGIN")
        except sqlite3.Error as exc:
            return [OperationalError("BEGIN", None, exc) for _ in batch]
        outcomes: list[Any] = []
        try:
            for read in batch:
                try:
                    outcomes.append(read(conn))
                except sqlite3.Error as exc:
                    outcomes.append(OperationalError("read", None, exc))
        finally:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
        return outcomes
