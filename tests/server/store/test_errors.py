"""Failures reach callers as the store's own errors, without SQL."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event, text
from sqlalchemy import exc as sa_exc
from sqlalchemy.util import await_only

from server.store import (
    NameTaken,
    Store,
    StoreAccessRefused,
    StoreConflict,
    StoreError,
    StoreUnavailable,
    VersionConflict,
)
from server.store.database import create_engine
from server.store.errors import translate_errors
from tests.server.fake_pg import FakePostgres
from tests.server.store.conftest import PG_VARIABLE, move, new_game

SQL_WORDS = ("SELECT", "INSERT", "UPDATE", "FROM", "WHERE", "[SQL", "sqlalche.me")


def assert_no_sql(error: BaseException) -> None:
    text = str(error)
    assert not [word for word in SQL_WORDS if word in text], text


async def test_an_unreachable_server_is_unavailable() -> None:
    store = Store.connect("postgresql+asyncpg://nobody@127.0.0.1:1/none")
    try:
        with pytest.raises(StoreUnavailable) as caught:
            await store.get_game(1)
        assert_no_sql(caught.value)
        assert caught.value.__cause__ is not None  # the detail stays for the log
    finally:
        await store.close()


async def test_a_connection_lost_while_it_is_set_up_is_unavailable(
    postgres_url: str | None,
) -> None:
    """A backend terminated while the pool set its new connection up (the
    ``statement_timeout`` statement) raised asyncpg's own error, which no mapping knew:
    the request was answered ``internal`` and logged at ERROR, 4 in 67 under repeated
    ``pg_terminate_backend``, where the database's outage is ``unavailable``."""
    if postgres_url is None:
        pytest.skip(f"PostgreSQL tests need {PG_VARIABLE}")
    engine = create_engine(postgres_url, timeout=5)

    def cut(dbapi_connection: Any, _record: Any) -> None:  # before the statement is set
        await_only(dbapi_connection.driver_connection.close())

    event.listen(engine.sync_engine, "connect", cut, insert=True)
    try:
        with pytest.raises(StoreUnavailable), translate_errors():
            async with engine.connect() as conn:
                await conn.execute(text("SELECT 1"))
    finally:
        await engine.dispose()


async def aiosqlite_threads_stopped() -> None:
    """Wait for aiosqlite's worker threads to end while this test's loop is still open.

    aiosqlite 0.22 stops the thread of a connection that failed to open without
    awaiting it; if the loop closes first, the thread raises "Event loop is
    closed" into the next test (omnilib/aiosqlite#370, #387).
    """
    for _ in range(500):
        if not [t for t in threading.enumerate() if "_connection_worker_thread" in t.name]:
            return
        await asyncio.sleep(0.01)


async def test_an_unopenable_sqlite_file_is_unavailable(tmp_path: Path) -> None:
    store = Store.connect(f"sqlite+aiosqlite:///{tmp_path}/missing/dir/db.sqlite")
    try:
        with pytest.raises(StoreUnavailable):
            await store.schema_status()
    finally:
        await store.close()
        await aiosqlite_threads_stopped()


def test_other_databases_are_refused() -> None:
    with pytest.raises(ValueError, match="unsupported database 'mysql'"):
        Store.connect("mysql://localhost/x")


async def test_plain_urls_get_the_async_driver(tmp_path: Path) -> None:
    store = Store.connect(f"sqlite:///{tmp_path}/plain.db")
    try:
        assert store.backend == "sqlite"
        assert await store.schema_status() == "empty"
    finally:
        await store.close()


async def test_refusals_carry_no_sql(store: Store) -> None:
    game = await new_game(store)
    await store.commit(move(game.id, 0))
    with pytest.raises(VersionConflict) as conflict:
        await store.commit(move(game.id, 0))
    with pytest.raises(NameTaken) as taken:
        await store.create_player("ANNA")
    for error in (conflict.value, taken.value):
        assert_no_sql(error)


async def test_a_closed_store_refuses_commits(store: Store) -> None:
    game = await new_game(store)
    await store.close()
    with pytest.raises(StoreUnavailable, match="closed"):
        await store.commit(move(game.id, 0))


def test_translation_leaves_other_exceptions_alone() -> None:
    with pytest.raises(KeyError), translate_errors():
        raise KeyError("x")
    with pytest.raises(StoreError, match="mine"), translate_errors():
        raise StoreError("mine")


@pytest.mark.parametrize(
    ("sqlstate", "message"),
    [
        ("57P03", "the database system is shutting down"),
        ("57P03", "the database system is starting up"),
        ("53300", "sorry, too many clients already"),
        ("55000", 'database "scorpion" is not currently accepting connections'),
    ],
)
async def test_a_database_refusing_connections_for_now_is_unavailable(
    sqlstate: str, message: str
) -> None:
    async with FakePostgres() as fake:
        store = Store.connect(fake.refuse(sqlstate, message).url)
        try:
            with pytest.raises(StoreUnavailable) as caught:
                await store.get_game(1)
            assert_no_sql(caught.value)
        finally:
            await store.close()


