"""SQLite's reads on the event loop's thread (``sqlite_reader``); what both hot readers
read is in test_hot_reads."""

from __future__ import annotations

import asyncio
import sqlite3
import threading

import pytest

from server.store import SchemaOutdated, Store, StoreUnavailable
from server.store.sqlite_reader import SqliteReader
from tests.server.store.conftest import move, new_game


@pytest.fixture
def database_url(tmp_path: object) -> str:
    return f"sqlite+aiosqlite:///{tmp_path}/store.db"


def reader_of(store: Store) -> SqliteReader:
    reader = store._sqlite_reader
    assert reader is not None
    return reader


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


async def test_a_returning_players_reads_are_prepared_once(store: Store) -> None:
    """SQLite compiles a statement again when a value bound in it decides its plan (as
    the status did, against the partial index of active games); the authorizer it
    calls while compiling tells. Once each statement is compiled, signing in and
    loading other players' games compiles nothing."""
    tokens = []
    for name in ("anna", "bert", "cleo"):
        player, token = await store.create_player(name)
        await store.create_game(player.id, "classic", 1)
        tokens.append(token)
    reader = reader_of(store)
    compiling = 0

    def authorizer(*_args: object) -> int:
        nonlocal compiling
        compiling += 1
        return sqlite3.SQLITE_OK

    reader._connection().set_authorizer(authorizer)  # every statement compiles once again
    signed_in = await store.sign_in(tokens[0])
    assert signed_in is not None
    await store.load_game(signed_in[1][0].id)
    assert compiling > 0
    compiling = 0
    for token in tokens[1:]:
        signed_in = await store.sign_in(token)
        assert signed_in is not None and len(signed_in[1]) == 1
        record, _log = await store.load_game(signed_in[1][0].id)
        assert record is not None
    assert compiling == 0
