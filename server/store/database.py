"""Engines: one async SQLAlchemy engine per store, configured per backend.

Two backends are supported, with the same schema and the same tests:

- SQLite through aiosqlite (the embedded default). Each new connection gets
  ``journal_mode=WAL`` (readers never block the writer), ``foreign_keys=ON``
  (off by default in SQLite), ``busy_timeout`` (wait for the write lock rather
  than fail at once) and ``synchronous=FULL`` (a commit is on disk before it is
  acknowledged; group commit is what keeps that affordable). The driver's
  legacy transaction handling is switched off and SQLAlchemy emits ``BEGIN``
  itself, so reads are repeatable and DDL is transactional. ``BEGIN`` goes
  straight to aiosqlite: one trip to its connection thread instead of three
  (cursor, execute, close), which under load costs more than the statement.
  A connection of ``writing(engine)`` begins with ``BEGIN IMMEDIATE`` instead:
  it takes the write lock at once (waiting ``busy_timeout`` for it). Begun
  deferred, a transaction that reads before it writes fails at its first write,
  without waiting, when another connection committed after its read.
- PostgreSQL through asyncpg (production). A pooled connection is pinged as
  it is checked out (``_ping_on_checkout``: one lone statement, one round trip,
  where SQLAlchemy's ``pool_pre_ping`` makes three), so a connection dropped by a
  failover is replaced instead of failing a request. One that fails its ping,
  or does not answer it within the statement timeout, has the whole pool
  replaced: after a restart of the database, a failover, a partition or a NAT
  that forgot its connections, every idle connection made before is as dead,
  and found out one by one each would cost a request, half-open ones a whole
  timeout each.

``timeout`` (seconds; the server's ``--db-timeout-ms``) bounds every step
where the database could keep a request waiting: opening a connection,
waiting for one from the pool, and each statement (SQLite: ``busy_timeout``,
the wait for the write lock; PostgreSQL: asyncpg's ``command_timeout`` on the
client, and a ``statement_timeout`` a little shorter on the server,
``statement_timeout_ms``). A step that runs out of time raises, and the store
answers ``StoreUnavailable``. The server's own bound matters for a statement
outside ``BEGIN`` (``pg_writer``'s batch, which commits itself): the client's
cancel request may never arrive (the timed-out connection is dropped at once),
and a backend waiting on a lock does not notice its client gone, so without it
the statement would run and commit once the lock lifted, seconds after the
client was told ``unavailable``. What it cannot bound is a statement held up on
the way (a network that stalls for longer than the margin): that one may still
commit after the client gave up, which the protocol's resend tells. None: SQLite's
default busy timeout and no limit on PostgreSQL (migrations use this).

A URL without a driver (``sqlite:///x.db``, ``postgresql://...``) gets the
async driver; any other backend is refused.
"""

from __future__ import annotations

import asyncio
import logging
import math
import sqlite3
import time
import weakref
from collections import Counter
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, Final

from sqlalchemy import event
from sqlalchemy.engine import URL, Engine, make_url
from sqlalchemy.exc import InvalidatePoolError, OperationalError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine
from sqlalchemy.util import await_only

from server.store.errors import StoreError

__all__ = [
    "BUSY_TIMEOUT_MS",
    "MIGRATION_LOCK",
    "SUPPORTED_BACKENDS",
    "async_url",
    "configure_sqlite_connection",
    "connect_arguments",
    "create_engine",
    "cut_off",
    "migrating",
    "sqlite_busy_ms",
    "writing",
]

MIGRATION_LOCK: Final = 0x5C0_4210
"""PostgreSQL: the transaction-scoped advisory lock's key (any constant) that orders
concurrent upgrades (``schema.upgrade``, ``migrations/env.py``)."""

log = logging.getLogger(__name__)

BUSY_TIMEOUT_MS: Final = 5000
_WRITING: Final = "scorpion_writing"  # the execution option ``writing`` sets
SUPPORTED_BACKENDS: Final = {"sqlite": "aiosqlite", "postgresql": "asyncpg"}
_SQLITE_PRAGMAS: Final = ("foreign_keys=ON", "synchronous=FULL")  # after WAL, _switch_to_wal