@pytest.mark.parametrize(
    ("sqlstate", "message"),
    [
        ("3D000", 'database "scorpion" does not exist'),
        ("28000", 'role "scorpion" is not permitted to log in'),
        ("28P01", 'password authentication failed for user "scorpion"'),
    ],
)
async def test_a_database_refusing_this_servers_access_is_unavailable(
    sqlstate: str, message: str
) -> None:
    """A database renamed or dropped under a running node, or its role's login taken
    away, made every request that connected ``internal``, logged as a bug: it is an
    outage, which the operator ends by giving access back."""
    async with FakePostgres() as fake:
        store = Store.connect(fake.refuse(sqlstate, message).url)
        try:
            with pytest.raises(StoreAccessRefused) as caught:
                await store.get_game(1)
            assert isinstance(caught.value, StoreUnavailable)
            assert_no_sql(caught.value)
        finally:
            await store.close()


def _driver_error(sqlstate: str) -> sa_exc.DBAPIError:
    class DriverError(Exception):
        pass

    orig = DriverError("detail")
    orig.sqlstate = sqlstate  # type: ignore[attr-defined]
    return sa_exc.DBAPIError("SELECT 1", None, orig)


@pytest.mark.parametrize("sqlstate", ["57014", "57P01", "40001", "40P01", "08006", "25006"])
def test_transient_sqlstates_are_unavailable(sqlstate: str) -> None:
    with pytest.raises(StoreUnavailable), translate_errors():
        raise _driver_error(sqlstate)


@pytest.mark.parametrize("sqlstate", ["40001", "40P01"])
def test_a_deadlock_or_serialization_failure_is_a_conflict(sqlstate: str) -> None:
    with pytest.raises(StoreConflict), translate_errors():
        raise _driver_error(sqlstate)


@pytest.mark.parametrize("sqlstate", ["57014", "57P01", "08006"])
def test_an_outage_is_no_conflict(sqlstate: str) -> None:
    with pytest.raises(StoreUnavailable) as caught, translate_errors():
        raise _driver_error(sqlstate)
    assert not isinstance(caught.value, StoreConflict)


@pytest.mark.parametrize("sqlstate", ["42601", "22003", "XX000"])
def test_other_sqlstates_are_store_errors(sqlstate: str) -> None:
    with pytest.raises(StoreError) as caught, translate_errors():
        raise _driver_error(sqlstate)
    assert not isinstance(caught.value, StoreUnavailable)


def test_a_timed_out_statement_is_unavailable() -> None:
    with pytest.raises(StoreUnavailable), translate_errors():
        raise TimeoutError


def test_a_privilege_taken_away_is_unavailable_not_a_bug() -> None:
    """A role whose grants were changed while the node runs (``REVOKE UPDATE ON games``):
    every move was ``internal``, logged at ERROR as a bug. It is the operator's to fix
    and a retry may succeed then: ``unavailable``."""
    with pytest.raises(StoreAccessRefused) as caught, translate_errors():
        raise _driver_error("42501")
    assert "privilege" in str(caught.value)


async def test_a_transaction_left_open_by_a_frozen_node_gives_its_locks_up(
    postgres_url: str | None,
) -> None:
    """A node stopped inside a transaction of several statements (a win, the play-time
    bank; by SIGSTOP, or a network partition) kept its rows locked until PostgreSQL's
    keepalive gave up, two hours, and every other node answered ``unavailable`` to its
    players: PostgreSQL ends a transaction left idle for longer than the timeout."""
    if postgres_url is None:
        pytest.skip(f"PostgreSQL tests need {PG_VARIABLE}")
    frozen = create_engine(postgres_url, timeout=0.5)
    other = create_engine(postgres_url, timeout=10)
    try:
        async with other.begin() as conn:
            await conn.execute(text("CREATE TABLE IF NOT EXISTS idle_probe (id int PRIMARY KEY)"))
            await conn.execute(text("INSERT INTO idle_probe VALUES (1) ON CONFLICT DO NOTHING"))
        lock = text("SELECT id FROM idle_probe WHERE id = 1 FOR UPDATE")
        async with frozen.connect() as node:
            await node.begin()
            await node.execute(lock)
            # The node stops here, its transaction open. Another takes the row:
            started = time.monotonic()
            async with other.begin() as conn:
                assert (await conn.execute(lock)).scalar_one() == 1
            assert time.monotonic() - started < 5
            with pytest.raises(StoreUnavailable), translate_errors():
                await node.execute(text("SELECT 1"))
    finally:
        await frozen.dispose()
        await other.dispose()
