"""SQLite's reader thread: the same records as the general path, many reads per trip."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from dataclasses import replace
from datetime import timedelta

import pytest

from server.store import SchemaOutdated, Store, StoreUnavailable
from server.store import games as game_reads
from server.store import players as player_reads
from server.store.records import NewAction
from server.store.sqlite_reader import SqliteReader
from tests.server.store.conftest import move, new_game


@pytest.fixture
def database_url(tmp_path: object) -> str:
    return f"sqlite+aiosqlite:///{tmp_path}/store.db"


def reader_of(store: Store) -> SqliteReader:
    reader = store._sqlite_reader
    assert reader is not None
    return reader


async def test_it_reads_what_the_general_path_reads(store: Store) -> None:
    player, token = await store.create_player("anna")
    game = await store.create_game(player.id, "classic", 1)
    await store.commit(move(game.id, 0, request_id="r1"))
    hinted = NewAction(
        "hint", None, None, 2500, hint_action="move", hint_card="4H", hint_to=7, hint_reason="safe"
    )
    await store.commit(replace(move(game.id, 1), action=hinted))
    await store.commit(move(game.id, 2))

    async with store._reading() as conn:
        general_player = await player_reads.fetch_player_by_token(conn, token)
        general_games = await game_reads.fetch_games(conn, player.id, game.status, None)
        general_game = await game_reads.fetch_game(conn, game.id)
        general_log = await game_reads.fetch_actions(conn, game.id, 1)
        general_owner = await game_reads.fetch_owner(conn, game.id)

    assert await store.sign_in(token) == (general_player, general_games)
    assert await store.load_game(game.id, 1) == (general_game, general_log)
    assert await store.game_owner(game.id) == general_owner == player.id
    record, log = await store.load_game(game.id)
    assert record is not None and record.version == 3 and [a.seq for a in log] == [1, 2, 3]
    assert log[1].hint_card == "4H" and log[1].hint_reason == "safe" and log[0].request_id == "r1"
    assert record.created_at.tzinfo is not None and log[0].created_at.tzinfo is not None


async def test_it_answers_none_for_what_is_not_there(store: Store) -> None:
    assert await store.sign_in("no such token") is None
    assert await store.game_owner(12345) is None
    assert await store.load_game(12345) == (None, [])


async def test_an_expired_token_signs_nobody_in(store: Store) -> None:
    _player, token = await store.create_player("anna")
    assert await store.sign_in(token, max_age=timedelta(days=1)) is not None
    assert await store.sign_in(token, max_age=timedelta(seconds=-1)) is None


async def test_a_read_sees_only_committed_state(store: Store) -> None:
    game = await new_game(store)
    await store.commit(move(game.id, 0))
    path = store._engine.url.database
    assert path is not None
    other = sqlite3.connect(path, isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")
        other.execute("UPDATE games SET version = 99 WHERE id = ?", (game.id,))
        record, log = await store.load_game(game.id)  # the writer has not committed
        assert record is not None and record.version == 1 and len(log) == 1
        other.execute("ROLLBACK")
    finally:
        other.close()


async def test_it_reads_on_the_event_loops_thread(store: Store) -> None:
    game = await new_game(store)
    reader = reader_of(store)
    threads = set()
    real = reader._connection

    def connection() -> sqlite3.Connection:
        threads.add(threading.get_ident())
        return real()

    reader._connection = connection  # type: ignore[method-assign]
    owners = await asyncio.gather(*(store.game_owner(game.id) for _ in range(50)))
    assert set(owners) == {game.player_id}
    assert threads == {threading.get_ident()}


async def test_a_failing_read_is_a_store_error_and_the_next_one_reads(store: Store) -> None:
    game = await new_game(store)
    query = reader_of(store)._owner
    sql, query.sql = query.sql, "SELECT player_id FROM no_such_table WHERE id = ?"
    with pytest.raises(SchemaOutdated):  # as the general path says of a missing table
        await store.game_owner(game.id)
    query.sql = sql
    assert await store.game_owner(game.id) == game.player_id


async def test_after_close_it_refuses(store: Store) -> None:
    await store.close()
    with pytest.raises(StoreUnavailable):
        await store.game_owner(1)
