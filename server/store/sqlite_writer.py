"""SQLite's hot write path: a whole group-commit batch in one trip to one thread.

Why: on SQLite every statement through SQLAlchemy's async adapter is a trip
to aiosqlite's connection thread and back (a queue put, a thread wake-up, a
callback on the event loop), and a lone action's transaction made five of
them (pool check-out, ``BEGIN``, two statements, ``COMMIT``, the pool's
reset), about 700 us of CPU for a few microseconds of SQL. Here the batch's
transaction runs entirely on a thread of its own: ``BEGIN IMMEDIATE``, the
statements of ``writes`` for writes that end no game (one round of games at a
time; they leave the status alone, so no index of ``games`` is rewritten),
``COMMIT``, in one call; the event loop waits for one future. A round of one write (a lone
action) sends its rows as plain parameters (``SQLITE_ONE_STATEMENTS``), a
larger round as JSON arrays, as ``writes`` does: parsing the JSON cost a lone
transaction about a quarter of its SQLite time. The rows' JSON is built and
the results are read on the event loop's side: the thread runs little more
than the SQL, because while it holds the interpreter lock the loop cannot run.

At light load (a batch of one write after another batch of one) the write is
committed on the event loop's own thread instead, on a second connection: the
hand-off to the thread and back cost more CPU than the transaction
(``bench.commit``, three rounds alternating: 515 us of CPU per lone commit
through the thread, 345 us inline). The loop is held for that commit, fsync
included (0.1 to 0.5 ms on a local SSD); under load the thread keeps the loop
free during fsyncs. The inline connection never waits for the lock
(``busy_timeout`` 0): when another connection holds it, the write goes to the
thread, which waits. Nor does it checkpoint the WAL (milliseconds of writing
and fsync): every ``CHECKPOINT_EVERY`` inline commits the thread runs a
passive checkpoint, and writes arriving meanwhile queue behind it on the
thread, because SQLite starts the WAL over only at a write that begins after
a complete checkpoint.

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
import contextlib
import sqlite3
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import datetime
from typing import Any, NamedTuple

from sqlalchemy import Dialect
from sqlalchemy.exc import IntegrityError, OperationalError

from server.store.database import configure_sqlite_connection
from server.store.errors import VersionConflict
from server.store.records import ActionRecord, Committed, GameWrite
from server.store.sqlite_file import PinnedFile, open_pinned
from server.store.writes import (
    PLAIN_GAME_WIDTH,
    REFUSED_COLUMNS,
    SQLITE_ONE_STATEMENTS,
    SQLITE_PLAIN_STATEMENTS,
    SQLITE_SNAPSHOT,
    WriteOutcome,
    action_record,
    column_types,
    compact_json,
    game_row,
    refusal,
    rounds,
)

__all__ = ["CHECKPOINT_EVERY", "SqliteWriter"]

CHECKPOINT_EVERY = 256
"""Inline commits between two passive WAL checkpoints on the thread (module docstring)."""


class SqliteWriter:
    """Writes batches of plain actions to the SQLite file ``path`` (module docstring)."""

    def __init__(
        self, path: str, dialect: Dialect, busy_ms: int, pinned: PinnedFile | None = None
    ) -> None:
        self._path = path
        self._pinned = pinned
        self._dialect = dialect
        self._busy_ms = busy_ms
        self._conn: sqlite3.Connection | None = None  # used on the thread only
        self._inline: sqlite3.Connection | None = None  # used on the event loop's thread only
        self._inline_commits = 0  # since the last checkpoint
        self._last_lone = True  # the last batch held one write
        self._checkpointing: Future[None] | None = None  # a checkpoint sent to the thread
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sqlite-writer")
        self._closed = False
        self.inline_writes = 0  # batches written on the loop's thread (for tests)

    @staticmethod
    def takes(batch: Sequence[GameWrite]) -> bool:
        """Whether ``batch`` is for this path: actions only, no game ending."""
        if len(batch) == 1:  # the usual batch at light load: no generator to make
            return batch[0].ending is None and batch[0].action is not None
        return all(write.ending is None and write.action is not None for write in batch)

    async def write(self, batch: Sequence[GameWrite], now: datetime) -> list[WriteOutcome]:
        """``batch`` in one transaction: one outcome per write, refusals as values.

        Only the SQL runs on the thread; the rows are built and the results read
        here, so the thread holds the interpreter lock as briefly as it can (while
        it does, the event loop waits).
        """
        bind_now, returned = column_types(self._dialect)
        lone = len(batch) == 1
        # Light load: this batch and the one before it held one write each.
        light = lone and self._last_lone and self._checkpoint_done()
        self._last_lone = lone
        if lone:  # the common case at light load: one round of one write
            (write,) = batch
            record = action_record(write)
            step = _round_of(batch, {write.game_id: record})
            ((moved, refused),) = await self._rounds([step], bind_now(now), light)
            if not moved:
                return [refusal(write, refused.get(write.game_id))]
            return [Committed(returned(moved[0]), record, None)]
        order = rounds(batch)
        plan = [[batch[index] for index in indexes] for indexes in order]
        actions = [{write.game_id: action_record(write) for write in each} for each in plan]
        steps = [_round_of(each, records) for each, records in zip(plan, actions, strict=True)]
        found = await self._rounds(steps, bind_now(now), light=False)
        outcomes: dict[int, WriteOutcome] = {}
        for each, records, (moved, refused) in zip(plan, actions, found, strict=True):
            games = {record.id: record for record in map(returned, moved)}
            for write in each:
                game = games.get(write.game_id)
                outcome: WriteOutcome = (
                    refusal(write, refused.get(write.game_id))
                    if game is None
                    else Committed(game, records[write.game_id], None)
                )
                outcomes[id(write)] = outcome
        return [outcomes[id(write)] for write in batch]

    async def _rounds(
        self, steps: list[_Round], now: Any, light: bool
    ) -> list[tuple[list[Any], dict[int, Any]]]:
        """``steps`` in one transaction: on the loop's thread when ``light`` and the lock
        is free, else on the writer thread; per round, the moved and refused games."""
        found = self._inline_transaction(steps, now) if light else None
        if found is None:
            loop = asyncio.get_running_loop()
            found = await loop.run_in_executor(self._thread, self._transaction, steps, now)
        return found

    async def close(self) -> None:
        """Close the connections and stop the thread (again: nothing to do)."""
        if self._closed:
            return
        self._closed = True
        if self._inline is not None:
            self._inline.close()
            self._inline = None
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(self._thread, self._disconnect)
        self._thread.shutdown(wait=True)

    # -- on the event loop's thread -------------------------------------------------

    def _inline_transaction(
        self, steps: list[_Round], now: Any
    ) -> list[tuple[list[Any], dict[int, Any]]] | None:
        """``steps`` in one transaction on this thread; None if the lock is taken."""
        try:
            conn = self._inline_connection()
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            if getattr(exc, "sqlite_errorcode", 0) & 0xFF == sqlite3.SQLITE_BUSY:  # extended too
                return None  # another connection writes: the thread waits for it
            raise OperationalError("BEGIN IMMEDIATE", None, exc) from exc
        found = self._in_transaction(conn, steps, now)
        self.inline_writes += 1
        self._inline_commits += 1
        if self._inline_commits >= CHECKPOINT_EVERY:
            self._inline_commits = 0
            self._checkpointing = self._thread.submit(self._checkpoint)
        return found

    def _checkpoint_done(self) -> bool:
        """No checkpoint is running. While one runs, writes go to the thread after it:
        SQLite starts the WAL over only at a write that begins after a complete
        checkpoint, and inline writes during it kept the WAL growing for ever."""
        return self._checkpointing is None or self._checkpointing.done()

    # -- on the thread ------------------------------------------------------------

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            conn = open_pinned(self._path, self._pinned)
            configure_sqlite_connection(conn, self._busy_ms)
            self._conn = conn
        return self._conn

    def _disconnect(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def _inline_connection(self) -> sqlite3.Connection:
        if self._inline is None:
            conn = open_pinned(self._path, self._pinned)
            try:
                configure_sqlite_connection(conn, busy_ms=0)
                conn.execute("PRAGMA wal_autocheckpoint=0")  # the thread checkpoints
            except BaseException:
                conn.close()
                raise
            self._inline = conn
        return self._inline

    def release_log(self) -> bool:
        """Copy the write-ahead log into the file this writer opened, and empty it, on
        a connection it holds (``sqlite_file``: the file left its path); whether that
        was done. Blocks the loop for the copy: once, as the file is found gone."""
        conn = self._inline
        if conn is None or self._closed:
            return False
        try:
            (busy, _, _), *_ = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
        except sqlite3.Error:
            return False
        return bool(busy == 0)

    def _checkpoint(self) -> None:
        """Copy the WAL into the database as far as no reader needs it (never waits)."""
        with contextlib.suppress(sqlite3.Error):  # the next one will do; writes do not wait
            self._connection().execute("PRAGMA wal_checkpoint(PASSIVE)")

    def _transaction(self, steps: list[_Round], now: Any) -> list[tuple[list[Any], dict[int, Any]]]:
        """BEGIN IMMEDIATE, each round's statements, COMMIT: per round, the moved games'
        rows and the refused games' ``REFUSED_COLUMNS``."""
        try:
            conn = self._connection()
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            raise OperationalError("BEGIN IMMEDIATE", None, exc) from exc
        return self._in_transaction(conn, steps, now)

    def _in_transaction(
        self, conn: sqlite3.Connection, steps: list[_Round], now: Any
    ) -> list[tuple[list[Any], dict[int, Any]]]:
        """Each round's statements and COMMIT, on ``conn`` in its transaction; rolled
        back on any error."""
        statement = "the batch"
        try:
            try:
                found = [self._round(conn, step, now) for step in steps]
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
        return found

    @staticmethod
    def _round(
        conn: sqlite3.Connection, step: _Round, now: Any
    ) -> tuple[list[Any], dict[int, Any]]:
        """``writes.apply_writes``' round (distinct games): advance, append, refusals."""
        if step.one is not None:  # one write: its rows as plain parameters
            advance, append = SQLITE_ONE_STATEMENTS
            game, action = step.one
            moved = conn.execute(advance, (now, *game)).fetchall()
            ids = [row[0] for row in moved]
            found = conn.execute(append, (now, *action)).fetchall() if ids else []
        else:
            advance, append = SQLITE_PLAIN_STATEMENTS
            moved = conn.execute(advance, {"now": now, "v": step.games}).fetchall()
            ids = [row[0] for row in moved]
            wanted = (  # the actions of the games that moved: as a rule, all of them
                step.all_actions
                if len(ids) == len(step.actions)
                else compact_json([step.actions[game] for game in ids])
            )
            found = conn.execute(append, {"now": now, "a": wanted}).fetchall() if ids else []
        logged = {row[0] for row in found}
        for game in ids:
            if game not in logged:  # the log ran ahead of the game: spoil the transaction
                raise VersionConflict(game, step.versions[game])
        moved_ids = set(ids)
        for snapshot_of, v, data in step.snapshots:  # now and then: a statement each
            if snapshot_of in moved_ids:
                conn.execute(SQLITE_SNAPSHOT, (data, v, snapshot_of, v))
        missing = [game for game in step.versions if game not in moved_ids]
        refused: dict[int, Any] = {}
        if missing:
            marks = ", ".join("?" * len(missing))
            sql = f"SELECT {REFUSED_COLUMNS} FROM games WHERE id IN ({marks})"
            refused = {row[0]: row for row in conn.execute(sql, missing).fetchall()}
        return moved, refused


