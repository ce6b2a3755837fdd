"""Databases for the store tests: SQLite always, PostgreSQL when one is configured.

Every database test runs twice, as ``[sqlite]`` on a file in ``tmp_path`` and
as ``[postgresql]`` when ``SCORPION_TEST_DATABASE_URL`` names a server (e.g.
``postgresql+asyncpg://postgres@127.0.0.1:5432/test``); without it the
PostgreSQL half skips and says why.

PostgreSQL isolation: each test session (each pytest-xdist worker, and each
of several concurrent runs) creates its own database, named after the URL's
database, the worker and the process id, and drops it at the end; each test
starts from an empty ``public`` schema. The URL's own database is only
connected to, to create and drop ours.
"""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Final, TypeVar

import pytest
from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine
from sqlalchemy.pool import NullPool

from server.store import GameRecord, GameWrite, NewAction, Player, Progress, Store
from server.store.database import create_engine

PG_VARIABLE: Final = "SCORPION_TEST_DATABASE_URL"
PG_EXAMPLE: Final = "postgresql+asyncpg://postgres@127.0.0.1:5432/test"
T = TypeVar("T")


def run_isolated(make: Callable[[], Awaitable[T]]) -> T:
    """Run a coroutine to completion on a private loop in another thread.

    For session-scoped set-up that must not touch the event loop pytest-asyncio
    gives each test.
    """

    async def main() -> T:
        return await make()

    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, main()).result()


async def _admin(url: str, *statements: str) -> None:
    """Run ``statements`` outside a transaction (CREATE/DROP DATABASE need that)."""
    engine = create_engine(url, poolclass=NullPool, isolation_level="AUTOCOMMIT")
    try:
        async with engine.connect() as conn:
            for statement in statements:
                await conn.execute(text(statement))
    finally:
        await engine.dispose()


def _database_name(base: str) -> str:
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    name = f"{base}_store_{worker}_{os.getpid()}"
    return re.sub(r"[^a-z0-9_]", "_", name.lower())[:63]


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str | None]:
    """A private PostgreSQL database for this session, or None when none is configured."""
    server_url = os.environ.get(PG_VARIABLE)
    if not server_url:
        yield None
        return
    server = make_url(server_url)
    name = _database_name(server.database or "postgres")
    drop = f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'
    run_isolated(lambda: _admin(server_url, drop, f'CREATE DATABASE "{name}"'))
    yield server.set(database=name).render_as_string(hide_password=False)
    run_isolated(lambda: _admin(server_url, drop))


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The URL of an empty database of each backend (PostgreSQL: reset before use)."""
    if request.param == "sqlite":
        return f"sqlite+aiosqlite:///{tmp_path}/store.db"
    postgres: str | None = request.getfixturevalue("postgres_url")  # only set up when needed
    if postgres is None:
        pytest.skip(f"PostgreSQL tests need {PG_VARIABLE}, e.g. {PG_EXAMPLE}")
    return postgres


async def _empty_database(url: str) -> None:
    if make_url(url).get_backend_name() == "postgresql":
        await _admin(url, "DROP SCHEMA public CASCADE", "CREATE SCHEMA public")


@pytest.fixture
async def engine(database_url: str) -> AsyncIterator[AsyncEngine]:
    """A second, independent engine on the test database: to look behind the store's back."""
    await _empty_database(database_url)
    engine = create_engine(database_url)
    yield engine
    await engine.dispose()


@pytest.fixture
async def empty_store(database_url: str, engine: AsyncEngine) -> AsyncIterator[Store]:
    """A store on an empty database (no schema)."""
    store = Store.connect(database_url)
    yield store
    await store.close()


@pytest.fixture
async def store(empty_store: Store) -> Store:
    """A store on a database upgraded to the head revision."""
    await empty_store.upgrade()
    return empty_store


# -- builders ---------------------------------------------------------------------


async def new_game(store: Store, name: str = "anna", level: str = "classic") -> GameRecord:
    """A player called ``name`` with a new game of ``level`` (deal 1)."""
    player, _token = await store.create_player(name)
    return await store.create_game(player.id, level, 1)


async def new_player(store: Store, name: str = "anna") -> Player:
    player, _token = await store.create_player(name)
    return player


def move(
    game_id: int, version: int, *, card: str = "4H", request_id: str | None = None
) -> GameWrite:
    """The write of a move played at ``version``; its counters follow from the version."""
    moves = version + 1
    return GameWrite(
        game_id,
        version,
        Progress(moves=moves, score=5 * moves, time_ms=1000 * moves),
        NewAction("move", card, 7, 1000 * moves),
        request_id=request_id,
    )
