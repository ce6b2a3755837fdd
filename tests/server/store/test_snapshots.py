"""A game's snapshot: kept in its row while it is active, read back with only the log after it."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from sqlalchemy import inspect, text
from sqlalchemy.ext.asyncio import AsyncEngine

from server.store import (
    Ending,
    GameRecord,
    GameWrite,
    NewGame,
    Progress,
    SchemaOutdated,
    Store,
    StoredSnapshot,
    VersionConflict,
)
from server.store import games as game_reads
from server.store.games import GAME_COLUMNS
from server.store.schema import run_alembic
from tests.server.store.conftest import move, new_game
from tests.server.store.test_migrations import differences, insert_first_game

SNAPSHOT = bytes(range(256)) * 3  # every byte value, NUL included


async def played(store: Store, moves: int, name: str = "anna") -> GameRecord:
    """A new game with ``moves`` moves committed."""
    game = await new_game(store, name)
    for version in range(moves):
        await store.commit(move(game.id, version))
    found = await store.get_game(game.id)
    assert found is not None
    return found


async def stored_snapshot(engine: AsyncEngine, game_id: int) -> tuple[object, object]:
    """The row's two columns as they are, behind the store's back."""
    async with engine.connect() as conn:
        sql = text("SELECT snapshot_v, snapshot FROM games WHERE id = :id")
        row = (await conn.execute(sql, {"id": game_id})).one()
    return row[0], row[1]


@contextmanager
def general_path(store: Store) -> Iterator[None]:
    """The store's reads through SQLAlchemy, as without a hot reader."""
    readers = store._sqlite_reader, store._pg_reader
    store._sqlite_reader = store._pg_reader = None
    try:
        yield
    finally:
        store._sqlite_reader, store._pg_reader = readers


def test_a_game_record_carries_no_snapshot() -> None:
    """Lists and every other read of games leave the blob in the database."""
    names = [c.name for c in GAME_COLUMNS]
    assert "snapshot" not in names and "snapshot_v" not in names
    assert "snapshot" not in GameRecord._fields


async def test_without_a_snapshot_restoring_is_loading(store: Store) -> None:
    game = await played(store, 3)
    record, log = await store.load_game(game.id)
    assert await store.restore_game(game.id) == (record, None, log)
    assert len(log) == 3


async def test_restoring_reads_the_snapshot_and_only_the_log_after_it(store: Store) -> None:
    game = await played(store, 5)
    assert await store.save_snapshots([(game.id, 3, SNAPSHOT)]) == 1
    record, snapshot, log = await store.restore_game(game.id)
    assert record == await store.get_game(game.id)
    assert snapshot == StoredSnapshot(3, SNAPSHOT)
    assert snapshot is not None and type(snapshot.data) is bytes
    assert log == (await store.load_game(game.id, 3))[1] and len(log) == 2
    # At the row's version: nothing to replay.
    assert await store.save_snapshots([(game.id, 5, b"at five")]) == 1
    assert await store.restore_game(game.id) == (record, StoredSnapshot(5, b"at five"), [])


async def test_a_large_snapshot_comes_back_whole(store: Store) -> None:
    game = await played(store, 2)
    data = SNAPSHOT * 400  # 300 KB: out of line on both databases
    assert await store.save_snapshots([(game.id, 2, data)]) == 1
    _record, snapshot, _log = await store.restore_game(game.id)
    assert snapshot == StoredSnapshot(2, data)


async def test_only_a_newer_snapshot_replaces_one(store: Store) -> None:
    game = await played(store, 4)
    assert await store.save_snapshots([(game.id, 3, b"three")]) == 1
    assert await store.save_snapshots([(game.id, 2, b"two")]) == 0
    assert await store.save_snapshots([(game.id, 3, b"three again")]) == 0
    assert (await store.restore_game(game.id))[1] == StoredSnapshot(3, b"three")
    assert await store.save_snapshots([(game.id, 4, b"four")]) == 1
    assert (await store.restore_game(game.id))[1] == StoredSnapshot(4, b"four")


@pytest.mark.parametrize(
    "held", ["snapshot_v = 50, snapshot = :data", "snapshot_v = 3, snapshot = NULL"]
)
async def test_a_snapshot_the_row_does_not_vouch_for_is_replaced(
    store: Store, engine: AsyncEngine, held: str
) -> None:
    """One ahead of its game, or a version without data, is never read; left in place,
    it refused every snapshot up to its version, so the game replayed its whole log."""
    game = await played(store, 3)
    async with engine.begin() as conn:
        await conn.execute(
            text(f"UPDATE games SET {held} WHERE id = :id"), {"id": game.id, "data": b"x"}
        )
    assert await store.save_snapshots([(game.id, 3, b"three")]) == 1
    assert (await store.restore_game(game.id))[1] == StoredSnapshot(3, b"three")


async def test_a_snapshot_ahead_of_the_game_is_not_saved(store: Store) -> None:
    game = await played(store, 2)
    assert await store.save_snapshots([(game.id, 3, b"ahead")]) == 0
    assert (await store.restore_game(game.id))[1] is None


