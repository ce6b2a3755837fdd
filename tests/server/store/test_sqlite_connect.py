"""Opening a SQLite file while another connection holds it.

A connection's first step is switching the file to WAL, which needs the file to itself
for a moment. SQLite does not always call the busy handler for that lock: while another
connection wrote to the file, or switched it too (two stores opening a new file at
once), the switch failed at once with "database is locked", whatever ``busy_timeout``
said.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import text

from server.store.database import configure_sqlite_connection, create_engine


@pytest.fixture
def held(tmp_path: Path) -> Iterator[tuple[Path, sqlite3.Connection]]:
    """A new file (not yet WAL) that another connection is writing to."""
    path = tmp_path / "store.db"
    writer = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    writer.execute("CREATE TABLE t (x)")
    writer.execute("BEGIN IMMEDIATE")
    writer.execute("INSERT INTO t VALUES (1)")
    try:
        yield path, writer
    finally:
        writer.close()


def _release_after(writer: sqlite3.Connection, seconds: float) -> threading.Timer:
    timer = threading.Timer(seconds, lambda: writer.execute("COMMIT"))
    timer.start()
    return timer


def test_the_switch_to_wal_waits_for_a_writer(held: tuple[Path, sqlite3.Connection]) -> None:
    path, writer = held
    timer = _release_after(writer, 0.2)
    conn = sqlite3.connect(path)
    try:
        configure_sqlite_connection(conn, busy_ms=5000)
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        timer.join()
        conn.close()


def test_the_switch_to_wal_gives_up_after_the_busy_timeout(
    held: tuple[Path, sqlite3.Connection],
) -> None:
    path, _writer = held
    conn = sqlite3.connect(path)
    started = time.monotonic()
    try:
        with pytest.raises(sqlite3.OperationalError, match="locked"):
            configure_sqlite_connection(conn, busy_ms=300)
    finally:
        conn.close()
    assert 0.3 <= time.monotonic() - started < 5


async def test_an_engine_waits_without_holding_up_the_event_loop(
    held: tuple[Path, sqlite3.Connection],
) -> None:
    path, writer = held
    engine = create_engine(f"sqlite+aiosqlite:///{path}", timeout=5)
    ticks = 0

    async def tick() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.01)
            ticks += 1

    ticker = asyncio.create_task(tick())
    timer = _release_after(writer, 0.3)
    try:
        async with engine.connect() as connection:
            mode = (await connection.execute(text("PRAGMA journal_mode"))).scalar_one()
        assert mode == "wal"
        assert ticks >= 10  # the loop ran while the connection waited
    finally:
        ticker.cancel()
        timer.join()
        await engine.dispose()