def async_url(url: str | URL) -> URL:
    """``url`` with the async driver of its backend; ValueError for other backends.

    On PostgreSQL libpq's ``sslmode`` becomes ``ssl``, asyncpg's name for it (asyncpg's
    ``connect()`` takes no ``sslmode`` argument).
    """
    parsed = make_url(url)
    backend = parsed.get_backend_name()
    if backend not in SUPPORTED_BACKENDS:
        raise ValueError(
            f"unsupported database {backend!r}: use sqlite+aiosqlite or postgresql+asyncpg"
        )
    parsed = parsed.set(drivername=f"{backend}+{SUPPORTED_BACKENDS[backend]}")
    if backend == "postgresql" and "sslmode" in parsed.query and "ssl" not in parsed.query:
        mode = parsed.query["sslmode"]
        parsed = parsed.difference_update_query(["sslmode"]).update_query_dict({"ssl": mode})
    return parsed


def connect_arguments(url: URL) -> dict[str, Any]:
    """What SQLAlchemy passes asyncpg's ``connect()`` for the PostgreSQL ``url``: the
    change listener's own connection (``notify``) is made as the pool's are."""
    parsed = async_url(url)
    _, arguments = parsed.get_dialect()().create_connect_args(parsed)
    return dict(arguments)


def sqlite_busy_ms(timeout: float | None) -> int:
    """SQLite's ``busy_timeout`` for a step bound of ``timeout`` seconds."""
    return BUSY_TIMEOUT_MS if timeout is None else max(1, round(timeout * 1000))


def create_engine(
    url: str | URL,
    *,
    timeout: float | None = None,
    connect_timeout: float | None = None,
    **options: Any,
) -> AsyncEngine:
    """An engine for ``url`` configured as the module docstring says.

    ``connect_timeout`` (migrations) bounds opening a connection and, on SQLite, the
    wait for the write lock, but not a statement: ``timeout`` bounds both.
    """
    parsed = async_url(url)
    opening = timeout if timeout is not None else connect_timeout
    if opening is not None:
        options.setdefault("pool_timeout", opening)
    if parsed.get_backend_name() == "sqlite":
        busy_ms = sqlite_busy_ms(opening)
        engine = create_async_engine(parsed, **options)
        _configure_sqlite(engine, busy_ms)
        return engine
    if opening is not None:
        connect_args = options.setdefault("connect_args", {})
        connect_args.setdefault("timeout", opening)
        if timeout is not None:
            connect_args.setdefault("command_timeout", timeout)
    engine = create_async_engine(parsed, **options)
    if timeout is not None:
        _bound_statements(engine, statement_timeout_ms(timeout), max(1, round(timeout * 1000)))
    _ping_on_checkout(engine)
    return engine


STATEMENT_MARGIN_MS: Final = 250
"""How much sooner than the client PostgreSQL gives a statement up (at most a quarter
of the timeout): its clock starts as the statement arrives, one trip after the
client's, and a lock lifted in between would let the statement commit after the
client was told ``unavailable``."""


