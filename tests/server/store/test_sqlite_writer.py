"""SQLite's writer thread: durable like the general path, and visible to every reader."""

from __future__ import annotations

import asyncio
import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from server.store import Ending, GameWrite, Store, VersionConflict, sqlite_writer
from server.store.records import Committed, Progress
from server.store.sqlite_writer import SqliteWriter
from tests.server.store.conftest import move, new_game


@pytest.fixture
def database_url(tmp_path: Path) -> str:
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


async def test_a_lone_write_and_a_batch_store_the_same_rows(
    store: Store, engine: AsyncEngine
) -> None:
    """A round of one write takes plain parameters, a larger one JSON rows: the same
    statements otherwise, so the same rows and the same records come back."""
    writer = store._sqlite_writer
    assert writer is not None
    one, two, three = [await new_game(store, name=name) for name in ("a", "b", "c")]
    now = datetime(2026, 12, 2, 2, 0, 0, 123456, tzinfo=UTC)
    lone = await writer.write([move(one.id, 0, request_id="r")], now)
    batch = await writer.write([move(two.id, 0, request_id="r"), move(three.id, 0)], now)
    assert all(isinstance(outcome, Committed) for outcome in [*lone, *batch])
    refused = await writer.write([move(one.id, 0)], now)  # stale now
    assert isinstance(refused[0], VersionConflict) and refused[0].current == 1

    async def rows(game: int) -> list[tuple[object, ...]]:
        async with engine.connect() as conn:
            found = await conn.execute(
                text(
                    "SELECT g.version, g.moves, g.score, g.time_ms, g.status, g.updated_at,"
                    " g.finished_at, a.seq, a.type, a.card, a.to_col, a.t, a.request_id,"
                    " a.created_at FROM games g JOIN game_actions a ON a.game_id = g.id"
                    " WHERE g.id = :game"
                ),
                {"game": game},
            )
            return [tuple(row) for row in found]

    assert await rows(one.id) == await rows(two.id)
    assert len(await rows(one.id)) == 1
    assert isinstance(lone[0], Committed) and isinstance(batch[0], Committed)
    assert lone[0].game == batch[0].game._replace(
        id=one.id, player_id=one.player_id, created_at=one.created_at
    )
    assert lone[0].action is not None and batch[0].action is not None
    assert lone[0].action == batch[0].action._replace(game_id=one.id)


async def test_a_lone_write_is_written_on_the_loop_durably(store: Store) -> None:
    writer = store._sqlite_writer
    assert writer is not None
    game = await new_game(store)
    before = writer.inline_writes
    await store.commit(move(game.id, 0))
    assert writer.inline_writes == before + 1
    assert writer._inline is not None
    pragmas = tuple(
        writer._inline.execute(f"PRAGMA {name}").fetchone()[0]
        for name in ("journal_mode", "synchronous", "foreign_keys", "busy_timeout")
    )
    assert pragmas == ("wal", 2, 1, 0)  # 2: FULL; it never waits for the lock


async def test_a_lone_write_waits_for_another_writer_on_the_thread(
    store: Store, tmp_path: Path
) -> None:
    """The lock taken elsewhere: the write goes to the thread, which waits for it
    while the event loop goes on; once the lock is free the write is stored."""
    writer = store._sqlite_writer
    assert writer is not None
    game = await new_game(store)
    await store.commit(move(game.id, 0))
    inline = writer.inline_writes
    other = sqlite3.connect(tmp_path / "store.db", isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        commit = asyncio.create_task(store.commit(move(game.id, 1)))
        for _ in range(5):  # the loop is free while the thread waits
            await asyncio.sleep(0.02)
        assert not commit.done()
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert (await commit).game.version == 2
    assert writer.inline_writes == inline  # it went to the thread


async def test_inline_commits_leave_checkpoints_to_the_thread(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The WAL stays short although the inline connection never checkpoints."""
    monkeypatch.setattr(sqlite_writer, "CHECKPOINT_EVERY", 8)
    writer = store._sqlite_writer
    assert writer is not None
    game = await new_game(store)
    for version in range(300):  # one after another, as a lone player's actions come
        await store.commit(move(game.id, version))
    assert writer.inline_writes >= 250
    wal = (tmp_path / "store.db-wal").stat().st_size
    assert wal < 100 * 4096, wal  # tens of frames, not 300 commits' worth (5 MB)


async def test_a_plain_action_rewrites_only_its_game_and_log_pages(
    store: Store, tmp_path: Path
) -> None:
    """The game's status stays as it is, so no index of ``games`` is written: an
    action adds two pages to the WAL (its game's row, its log entry), not four."""
    writer = store._sqlite_writer
    assert writer is not None
    one, two, three = [await new_game(store, name=name) for name in ("a", "b", "c")]
    now = datetime.now(UTC)
    await writer.write([move(one.id, 0)], now)
    wal = tmp_path / "store.db-wal"
    page = 4096 + 24  # a frame: its header and a page

    def emptied() -> None:
        assert writer._inline is not None
        writer._inline.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        assert wal.stat().st_size == 0

    emptied()
    for version in range(1, 21):  # lone after lone: inline
        await writer.write([move(one.id, version)], now)
    assert writer.inline_writes == 21
    assert (wal.stat().st_size - 32) // page <= 2 * 20 + 1  # a split of the log's page: +1
    emptied()
    for version in range(20):  # two games a batch: one JSON round, on the thread
        outcomes = await writer.write([move(two.id, version), move(three.id, version)], now)
        assert all(isinstance(outcome, Committed) for outcome in outcomes)
    assert (wal.stat().st_size - 32) // page <= 2 * 20 + 1


async def test_a_database_it_cannot_open_is_sqlalchemys_error(tmp_path: Path) -> None:
    """Errors leave as SQLAlchemy's (``translate_errors`` maps them), the inline
    connection's as well as the thread's."""
    from sqlalchemy.dialects import sqlite
    from sqlalchemy.exc import OperationalError

    writer = SqliteWriter(str(tmp_path / "missing" / "store.db"), sqlite.dialect(), 100)
    try:
        for _ in range(2):  # lone, then lone after lone: inline
            with pytest.raises(OperationalError):
                await writer.write([move(1, 0)], datetime.now(UTC))
    finally:
        await writer.close()