class _Round(NamedTuple):
    """One round's rows, ready for the statements: games as one JSON array, the actions
    as one too (``all_actions``) and by game (a record is a tuple in the row's order);
    or, for a round of one write, ``one``: its game's row and its action's record."""

    games: str
    actions: dict[int, ActionRecord]
    all_actions: str
    versions: dict[int, int]  # each game's expected version
    one: tuple[tuple[Any, ...], ActionRecord] | None = None
    snapshots: tuple[tuple[int, int, bytes], ...] = ()  # (game, version, data), now and then


def _round_of(writes: Sequence[GameWrite], actions: dict[int, ActionRecord]) -> _Round:
    versions = {write.game_id: write.version for write in writes}
    if len(writes) == 1:  # a lone action: no generator to make
        (write,) = writes
        game = game_row(write)[:PLAIN_GAME_WIDTH]
        snapshot = write.snapshot
        carried = () if snapshot is None else ((write.game_id, write.new_version, snapshot),)
        return _Round("", {}, "", versions, (game, actions[write.game_id]), carried)
    snapshots = tuple(
        (write.game_id, write.new_version, write.snapshot)
        for write in writes
        if write.snapshot is not None
    )
    return _Round(
        compact_json([game_row(write) for write in writes]),
        actions,
        compact_json(list(actions.values())),  # one encoding for all: ActionRecord is a row
        versions,
        None,
        snapshots,
    )
