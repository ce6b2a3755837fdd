"""Running servers for the server tests: SQLite always, PostgreSQL when configured.

``server`` starts a real ``ScorpionServer`` on 127.0.0.1 with an ephemeral
port, parametrized by backend: ``[sqlite]`` on a file in ``tmp_path``, and
``[postgresql]`` on a private database when ``SCORPION_TEST_DATABASE_URL``
names a server (skipped with the reason otherwise). ``connect()`` opens a
test client to it; ``restart()`` stops it and starts a fresh one on the
same database.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.engine import make_url

from server.app import ScorpionServer, migrate
from server.config import Settings
from server.store import Store
from tests.server.client import TIMEOUT, Client
from tests.server.store.conftest import PG_EXAMPLE, PG_VARIABLE, _admin, run_isolated


class Running:
    """A server under test and the clients connected to it."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.server = ScorpionServer(settings)
        self.clients: list[Client] = []

    @property
    def url(self) -> str:
        return f"ws://127.0.0.1:{self.server.port}/"

    async def start(self) -> None:
        if not self.settings.is_sqlite:
            await migrate(self.settings)
        await self.server.start()

    async def connect(self) -> Client:
        client = await Client.connect(self.url)
        self.clients.append(client)
        return client

    async def player(self, name: str) -> Client:
        client = await self.connect()
        await client.register(name)
        return client

    async def stop(self) -> None:
        for client in self.clients:
            await client.close()
        self.clients.clear()
        await self.server.stop()

    async def restart(self) -> None:
        await self.stop()
        self.settings = dataclasses.replace(self.settings, port=0)
        self.server = ScorpionServer(self.settings)
        await self.server.start()

    async def restart_after(self, statement: str) -> None:
        """Stop, run the SQL ``statement`` on the stopped server's database (a row as an
        older version or a fault left it), and start again on it."""
        await self.stop()
        if self.settings.is_sqlite:
            with sqlite3.connect(f"{self.settings.data_dir}/scorpion.db") as db:
                db.execute(statement)
        else:
            await _admin(self.settings.database_url, statement)
        await self.restart()


@pytest.fixture(scope="session")
def server_postgres_url() -> Iterator[str | None]:
    base_url = os.environ.get(PG_VARIABLE)
    if not base_url:
        yield None
        return
    base = make_url(base_url)
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    name = f"{base.database or 'postgres'}_server_{worker}_{os.getpid()}".lower()
    drop = f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'
    run_isolated(lambda: _admin(base_url, drop, f'CREATE DATABASE "{name}"'))
    yield base.set(database=name).render_as_string(hide_password=False)
    run_isolated(lambda: _admin(base_url, drop))


def quiet_settings(tmp_path: Path, **changes: Any) -> Settings:
    """Settings for a server under test: any free port, files in ``tmp_path``, little solving."""
    base = Settings(
        port=0,
        data_dir=str(tmp_path),
        workers=1,
        hint_budget_ms=30,
        lost_budget_ms=0,
        easy_pool=0,  # no background deal finding: the tests' worker stays free
        winnable_pool=0,
        # Test clients send requests at machine speed, far above any human's; the
        # request rates get their own tests (test_limits). Connection caps,
        # registrations and refused tokens keep their defaults.
        rate_actions="5000,5000",
        rate_games="5000,5000",
        rate_hints="5000,5000",
        rate_reads="5000,5000",
        rate_connections="off",  # tested on its own in test_limits
    )
    return dataclasses.replace(base, **changes)


@pytest.fixture(params=["sqlite", "postgresql"])
async def settings(request: pytest.FixtureRequest, tmp_path: Path) -> Settings:
    base = quiet_settings(tmp_path)
    if request.param == "sqlite":
        return base
    url: str | None = request.getfixturevalue("server_postgres_url")
    if url is None:
        pytest.skip(f"PostgreSQL server tests need {PG_VARIABLE}, e.g. {PG_EXAMPLE}")
    await _admin(url, "DROP SCHEMA public CASCADE", "CREATE SCHEMA public")
    return dataclasses.replace(base, database_url=url)


@pytest.fixture
async def server(settings: Settings) -> AsyncIterator[Running]:
    running = Running(settings)
    await running.start()
    yield running
    await running.stop()


OPEN = {"rate_actions": "off", "rate_games": "off", "rate_reads": "off", "rate_hints": "off"}
"""Settings that turn the request rate limits off."""

Start = Callable[..., Awaitable[Running]]


@pytest.fixture
async def start(tmp_path: Path) -> AsyncIterator[Start]:
    """``await start(**settings)``: a SQLite server with those settings, stopped at the end."""
    running: list[Running] = []

    async def starter(**changes: Any) -> Running:
        server = Running(quiet_settings(tmp_path, **changes))
        await server.start()
        running.append(server)
        return server

    yield starter
    for server in running:
        await server.stop()


async def hello_held_after_its_read(
    store: Store, client: Client, token: str, monkeypatch: pytest.MonkeyPatch
) -> tuple[asyncio.Task[dict[str, Any]], asyncio.Event]:
    """``client``'s hello with ``token``, held just after the store has read the token
    (a revocation may then land before it signs in): its task, and the event that lets
    it go on."""
    entered, released = asyncio.Event(), asyncio.Event()
    sign_in = store.sign_in

    async def read_then_wait(*args: Any, **kwargs: Any) -> Any:
        found = await sign_in(*args, **kwargs)  # read while the token is good
        entered.set()
        await released.wait()
        return found

    monkeypatch.setattr(store, "sign_in", read_then_wait)
    greeting = asyncio.create_task(client.hello(token))
    await asyncio.wait_for(entered.wait(), TIMEOUT)
    return greeting, released
