"""PostgreSQL's hot reads on kept connections: no pool, no BEGIN, the same errors."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import asyncpg
import pytest
from sqlalchemy import event, text
from sqlalchemy.ext.asyncio import AsyncEngine

from server.store import SchemaOutdated, Store, StoreUnavailable, pg_reader
from server.store.pg_reader import READS_HELD, PostgresReader
from tests.server.store.conftest import move, new_game


@pytest.fixture
def database_url(postgres_url: str | None) -> str:
    if postgres_url is None:
        pytest.skip("needs a PostgreSQL database (SCORPION_TEST_DATABASE_URL)")
    return postgres_url


def reader_of(store: Store) -> PostgresReader:
    reader = store._pg_reader
    assert reader is not None
    return reader


async def test_reads_take_nothing_from_the_pool_once_their_connections_are_kept(
    store: Store,
) -> None:
    game = await new_game(store)
    await store.commit(move(game.id, 0))
    for _ in range(READS_HELD):  # each kept connection is checked out at its first read
        assert await store.game_owner(game.id) == game.player_id
    seen: list[str] = []
    engine = store._engine.sync_engine
    listeners: list[tuple[str, Any]] = [
        ("checkout", lambda *_: seen.append("checkout")),
        ("begin", lambda *_: seen.append("begin")),
    ]
    for name, listener in listeners:
        event.listen(engine, name, listener)
    try:
        for _ in range(10):
            record, log = await store.load_game(game.id)
            assert record is not None and record.version == 1 and len(log) == 1
            assert await store.game_owner(game.id) == game.player_id
    finally:
        for name, listener in listeners:
            event.remove(engine, name, listener)
    assert seen == []


async def test_many_reads_at_once_share_the_kept_connections(store: Store) -> None:
    games = [await new_game(store, f"p{n}") for n in range(6)]
    for game in games:
        await store.commit(move(game.id, 0))
    found = await asyncio.gather(*(store.load_game(g.id) for g in games * 10))
    assert [(r.id, r.version, len(log)) for r, log in found if r] == [
        (g.id, 1, 1) for g in games * 10
    ]
    drivers = {id(held._driver) for held in reader_of(store)._all}
    assert len(drivers) == READS_HELD


async def test_a_kept_connection_the_server_closed_is_replaced(
    store: Store, engine: AsyncEngine
) -> None:
    game = await new_game(store)
    await asyncio.gather(*(store.game_owner(game.id) for _ in range(READS_HELD)))
    kept = [held._driver for held in reader_of(store)._all]
    async with engine.connect() as conn:
        for driver in kept:
            pid = driver.get_server_pid()
            await conn.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
    deadline = time.monotonic() + 10
    while not all(driver.is_closed() for driver in kept):  # the goodbye is read
        assert time.monotonic() < deadline
        await asyncio.sleep(0.01)
    owners = await asyncio.gather(*(store.game_owner(game.id) for _ in range(2 * READS_HELD)))
    assert owners == [game.player_id] * 2 * READS_HELD
    assert not {id(held._driver) for held in reader_of(store)._all} & {id(d) for d in kept}


async def test_a_failing_read_is_the_general_paths_error_and_drops_its_connection(
    store: Store,
) -> None:
    game = await new_game(store)
    await asyncio.gather(*(store.game_owner(game.id) for _ in range(READS_HELD)))
    reader = reader_of(store)
    query = reader._owner
    sql, query.sql = query.sql, "SELECT player_id FROM no_such_table WHERE id = $1::BIGINT"
    with pytest.raises(SchemaOutdated):  # as the general path says of a missing table
        await store.game_owner(game.id)
    query.sql = sql
    assert sum(held._driver is None for held in reader._all) == 1  # dropped, not reused
    assert await store.game_owner(game.id) == game.player_id


async def test_a_connection_closed_under_a_read_is_unavailable_not_internal(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """asyncpg says ``InternalClientError`` ("another operation is in progress") for a
    read sent the moment the server ended its connection; it is an outage, not a bug."""
    game = await new_game(store)
    await asyncio.gather(*(store.game_owner(game.id) for _ in range(READS_HELD)))
    real = pg_reader._rows

    async def closed_under_it(*_: Any, **__: Any) -> Any:
        monkeypatch.setattr(pg_reader, "_rows", real)  # once
        raise asyncpg.InternalClientError("cannot switch to state 12")

    monkeypatch.setattr(pg_reader, "_rows", closed_under_it)
    with pytest.raises(StoreUnavailable):
        await store.game_owner(game.id)
    assert sum(held._driver is None for held in reader_of(store)._all) == 1  # dropped
    assert await store.game_owner(game.id) == game.player_id
