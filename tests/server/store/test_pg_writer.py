"""PostgreSQL's one-statement write path: one round trip, the same guarantees."""

from __future__ import annotations

import asyncio
import time
from typing import Any
from unittest.mock import patch

import asyncpg
import pytest
from sqlalchemy import event, text
from sqlalchemy.ext.asyncio import AsyncEngine

from server.store import Ending, GameWrite, Store, VersionConflict
from server.store.pg_writer import MAX_BATCH, PostgresWriter
from server.store.records import NewAction, Progress
from server.store.writes import POSTGRESQL_ALONE, POSTGRESQL_ONE
from tests.server.store.conftest import move, new_game


@pytest.fixture
def database_url(postgres_url: str | None) -> str:
    if postgres_url is None:
        pytest.skip("needs a PostgreSQL database (SCORPION_TEST_DATABASE_URL)")
    return postgres_url


async def test_a_batch_is_one_statement_heard_as_one_notification(
    store: Store, database_url: str
) -> None:
    games = [await new_game(store, f"p{n}") for n in range(12)]
    other = Store.connect(database_url)
    heard: list[list[int]] = []
    arrived = asyncio.Event()

    def change(game_ids: list[int]) -> None:
        heard.append(game_ids)
        arrived.set()

    await other.listen(change, lambda: None)
    begins: list[Any] = []

    def begin(connection: Any) -> None:
        begins.append(connection)

    event.listen(store._engine.sync_engine, "begin", begin)
    try:
        done = await asyncio.gather(*(store.commit(move(game.id, 0)) for game in games))
        await asyncio.wait_for(arrived.wait(), 10)
    finally:
        event.remove(store._engine.sync_engine, "begin", begin)
        await other.close()
    assert [d.game.version for d in done] == [1] * len(games)
    assert store.commit_stats.transactions == 1
    assert begins == []  # no BEGIN, no COMMIT: the statement is its own transaction
    assert heard == [sorted(game.id for game in games)]
    for game in games:
        actions = await store.load_actions(game.id)
        assert [(a.seq, a.card) for a in actions] == [(1, "4H")]


async def test_a_connection_the_server_closed_is_replaced(
    store: Store, engine: AsyncEngine
) -> None:
    game = await new_game(store)
    await store.commit(move(game.id, 0))
    writer = store._pg_writer
    assert writer is not None and writer._held._driver is not None
    held = writer._held._driver
    async with engine.connect() as conn:
        pid = held.get_server_pid()
        await conn.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
    deadline = time.monotonic() + 10
    while not held.is_closed():  # the driver reads the server's goodbye
        assert time.monotonic() < deadline
        await asyncio.sleep(0.01)
    done = await store.commit(move(game.id, 1))
    assert done.game.version == 2
    assert writer._held._driver is not held


async def test_a_refused_write_leaves_the_connection_in_use(store: Store) -> None:
    game = await new_game(store)
    await store.commit(move(game.id, 0))
    writer = store._pg_writer
    assert writer is not None
    held = writer._held._driver
    with pytest.raises(VersionConflict) as caught:
        await store.commit(move(game.id, 0))
    assert (caught.value.current, caught.value.status) == (1, "active")
    assert writer._held._driver is held
    assert (await store.commit(move(game.id, 1))).game.version == 2


async def test_a_lone_action_takes_a_value_per_parameter_and_stores_as_a_batch_does(
    store: Store, database_url: str
) -> None:
    """A batch of one goes as ``POSTGRESQL_ONE`` (no arrays of one element): the same
    rows as ``POSTGRESQL_ALONE`` stores, the same notification to other nodes."""
    lone, batched, peer = [await new_game(store, f"p{n}") for n in range(3)]
    hint = NewAction("hint", None, None, 2500, "move", "4H", 7, "safe")

    def write(game: int) -> GameWrite:
        return GameWrite(game, 0, Progress(hints=1, score=-5, time_ms=2500), hint, "r-1")

    other = Store.connect(database_url)
    heard: list[list[int]] = []
    await other.listen(heard.append, lambda: None)
    sent: list[str] = []
    fetch = asyncpg.Connection.fetch

    async def recorded(self: asyncpg.Connection, query: str, *args: Any, **kw: Any) -> Any:
        sent.append(query)
        return await fetch(self, query, *args, **kw)

    try:
        with patch.object(asyncpg.Connection, "fetch", recorded):
            alone = await store.commit(write(lone.id))
            together = await asyncio.gather(
                store.commit(write(batched.id)), store.commit(move(peer.id, 0))
            )
        deadline = time.monotonic() + 10
        while len(heard) < 2:
            assert time.monotonic() < deadline
            await asyncio.sleep(0.01)
    finally:
        await other.close()
    assert sent == [POSTGRESQL_ONE, POSTGRESQL_ALONE]
    assert heard == [[lone.id], sorted([batched.id, peer.id])]
    mine, theirs = alone.game, together[0].game
    differ = {"id", "player_id", "created_at", "updated_at", "time_at"}
    assert {k: v for k, v in mine._asdict().items() if k not in differ} == {
        k: v for k, v in theirs._asdict().items() if k not in differ
    }
    (stored,) = await store.load_actions(lone.id)
    (stored_too,) = await store.load_actions(batched.id)
    assert stored == alone.action == stored_too._replace(game_id=lone.id)


def test_only_plain_actions_on_distinct_games_take_it() -> None:
    ending = GameWrite(1, 0, Progress(), ending=Ending.RESIGNED)
    assert PostgresWriter.takes([move(1, 0), move(2, 0)])
    assert not PostgresWriter.takes([move(1, 0), move(1, 1)])  # two rounds
    assert not PostgresWriter.takes([move(1, 0), ending])
    assert not PostgresWriter.takes([])
    assert not PostgresWriter.takes([move(n, 0) for n in range(MAX_BATCH + 1)])
