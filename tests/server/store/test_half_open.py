"""Pooled PostgreSQL connections gone half-open: one costs a timeout, not each of them.

After a partition, a database host that died or a NAT that forgot its connections,
every idle connection of the pool is dead without a word from the network. Each
was found out on its own, a whole ``--db-timeout-ms`` each, one read at a time,
so a node answered ``unavailable`` for the pool's size times the timeout while
the database answered new connections at once.
"""

from __future__ import annotations

import asyncio
import gc
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
from sqlalchemy import text
from sqlalchemy.engine import make_url

from server.store import Store, StoreUnavailable
from server.store.held import HeldConnection
from tests.server.pg_proxy import SilentProxy
from tests.server.store.conftest import new_game

TIMEOUT_S = 2.0  # what a half-open read costs; 12 connects at once under load took over 0.5 s


@asynccontextmanager
async def behind_a_relay(
    store: Store, database_url: str
) -> AsyncIterator[tuple[SilentProxy, Store]]:
    """A node's store on ``store``'s database through a relay that can go silent."""
    if not store.shared:
        pytest.skip("SQLite has no network between the server and its database")
    url = make_url(database_url)
    async with SilentProxy(url.host or "127.0.0.1", url.port or 5432) as proxy:
        node = Store.connect(proxy.url_for(database_url), timeout=TIMEOUT_S)
        try:
            yield proxy, node
        finally:
            await node.close()


async def test_the_first_silent_connection_has_the_pool_replaced(
    store: Store, database_url: str
) -> None:
    game = await new_game(store)
    async with behind_a_relay(store, database_url) as (proxy, node):
        # Several connections at once, back in the pool when done.
        await asyncio.gather(*(node.get_game(game.id) for _ in range(12)))
        proxy.silence()  # every one of them now half-open; new ones relayed
        failed = 0
        loop = asyncio.get_running_loop()
        started = loop.time()
        while await _read_fails(node, game.id):
            failed += 1
            assert failed < 20
        assert failed <= 1, f"{failed} reads failed, {loop.time() - started:.1f} s"
        # And the node goes on: reads and writes on fresh connections.
        await asyncio.gather(*(node.get_game(game.id) for _ in range(12)))
        assert await node.set_paused(game.id, True)


async def _read_fails(node: Store, game_id: int) -> bool:
    try:
        await node.get_game(game_id)
    except StoreUnavailable:
        return True
    return False


async def test_a_healthy_pooled_connection_passes_its_ping_and_is_reused(
    store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    """The ping itself failed on every connection (asyncpg cannot run an empty
    statement), so each checkout replaced the whole pool: a new connection each time."""
    if not store.shared:
        pytest.skip("SQLite has no network between the server and its database")
    backends = set()
    for _ in range(5):
        async with store._engine.connect() as conn:
            backends.add((await conn.execute(text("SELECT pg_backend_pid()"))).scalar())
    assert len(backends) == 1, backends
    assert "failed its ping" not in caplog.text


async def test_a_held_connection_made_before_the_pool_was_replaced_is_dropped(
    store: Store, database_url: str
) -> None:
    """The hot paths' held connections (``held``) are not pinged: after the pool was
    replaced, each half-open one still cost its next write or read a whole timeout."""
    game = await new_game(store)
    async with behind_a_relay(store, database_url) as (proxy, node):
        held = HeldConnection(node._engine)
        try:
            before = await held.driver()
            await node.get_game(game.id)  # a pooled connection too, back in the pool
            proxy.silence()
            await node.get_game(game.id)  # its ping fails: the pool is replaced
            after = await held.driver()
            assert after is not before
            assert await after.fetchval("SELECT 1") == 1
        finally:
            await held.close()


async def test_a_store_closed_while_its_database_is_silent_closes_at_once_and_quietly(
    store: Store, database_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Each pooled connection was closed politely, waiting for an answer that never came:
    the node's stop took a timeout per connection more, SQLAlchemy logged an ERROR with
    the driver's stack for each, and the change listener's close, left running when its
    task was stopped, wrote "Task exception was never retrieved" to standard error."""
    game = await new_game(store)
    async with behind_a_relay(store, database_url) as (proxy, node):
        await node.listen(lambda _games: None, lambda: None)
        await asyncio.gather(*(node.get_game(game.id) for _ in range(3)))
        proxy.silence()
        loop = asyncio.get_running_loop()
        unheard: list[str] = []
        loop.set_exception_handler(lambda _loop, context: unheard.append(context["message"]))
        try:
            started = loop.time()
            with caplog.at_level(logging.INFO):
                await node.close()
            took = loop.time() - started
            gc.collect()  # a task that ended unheard says so as it goes
        finally:
            loop.set_exception_handler(None)
    errors = [r.getMessage()[:40] for r in caplog.records if r.levelno >= logging.ERROR]
    assert (took < TIMEOUT_S / 2, errors, unheard) == (True, [], [])