async def test_a_missing_or_finished_game_takes_no_snapshot(store: Store) -> None:
    game = await played(store, 2)
    resign = GameWrite(game.id, 2, Progress(moves=2), ending=Ending.RESIGNED)
    await store.commit(resign)
    assert await store.save_snapshots([(game.id, 2, b"late"), (12345, 1, b"none")]) == 0
    record, snapshot, log = await store.restore_game(game.id)
    assert record is not None and record.finished and snapshot is None and len(log) == 2


async def test_several_snapshots_in_one_call_count_what_changed(store: Store) -> None:
    first, second = await played(store, 2, "anna"), await played(store, 3, "bert")
    saves = [(second.id, 3, b"b3"), (first.id, 1, b"a1"), (first.id, 2, b"a2"), (99, 1, b"")]
    assert await store.save_snapshots(saves) == 3
    assert (await store.restore_game(first.id))[1] == StoredSnapshot(2, b"a2")
    assert (await store.restore_game(second.id))[1] == StoredSnapshot(3, b"b3")
    assert await store.save_snapshots([]) == 0


async def test_a_snapshot_needs_a_version(store: Store) -> None:
    with pytest.raises(ValueError, match="version"):
        await store.save_snapshots([(1, -1, b"")])


async def test_moves_keep_the_snapshot(store: Store, engine: AsyncEngine) -> None:
    """Every write path that leaves a game active leaves its snapshot alone."""
    game = await played(store, 2)
    assert await store.save_snapshots([(game.id, 2, b"two")]) == 1
    await store.commit(move(game.id, 2))  # the hot writer
    await asyncio.gather(store.commit(move(game.id, 3)), store.commit(move(game.id, 4)))
    await store.append_actions([move(game.id, 5), move(game.id, 6)])  # the general path
    assert await stored_snapshot(engine, game.id) == (2, b"two")
    record, snapshot, log = await store.restore_game(game.id)
    assert record is not None and record.version == 7
    assert snapshot == StoredSnapshot(2, b"two") and len(log) == 5


def carrying(write: GameWrite, data: bytes) -> GameWrite:
    """``write`` with the game's snapshot after it."""
    return dataclasses.replace(write, snapshot=data)


async def test_a_snapshot_an_action_carries_is_kept_with_it_on_every_write_path(
    store: Store, engine: AsyncEngine
) -> None:
    """The hot writer's lone write and batch, the general path's batch; each with its
    action's version, another game's snapshot left alone."""
    game = await played(store, 2)
    other = await played(store, 2, "bert")
    assert await store.save_snapshots([(other.id, 2, b"other")]) == 1
    await store.commit(carrying(move(game.id, 2), b"three"))  # a batch of one
    assert await stored_snapshot(engine, game.id) == (3, b"three")
    await store.commit(move(game.id, 3))  # one without: the snapshot stays
    assert await stored_snapshot(engine, game.id) == (3, b"three")
    await asyncio.gather(  # one batch, one write carrying a snapshot
        store.commit(carrying(move(game.id, 4), b"five")), store.commit(move(other.id, 2))
    )
    assert await stored_snapshot(engine, game.id) == (5, b"five")
    assert await stored_snapshot(engine, other.id) == (2, b"other")
    await store.append_actions([carrying(move(game.id, 5), b"six"), move(game.id, 6)])
    assert await stored_snapshot(engine, game.id) == (6, b"six")
    record, snapshot, log = await store.restore_game(game.id)
    assert record is not None and record.version == 7
    assert snapshot == StoredSnapshot(6, b"six") and len(log) == 1
    big = SNAPSHOT * 4  # past PostgreSQL's inline size: kept out of line, read back whole
    await asyncio.gather(
        store.commit(carrying(move(game.id, 7), big)),
        store.commit(carrying(move(other.id, 3), b"four")),
    )
    assert await stored_snapshot(engine, game.id) == (8, big)
    assert await stored_snapshot(engine, other.id) == (4, b"four")


async def test_a_refused_write_keeps_no_snapshot(store: Store, engine: AsyncEngine) -> None:
    game = await played(store, 2)
    with pytest.raises(VersionConflict):
        await store.commit(carrying(move(game.id, 1), b"stale"))
    both = await asyncio.gather(
        store.commit(carrying(move(game.id, 0), b"stale")),
        store.commit(carrying(move(game.id, 2), b"three")),
        return_exceptions=True,
    )
    assert isinstance(both[0], VersionConflict) and not isinstance(both[1], BaseException)
    assert await stored_snapshot(engine, game.id) == (3, b"three")


def test_only_an_action_that_leaves_its_game_active_carries_a_snapshot() -> None:
    with pytest.raises(ValueError, match="snapshot"):
        GameWrite(1, 2, Progress(moves=3), ending=Ending.RESIGNED, snapshot=b"x")
    with pytest.raises(ValueError, match="snapshot"):
        carrying(dataclasses.replace(move(1, 2), ending=Ending.WON), b"x")


