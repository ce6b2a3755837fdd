"""SQLite's hot write path: a whole group-commit batch in one trip to one thread.

Why: on SQLite every statement through SQLAlchemy's async adapter is a trip
to aiosqlite's connection thread and back (a queue put, a thread wake-up, a
callback on the event loop), and a lone action's transaction made five of
them (pool check-out, ``BEGIN``, two statements, ``COMMIT``, the pool's
reset), about 700 us of CPU for a few microseconds of SQL. Here the batch's
transaction runs entirely on a thread of its own: ``BEGIN IMMEDIATE``, the
same statements as ``writes`` (one round of games at a time), ``COMMIT``, in
one call; the event loop waits for one future.

Only the common case comes here: batches of actions that end no game. A
write that ends its game (a win, a resignation, an abandonment) also books
statistics and may start the next game, which the general path
(``writes.apply_writes``, SQLAlchemy) does; ``Store`` sends those batches
there. The two paths share the statements, row shapes and type conversions
of ``writes``, and the same database file: SQLite's write lock orders them.

Durability is the same as the general path's: the connection has the same
pragmas (``database``): ``journal_mode=WAL`` with ``synchronous=FULL``, so
``COMMIT`` returns only after the WAL is fsynced, and an action acknowledged
after it survives a crash of the process and a power cut.

Errors leave as SQLAlchemy's (``IntegrityError``/``OperationalError``) so
``translate_errors`` maps them like any other; a failed batch is rolled back.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from typing import Any

from sqlalchemy import Dialect
from sqlalchemy.exc import IntegrityError, OperationalError

from server.store.database import configure_sqlite_connection
from server.store.errors import NotFound, StoreError, VersionConflict
from server.store.records import Committed, GameWrite
from server.store.writes import (
    SQLITE_STATEMENTS,
    WriteOutcome,
    action_record,
    action_row,
    game_record,
    game_row,
    rounds,
    sqlite_types,
)

__all__ = ["SqliteWriter"]


class SqliteWriter:
    """Writes batches of plain actions to the SQLite file ``path`` (module docstring)."""

    def __init__(self, path: str, dialect: Dialect, busy_ms: int) -> None:
        self._path = path
        self._dialect = dialect
        self._busy_ms = busy_ms
        self._conn: sqlite3.Connection | None = None  # used on the thread only
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sqlite-writer")
        self._closed = False

    @staticmethod
    def takes(batch: Sequence[GameWrite]) -> bool:
        """Whether ``batch`` is for this path: actions only, no game ending."""
        return all(write.ending is None and write.action is not None for write in batch)

    async def write(self, batch: Sequence[GameWrite], now: datetime) -> list[WriteOutcome]:
        """``batch`` in one transaction: one outcome per write, refusals as values."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._thread, self._transaction, list(batch), now)

    async def close(self) -> None:
        """Close the connection and stop the thread (again: nothing to do)."""
        if self._closed:
            return
        self._closed = True
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(self._thread, self._disconnect)
        self._thread.shutdown(wait=True)

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

    def _transaction(self, batch: list[GameWrite], now: datetime) -> list[WriteOutcome]:
        statement = "BEGIN IMMEDIATE"
        try:
            conn = self._connection()
            conn.execute(statement)
            try:
                outcomes = self._apply(conn, batch, now)
                statement = "COMMIT"
                conn.execute(statement)
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
        except sqlite3.IntegrityError as exc:
            raise IntegrityError(statement, None, exc) from exc
        except sqlite3.Error as exc:
            raise OperationalError(statement, None, exc) from exc
        return outcomes

    def _apply(
        self, conn: sqlite3.Connection, batch: list[GameWrite], now: datetime
    ) -> list[WriteOutcome]:
        outcomes: dict[int, WriteOutcome] = {}
        for indexes in rounds(batch):
            done = self._round(conn, [batch[index] for index in indexes], now)
            outcomes.update(zip(indexes, done, strict=True))
        return [outcomes[index] for index in range(len(batch))]

    def _round(
        self, conn: sqlite3.Connection, writes: list[GameWrite], now: datetime
    ) -> list[WriteOutcome]:
        """``writes.apply_writes``' round (distinct games) on the plain connection."""
        bind_now, types = sqlite_types(self._dialect)
        stored_now = bind_now(now)
        advance, append = SQLITE_STATEMENTS
        rows = json.dumps([game_row(write) for write in writes], separators=(",", ":"))
        found = conn.execute(advance, {"now": stored_now, "v": rows}).fetchall()
        moved = [[v if f is None else f(v) for f, v in zip(types, r, strict=True)] for r in found]
        games = {record.id: record for record in map(game_record, moved)}
        actions = {write.game_id: action_record(write, now) for write in writes}
        wanted = [action_row(actions[game]) for game in games]
        logged: set[int] = set()
        if wanted:
            parameters = {"now": stored_now, "a": json.dumps(wanted, separators=(",", ":"))}
            logged = {row[0] for row in conn.execute(append, parameters).fetchall()}
        if games.keys() - logged:  # the log ran ahead of a game: spoil the transaction
            game = next(iter(games.keys() - logged))
            raise VersionConflict(game, next(w.version for w in writes if w.game_id == game))
        refused = self._refusals(conn, [write for write in writes if write.game_id not in games])
        return [
            Committed(games[write.game_id], actions[write.game_id], None)
            if write.game_id in games
            else refused[write.game_id]
            for write in writes
        ]

    @staticmethod
    def _refusals(conn: sqlite3.Connection, refused: list[GameWrite]) -> dict[int, StoreError]:
        """Why the guarded update matched nothing: NotFound, or VersionConflict."""
        if not refused:
            return {}
        ids = [write.game_id for write in refused]
        marks = ", ".join("?" * len(ids))
        sql = f"SELECT id, version, status FROM games WHERE id IN ({marks})"
        found: dict[int, Any] = {row[0]: row for row in conn.execute(sql, ids).fetchall()}
        errors: dict[int, StoreError] = {}
        for write in refused:
            row = found.get(write.game_id)
            errors[write.game_id] = (
                NotFound("game", write.game_id)
                if row is None
                else VersionConflict(write.game_id, write.version, row[1], row[2])
            )
        return errors
