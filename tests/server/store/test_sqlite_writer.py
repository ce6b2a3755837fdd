"""SQLite's writer thread: durable like the general path, and visible to every reader."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from server.store import Ending, GameWrite, Store, VersionConflict
from server.store.records import Progress
from server.store.sqlite_writer import SqliteWriter
from tests.server.store.conftest import move, new_game


@pytest.fixture
def database_url(tmp_path: object) -> str:
    return f"sqlite+aiosqlite:///{tmp_path}/store.db"


async def test_its_connection_commits_to_disk_before_returning(store: Store) -> None:
    game = await new_game(store)
    await store.commit(move(game.id, 0))
    writer = store._sqlite_writer
    assert writer is not None

    def pragmas() -> tuple[object, ...]:
        conn = writer._connection()
        return tuple(
            conn.execute(f"PRAGMA {name}").fetchone()[0]
            for name in ("journal_mode", "synchronous", "foreign_keys")
        )

    loop = asyncio.get_running_loop()
    assert await loop.run_in_executor(writer._thread, pragmas) == ("wal", 2, 1)  # 2: FULL


async def test_a_batch_it_commits_is_what_another_connection_reads(
    store: Store, engine: AsyncEngine
) -> None:
    game = await new_game(store)
    first, stale = await asyncio.gather(
        store.commit(move(game.id, 0, request_id="a")),
        store.commit(move(game.id, 0, request_id="b")),
        return_exceptions=True,
    )
    assert not isinstance(first, BaseException) and first.game.version == 1
    assert isinstance(stale, VersionConflict)
    async with engine.connect() as conn:
        rows = (await conn.execute(text("SELECT seq, request_id FROM game_actions"))).all()
        version = (await conn.execute(text("SELECT version FROM games"))).scalar_one()
    assert [tuple(row) for row in rows] == [(1, "a")] and version == 1


def test_only_plain_actions_take_it() -> None:
    plain = move(1, 0)
    ending = GameWrite(1, 0, Progress(), ending=Ending.RESIGNED)
    assert SqliteWriter.takes([plain, plain])
    assert not SqliteWriter.takes([plain, ending])
