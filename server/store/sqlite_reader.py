"""SQLite's hot reads: a returning player's sign-in and game, on the event loop's thread.

Why: through SQLAlchemy's async adapter every step of a read is a trip to
aiosqlite's connection thread and back (the pool's check-out, ``BEGIN``, each
statement's cursor, execute and fetch, the reset), and each trip ends with a
wake-up of the event loop from another thread. After a restart, thousands of
players reconnect at once, and each needs three reads (``sign_in``,
``game_owner``, ``load_game`` or ``restore_game``): those trips, not the SQL,
were most of the server's time, and the queue for the pool's 15 connections
grew past the database timeout, so requests were refused and sent again, and
the server fell further behind. A thread of its own does not help either: the thread
gives up the interpreter lock in every ``sqlite3`` call and, while the event
loop is busy, waits up to the switch interval (5 ms) to get it back, so a read
of a few microseconds took milliseconds under load.

How: each read runs on the event loop's own thread, on a plain ``sqlite3``
connection of this reader's, in one read transaction (``BEGIN``, the
statements, ``ROLLBACK``). Such a read of one game and its log takes tens of
microseconds from the page cache (SQLite's reads do not wait for the writer in
WAL mode), less than a single trip to a thread did. The statements are
SQLAlchemy's own (``games.GAME_QUERY`` and the others the general path runs),
compiled once for SQLite (``compiled``), and the columns go through SQLAlchemy's
own conversions, so both paths return the same records.

What a read sees is committed state: in WAL mode its connection reads the last
committed transaction. Its ``busy_timeout`` is short (``READ_BUSY_MS``: the
loop must not wait long on a lock, which WAL readers meet only in rare cases
such as recovery); a read that fails (``sqlite3.Error``) leaves as
SQLAlchemy's ``OperationalError``, which ``translate_errors`` maps like any
other (``StoreUnavailable``).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any, Final

from sqlalchemy import Dialect
from sqlalchemy.exc import OperationalError

from server.store.compiled import CompiledQuery
from server.store.database import configure_sqlite_connection
from server.store.errors import StoreUnavailable, translate_errors
from server.store.games import (
    GAME_QUERY,
    LOG_QUERY,
    OWNER_QUERY,
    RESTORE_QUERY,
    SNAPSHOT_AT,
    games_query,
    logged_actions,
    stored_snapshot,
)
from server.store.players import ISSUED_AT, player_record, token_query
from server.store.records import GameRecord, GameStatus, LoggedAction, SignIn, StoredSnapshot
from server.store.sqlite_file import PinnedFile, open_pinned
from server.store.writes import game_record

__all__ = ["READ_BUSY_MS", "SqliteReader"]

READ_BUSY_MS: Final = 100
"""How long a read may wait for a lock (it blocks the event loop meanwhile)."""


class SqliteReader:
    """Reads of the SQLite file ``path`` on the event loop's thread (module docstring)."""

    def __init__(self, path: str, dialect: Dialect, pinned: PinnedFile | None = None) -> None:
        self._owner = CompiledQuery(OWNER_QUERY, dialect)
        self._game = CompiledQuery(GAME_QUERY, dialect)
        self._log = CompiledQuery(LOG_QUERY, dialect)
        self._restore = CompiledQuery(RESTORE_QUERY, dialect)
        self._token = CompiledQuery(token_query(False), dialect)
        self._token_expiring = CompiledQuery(token_query(True), dialect)
        self._unfinished = CompiledQuery(games_query(GameStatus.ACTIVE, None), dialect)
        self._path = path
        self._pinned = pinned
        self._conn: sqlite3.Connection | None = None
        self._closed = False

    def sign_in(self, token_hash: str, issued_after: datetime | None) -> SignIn | None:
        """The token's player and that player's unfinished games (``Store.sign_in``)."""
        token = self._token if issued_after is None else self._token_expiring
        with self._reading() as conn:
            found = _rows(conn, token, token_hash=token_hash, issued_after=issued_after)
            if not found:
                return None
            player = player_record(found[0])
            rows = _rows(conn, self._unfinished, player_id=player.id)
            return SignIn(player, [game_record(row) for row in rows], found[0][ISSUED_AT])

    def game_owner(self, game_id: int) -> int | None:
        with self._reading() as conn:
            rows = _rows(conn, self._owner, game_id=game_id)
            return int(rows[0][0]) if rows else None

    def load_game(
        self, game_id: int, after_seq: int
    ) -> tuple[GameRecord | None, list[LoggedAction]]:
        """The game's row and its log after ``after_seq`` (``Store.load_game``)."""
        with self._reading() as conn:
            rows = _rows(conn, self._game, game_id=game_id)
            if not rows:
                return None, []
            log = _rows(conn, self._log, game_id=game_id, after_seq=after_seq)
            return game_record(rows[0]), logged_actions(log)

    def restore_game(
        self, game_id: int
    ) -> tuple[GameRecord | None, StoredSnapshot | None, list[LoggedAction]]:
        """The game's row, its snapshot and the log after it (``Store.restore_game``)."""
        with self._reading() as conn:
            rows = _rows(conn, self._restore, game_id=game_id)
            if not rows:
                return None, None, []
            row = rows[0]
            record, snapshot = game_record(row[:SNAPSHOT_AT]), stored_snapshot(*row[SNAPSHOT_AT:])
            if snapshot is not None and snapshot.v == record.version:
                return record, snapshot, []  # as after a restart: nothing logged since
            after = 0 if snapshot is None else snapshot.v
            log = _rows(conn, self._log, game_id=game_id, after_seq=after)
            return record, snapshot, logged_actions(log)

    def close(self) -> None:
        """Close the connection; later reads are refused."""
        self._closed = True
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    @contextmanager
    def _reading(self) -> Iterator[sqlite3.Connection]:
        """The connection in a read transaction, rolled back at the end."""
        with translate_errors():
            if self._closed:
                raise StoreUnavailable("the store is closed")
            statement = "BEGIN"
            try:
                conn = self._connection()
                conn.execute(statement)
                try:
                    statement = "read"
                    yield conn
                finally:
                    if conn.in_transaction:
                        conn.execute("ROLLBACK")
            except sqlite3.Error as exc:
                raise OperationalError(statement, None, exc) from exc

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            conn = open_pinned(self._path, self._pinned)
            configure_sqlite_connection(conn, READ_BUSY_MS)
            self._conn = conn
        return self._conn


def _rows(conn: sqlite3.Connection, query: CompiledQuery, **values: Any) -> Sequence[Sequence[Any]]:
    return query.convert(conn.execute(query.sql, query.parameters(values)))
