"""PostgreSQL's hot reads on kept connections: no pool, no BEGIN, the same errors."""

from __future__ import annotations

import asyncio
import time
from datetime import timedelta
from typing import Any

import asyncpg
import pytest
from sqlalchemy import event, text
from sqlalchemy.ext.asyncio import AsyncEngine

from server.store import SchemaOutdated, Store, StoreUnavailable, pg_reader
from server.store.pg_reader import READ_BATCH, READS_HELD, PostgresReader
from tests.server.store.conftest import move, new_game


@pytest.fixture
def database_url(postgres_url: str | None) -> str:
    if postgres_url is None:
        pytest.skip("needs a PostgreSQL database (SCORPION_TEST_DATABASE_URL)")
    return postgres_url


async def on_every_connection(store: Store, game_id: int, reads: int = READS_HELD) -> list[Any]:
    """``reads`` reads at once, at least one on each kept connection: the owner of
    ``game_id``, then of games that do not exist (a read asked twice while it waits is
    read once)."""
    missing = (10**12 + n for n in range(reads - 1))
    return await asyncio.gather(*(store.game_owner(g) for g in (game_id, *missing)))


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
    await on_every_connection(store, game.id)
    kept = [held._driver for held in reader_of(store)._all]
    async with engine.connect() as conn:
        for driver in kept:
            pid = driver.get_server_pid()
            await conn.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
    deadline = time.monotonic() + 10
    while not all(driver.is_closed() for driver in kept):  # the goodbye is read
        assert time.monotonic() < deadline
        await asyncio.sleep(0.01)
    owners = await on_every_connection(store, game.id, 2 * READS_HELD)
    assert owners == [game.player_id] + [None] * (2 * READS_HELD - 1)
    assert not {id(held._driver) for held in reader_of(store)._all} & {id(d) for d in kept}


async def test_a_failing_read_is_the_general_paths_error_and_drops_its_connection(
    store: Store,
) -> None:
    game = await new_game(store)
    await on_every_connection(store, game.id)
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
    await on_every_connection(store, game.id)
    real = pg_reader._rows

    async def closed_under_it(*_: Any, **__: Any) -> Any:
        monkeypatch.setattr(pg_reader, "_rows", real)  # once
        raise asyncpg.InternalClientError("cannot switch to state 12")

    monkeypatch.setattr(pg_reader, "_rows", closed_under_it)
    with pytest.raises(StoreUnavailable):
        await store.game_owner(game.id)
    assert sum(held._driver is None for held in reader_of(store)._all) == 1  # dropped
    assert await store.game_owner(game.id) == game.player_id


def count_statements(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, dict[str, Any]]]:
    """Each statement the kept connections send from now on: (query, its values)."""
    sent: list[tuple[Any, dict[str, Any]]] = []
    real = pg_reader._rows

    async def counted(driver: Any, query: Any, **values: Any) -> Any:
        sent.append((query, values))
        return await real(driver, query, **values)

    monkeypatch.setattr(pg_reader, "_rows", counted)
    return sent


async def test_restores_waiting_together_are_one_statement_each_read_as_alone(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    games = [await new_game(store, f"p{n}") for n in range(100)]
    for n, game in enumerate(games):
        for v in range(n % 4):
            await store.commit(move(game.id, v))
    alone = [await store.restore_game(game.id) for game in games]
    wanted = [game.id for game in games] + [games[50].id, 10**9]  # one twice, one missing
    sent = count_statements(monkeypatch)
    found = await asyncio.gather(*(store.restore_game(game_id) for game_id in wanted))
    assert found == [*alone, alone[50], (None, None, [])]
    # The first reads go alone, one per kept connection; the rest wait and go together.
    assert len(sent) <= READS_HELD + 2, [len(values["game_ids"]) for _q, values in sent]
    assert max(len(values["game_ids"]) for _q, values in sent) <= READ_BATCH
    asked = sorted(game_id for _q, values in sent for game_id in values["game_ids"])
    assert asked == sorted({*wanted})  # each game read once: both asks of one waited


async def test_sign_ins_waiting_together_are_one_statement_each_as_alone(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    tokens = []
    for n in range(40):
        player, token = await store.create_player(f"p{n}")
        if n % 2:
            await store.create_game(player.id, "classic", n)
        tokens.append(token)
    tokens += [tokens[3], "no such token"]
    alone = [await store.sign_in(token) for token in tokens]
    assert alone[-1] is None and alone[1] is not None and len(alone[1][1]) == 1
    sent = count_statements(monkeypatch)
    assert await asyncio.gather(*(store.sign_in(token) for token in tokens)) == alone
    assert len(sent) <= READS_HELD + 1
    day = timedelta(days=1)
    expiring = await asyncio.gather(*(store.sign_in(token, max_age=day) for token in tokens))
    assert expiring == alone
    expired = timedelta(seconds=-1)
    assert await asyncio.gather(*(store.sign_in(t, max_age=expired) for t in tokens)) == [
        None
    ] * len(tokens)


async def test_a_failed_batch_fails_each_of_its_reads_and_the_next_ones_go_through(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    games = [await new_game(store, f"p{n}") for n in range(30)]
    await on_every_connection(store, games[0].id)
    reader = reader_of(store)
    query = reader._restoring
    sql, query.sql = query.sql, "SELECT * FROM no_such_table WHERE id = ANY($2::BIGINT[])"
    failed = await asyncio.gather(
        *(store.restore_game(game.id) for game in games), return_exceptions=True
    )
    assert failed and all(isinstance(each, SchemaOutdated) for each in failed), failed
    assert len({id(each) for each in failed}) == len(failed)  # an error of its own each
    query.sql = sql
    found = await asyncio.gather(*(store.restore_game(game.id) for game in games))
    assert [record.id for record, _snapshot, _log in found if record] == [g.id for g in games]


async def test_a_reader_that_stops_waiting_leaves_the_others_their_answer(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    games = [await new_game(store, f"p{n}") for n in range(20)]
    reads = [asyncio.ensure_future(store.restore_game(game.id)) for game in games * 2]
    await asyncio.sleep(0)
    for read in reads[::3]:
        read.cancel()
    for read, game in zip(reads, games * 2, strict=True):
        if not read.cancelled():
            try:
                record, _snapshot, _log = await read
            except asyncio.CancelledError:
                continue
            assert record is not None and record.id == game.id
    assert len(reader_of(store)._free) == READS_HELD
