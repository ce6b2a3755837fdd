"""On SQLite the store's own write transactions take turns in the process, first come
first served, before SQLite's write lock: many at once on a busy event loop all go
through, instead of polling SQLite's lock past the database timeout (``unavailable``)."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from server.store import Store, StoreUnavailable


@pytest.fixture
async def quick(tmp_path: Path) -> AsyncIterator[Store]:
    """A SQLite store whose database steps have 0.2 s."""
    store = Store.connect(f"sqlite+aiosqlite:///{tmp_path / 'turns.db'}", timeout=0.2)
    await store.upgrade()
    yield store
    await store.close()


async def test_many_writes_at_once_on_a_busy_loop_all_go_through(quick: Store) -> None:
    async def busy() -> None:  # other work on the loop: each of its turns takes 5 ms
        while True:
            time.sleep(0.005)
            await asyncio.sleep(0)

    hog = asyncio.create_task(busy())
    try:
        made = await asyncio.gather(
            *(quick.create_player(f"p{n}") for n in range(30)), return_exceptions=True
        )
    finally:
        hog.cancel()
    failed = [each for each in made if isinstance(each, BaseException)]
    assert not failed, failed[:3]


async def test_with_the_lock_held_elsewhere_waits_in_line_do_not_add_up(
    quick: Store, tmp_path: Path
) -> None:
    """Another process holds SQLite's write lock: each write waits its database timeout for
    it, and one in line behind them waits no longer than that for its turn (the waits
    added up: the twelfth of twelve registrations failed after 55 s at 5 s each)."""
    holder = sqlite3.connect(tmp_path / "turns.db", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    loop = asyncio.get_running_loop()
    started = loop.time()
    try:
        made = await asyncio.gather(
            *(quick.create_player(f"q{n}") for n in range(8)), return_exceptions=True
        )
    finally:
        holder.close()
    assert all(isinstance(each, StoreUnavailable) for each in made), made
    assert loop.time() - started < 1.0  # the first's wait for the lock (0.2 s), then at once