@pytest.mark.parametrize("ending", list(Ending))
async def test_ending_a_game_drops_its_snapshot(
    store: Store, engine: AsyncEngine, ending: Ending
) -> None:
    game = await played(store, 2)
    other = await played(store, 2, "bert")
    assert await store.save_snapshots([(game.id, 2, b"two"), (other.id, 2, b"kept")]) == 2
    action = move(game.id, 2).action if ending is Ending.WON else None
    then = NewGame("classic", 2) if ending is Ending.ABANDONED else None
    end = GameWrite(game.id, 2, Progress(moves=3), action, ending=ending, then_start=then)
    # In one batch with a plain move of another game, whose snapshot stays.
    await asyncio.gather(store.commit(end), store.commit(move(other.id, 2)))
    assert await stored_snapshot(engine, game.id) == (None, None)
    assert await stored_snapshot(engine, other.id) == (2, b"kept")
    record, snapshot, log = await store.restore_game(game.id)
    assert record is not None and record.finished
    assert snapshot is None and len(log) == record.version


async def test_a_snapshot_the_row_does_not_vouch_for_is_not_read(
    store: Store, engine: AsyncEngine
) -> None:
    """Only a whole snapshot (both columns) of a version the game has reached is read."""
    game = await played(store, 3)
    whole = await store.load_game(game.id)
    for values in (
        "snapshot_v = 5, snapshot = :data",
        "snapshot_v = -1, snapshot = :data",
        "snapshot_v = NULL, snapshot = :data",
    ):
        async with engine.begin() as conn:
            await conn.execute(
                text(f"UPDATE games SET {values} WHERE id = :id"), {"id": game.id, "data": b"x"}
            )
        assert await store.restore_game(game.id) == (whole[0], None, whole[1])
    async with engine.begin() as conn:
        sql = "UPDATE games SET snapshot_v = 2, snapshot = NULL WHERE id = :id"
        await conn.execute(text(sql), {"id": game.id})
    assert await store.restore_game(game.id) == (whole[0], None, whole[1])


async def test_a_finished_games_snapshot_is_not_read(store: Store, engine: AsyncEngine) -> None:
    """Ending a game drops its snapshot; one put back (by hand, from a copy of an older
    row) is not read: a finished game is rebuilt from its whole log, read in full."""
    game = await played(store, 3)
    await store.save_snapshots([(game.id, 2, b"two")])
    resign = GameWrite(game.id, 3, Progress(moves=3), ending=Ending.RESIGNED)
    await store.commit(resign)
    async with engine.begin() as conn:
        sql = "UPDATE games SET snapshot_v = 2, snapshot = :data WHERE id = :id"
        await conn.execute(text(sql), {"id": game.id, "data": b"two"})
    record, snapshot, log = await store.restore_game(game.id)
    assert record is not None and record.finished
    assert snapshot is None and len(log) == record.version == 3


async def test_a_missing_game_restores_as_nothing(store: Store) -> None:
    assert await store.restore_game(12345) == (None, None, [])
    with general_path(store):
        assert await store.restore_game(12345) == (None, None, [])


async def test_the_hot_readers_restore_what_the_general_path_restores(store: Store) -> None:
    plain = await played(store, 3, "anna")
    kept = await played(store, 4, "bert")
    assert await store.save_snapshots([(kept.id, 2, SNAPSHOT)]) == 1
    for game in (plain, kept):
        async with store._reading() as conn:
            general = await game_reads.fetch_restore(conn, game.id)
        with general_path(store):
            assert await store.restore_game(game.id) == general
        assert await store.restore_game(game.id) == general
        assert general[0] == await store.get_game(game.id)
    async with store._reading() as conn:
        _record, snapshot, log = await game_reads.fetch_restore(conn, kept.id)
    assert snapshot == StoredSnapshot(2, SNAPSHOT) and type(snapshot.data) is bytes
    assert len(log) == 2


async def test_without_schema_saving_is_a_store_error(empty_store: Store) -> None:
    with pytest.raises(SchemaOutdated):
        await empty_store.save_snapshots([(1, 1, b"")])
    with pytest.raises(SchemaOutdated):
        await empty_store.restore_game(1)


async def test_upgrade_from_0006_adds_empty_snapshot_columns(
    store: Store, engine: AsyncEngine
) -> None:
    await run_alembic(engine, "downgrade", "0006")
    async with engine.connect() as conn:
        columns = await conn.run_sync(
            lambda c: {x["name"] for x in inspect(c).get_columns("games")}
        )
    assert "snapshot" not in columns and "snapshot_v" not in columns
    await insert_first_game(engine)
    await store.upgrade()
    async with engine.connect() as conn:
        columns = await conn.run_sync(
            lambda c: {x["name"] for x in inspect(c).get_columns("games")}
        )
    assert {"snapshot", "snapshot_v"} <= columns
    assert await differences(engine) == []
    assert await stored_snapshot(engine, 7) == (None, None)
    record, snapshot, log = await store.restore_game(7)
    assert record is not None and record.deal == 5 and snapshot is None and log == []
    assert await store.save_snapshots([(7, 0, b"start")]) == 1