def statement_timeout_ms(timeout: float) -> int:
    """PostgreSQL's ``statement_timeout`` for a client bound of ``timeout`` seconds."""
    ms = max(1, round(timeout * 1000))
    return max(1, ms - min(STATEMENT_MARGIN_MS, ms // 4))


def _bound_statements(engine: AsyncEngine, ms: int, idle_ms: int) -> None:
    """Set ``statement_timeout`` and ``idle_in_transaction_session_timeout`` on each new
    connection, by a statement: as startup parameters, a PgBouncer in front of
    PostgreSQL would refuse the connection.

    The second ends a transaction its node left open between two statements for longer
    than ``idle_ms``: a node stopped inside one (SIGSTOP, a partition from the database)
    would otherwise keep its rows locked, and every other node's players waiting on
    them, until TCP keepalive noticed, two hours by default. A live node's transaction
    never waits that long between its statements; one that did has its connection
    ended, and its next statement answers ``unavailable``.
    """

    def bound(dbapi_connection: Any, _record: Any) -> None:
        await_only(
            dbapi_connection.driver_connection.execute(
                f"SET statement_timeout = {ms}; SET idle_in_transaction_session_timeout = {idle_ms}"
            )
        )

    event.listen(engine.sync_engine, "connect", bound)


def _ping_on_checkout(engine: AsyncEngine) -> None:
    """PostgreSQL: ping each pooled connection as it is checked out (module docstring)."""
    guard = _PoolGuard()
    _GUARDS[engine.sync_engine] = guard
    event.listen(engine.sync_engine, "connect", guard.made)
    event.listen(engine.sync_engine, "checkout", guard.checkout)
    event.listen(engine.sync_engine, "close", guard.closing)


_GUARDS: Final[weakref.WeakKeyDictionary[Engine, _PoolGuard]] = weakref.WeakKeyDictionary()
"""Each PostgreSQL engine's ``_PoolGuard`` (``outdated_after``)."""
_MADE: Final = "scorpion_made"
"""``ConnectionPoolEntry.info``'s key: when the connection was made (monotonic time)."""
_FRESH: Final = "scorpion_fresh"
"""``ConnectionPoolEntry.info``'s key: the connection was just made, not yet handed out."""


def outdated_after(engine: AsyncEngine, conn: AsyncConnection) -> Callable[[], bool]:
    """For a connection checked out of ``engine``'s pool and kept (``held``): a test of
    whether the pool has been replaced since it was made, when it is as likely dead as
    the others and is to be dropped (it is not pinged again). Always False on SQLite."""
    guard = _GUARDS.get(engine.sync_engine)
    made = conn.info.get(_MADE, math.inf)
    if guard is None:
        return lambda: False
    return lambda: made <= guard.replaced_at


def cut_off(engine: AsyncEngine) -> None:
    """PostgreSQL: cut every connection of ``engine``'s pool off, those checked out (a
    statement waiting on one fails at once) and any made later, and have
    ``engine.dispose()`` cut off those in the pool rather than close them politely.

    For the store's close: a polite close waits for the database to answer, up to the
    statement timeout for each connection in turn, and past it SQLAlchemy logs an ERROR
    with the driver's stack; a node stopping while its database was silent took that
    long more, and logged that. Cut off, an idle connection is ended by PostgreSQL as
    quietly as one closed politely. Nothing on SQLite."""
    guard = _GUARDS.get(engine.sync_engine)
    if guard is None:
        return
    guard.stopping = True
    for driver in list(guard.open):
        driver.terminate()


class _PoolGuard:
    """The pool events of ``_ping_on_checkout``.

    A connection checked out is pinged, but a new one (it answered its connect).
    One that fails has the pool replaced: ``InvalidatePoolError`` raised from the
    ``checkout`` event is SQLAlchemy's own way; it drops that connection, marks
    every connection made before as to be replaced at its next checkout, and
    hands out a new one in its place. SQLAlchemy closes each replaced connection
    politely, waiting up to 2 s for the database to see it go, which a half-open
    connection never does: those made before the failed ping are cut off at once.
    """

    def __init__(self) -> None:
        self.replaced_at = -math.inf  # when a connection last failed its ping
        self.stopping = False  # ``cut_off``: every connection is cut off
        self.open: weakref.WeakSet[Any] = weakref.WeakSet()  # the asyncpg connections

    def made(self, dbapi_connection: Any, record: Any) -> None:
        record.info[_MADE] = time.monotonic()
        record.info[_FRESH] = True
        self.open.add(dbapi_connection.driver_connection)
        if self.stopping:
            dbapi_connection.driver_connection.terminate()

    def checkout(self, dbapi_connection: Any, record: Any, _proxy: Any) -> None:
        if record.info.pop(_FRESH, False):
            return
        try:  # outside any transaction: asyncpg's ``command_timeout`` bounds it
            await_only(dbapi_connection.driver_connection.execute("SELECT 1"))
        except Exception as exc:
            self.replaced_at = time.monotonic()
            log.info("a pooled connection failed its ping (%r): replacing the pool", exc)
            raise InvalidatePoolError(f"ping failed: {exc!r}") from exc

    def closing(self, dbapi_connection: Any, record: Any) -> None:
        if self.stopping or record.info.get(_MADE, math.inf) <= self.replaced_at:
            dbapi_connection.driver_connection.terminate()


def _configure_sqlite(engine: AsyncEngine, busy_ms: int) -> None:
    def on_connect(dbapi_connection: Any, _record: Any) -> None:
        configure_sqlite_connection(dbapi_connection, busy_ms, wait=_wait_on_the_loop)

    event.listen(engine.sync_engine, "connect", on_connect)
    event.listen(engine.sync_engine, "begin", _on_sqlite_begin)


def configure_sqlite_connection(
    dbapi_connection: Any, busy_ms: int, *, wait: Callable[[float], None] = time.sleep
) -> None:
    """Set the module docstring's pragmas on a new connection (sqlite3's, or SQLAlchemy's
    adapter of aiosqlite's). ``wait`` sleeps between tries of the switch to WAL."""
    dbapi_connection.isolation_level = None  # SQLAlchemy, not the driver, emits BEGIN
    cursor = dbapi_connection.cursor()
    try:
        cursor.execute(f"PRAGMA busy_timeout={busy_ms}")
        _switch_to_wal(cursor, busy_ms, wait)
        for pragma in _SQLITE_PRAGMAS:
            cursor.execute(f"PRAGMA {pragma}")
    finally:
        cursor.close()


def _switch_to_wal(cursor: Any, busy_ms: int, wait: Callable[[float], None]) -> None:
    """``journal_mode=WAL``, tried again until ``busy_ms`` have passed while the file is
    locked. The switch needs the file to itself for a moment, and SQLite fails it at once,
    without its busy handler, while another connection writes to the file or switches it
    too: two stores (or processes) opening a new file at once failed "database is locked".
    Once the file is WAL, the pragma takes no such lock (the mode is kept in the file)."""
    deadline = time.monotonic() + busy_ms / 1000
    pause = 0.001
    while True:
        try:
            cursor.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            left = deadline - time.monotonic()
            if getattr(exc, "sqlite_errorcode", 0) & 0xFF != sqlite3.SQLITE_BUSY or left <= 0:
                raise
            wait(min(pause, left))
            pause = min(pause * 2, 0.05)


def _wait_on_the_loop(seconds: float) -> None:
    """A pause inside SQLAlchemy's adapter (a greenlet on the event loop): the loop runs."""
    await_only(asyncio.sleep(seconds))


def writing(engine: AsyncEngine) -> AsyncEngine:
    """``engine`` for write transactions: on SQLite they begin ``IMMEDIATE`` (module
    docstring); elsewhere it is the same engine. Shares ``engine``'s pool."""
    return engine.execution_options(**{_WRITING: True})


def _on_sqlite_begin(connection: Any) -> None:
    driver = connection.connection.driver_connection  # the aiosqlite connection
    statement = "BEGIN IMMEDIATE" if connection.get_execution_options().get(_WRITING) else "BEGIN"
    try:
        await_only(driver.execute_fetchall(statement))
    except (sqlite3.Error, ValueError) as exc:  # ValueError: aiosqlite's "Connection closed"
        raise OperationalError(statement, None, exc) from exc


@asynccontextmanager
async def migrating(engine: AsyncEngine) -> AsyncIterator[AsyncConnection]:
    """A connection in one transaction for a migration, committed when the block ends.

    On SQLite a migration alters a table by copying it and dropping the old one. With
    foreign keys on, that drop deletes the rows that refer to the old table (ON DELETE
    CASCADE): copying ``games`` deleted every game's actions. As SQLite's own procedure
    for such changes says, they are off for the migration (the pragma works only
    outside a transaction), checked before the commit (a row the migration left without
    the row it refers to fails it, and it is rolled back; one that was so before is
    logged, and kept), and on again after.
    """
    async with engine.connect() as connection:
        sqlite = connection.dialect.name == "sqlite"
        if sqlite:
            await _outside_transaction(connection, "PRAGMA foreign_keys=OFF")
        try:
            async with connection.begin():
                before = await _broken_references(connection) if sqlite else Counter[str]()
                yield connection
                if sqlite:
                    after = await _broken_references(connection)
                    added = after - before
                    if added:
                        raise StoreError(
                            f"the migration would leave {added.total()} rows of "
                            f"{', '.join(sorted(added))} without the rows they refer to; "
                            "nothing was changed"
                        )
                    if after:
                        log.warning(
                            "%d rows of %s refer to rows that are not there, as before the "
                            "migration: kept as they were",
                            after.total(),
                            ", ".join(sorted(after)),
                        )
        finally:
            if sqlite and not connection.closed and not connection.invalidated:
                await _outside_transaction(connection, "PRAGMA foreign_keys=ON")


async def _broken_references(connection: AsyncConnection) -> Counter[str]:
    """SQLite's rows that refer to a row that is not there, counted per table."""
    result = await connection.exec_driver_sql("PRAGMA foreign_key_check")
    return Counter(str(row[0]) for row in result.fetchall())


async def _outside_transaction(connection: AsyncConnection, statement: str) -> None:
    """Run ``statement`` on SQLite through the driver, outside any transaction."""
    raw = await connection.get_raw_connection()
    await raw.driver_connection.execute(statement)  # type: ignore[union-attr]
