"""A database that hangs: requests answer unavailable within the timeout, and retries tell.

What a client sees (docs/deploy.md): ``unavailable`` within about the
database timeout; the action was not applied, or, if the database committed
it just as the timeout struck, the retry (same id, same ``v``) returns the
original ack. Either way a retry after the database is back gives one
action, never two.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import sqlite3
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.engine import make_url

from server import connection as connection_module
from server import service as service_module
from server.app import ScorpionServer, migrate
from server.config import Settings
from server.store import Store, StoreUnavailable
from tests.server.client import Client, Message
from tests.server.conftest import quiet_settings
from tests.server.fake_pg import FakePostgres, FreezableProxy
from tests.server.http_get import http_get
from tests.server.store.conftest import PG_VARIABLE


async def start(settings: Settings) -> tuple[ScorpionServer, Client, int]:
    """A server on ``settings``, a player and a game. With the database's 0.5 s timeout a
    write may be answered ``unavailable`` on a busy machine before any fault is made (a
    registration's insert cancelled by the statement timeout while CI ran the browser
    tests beside it): the set-up asks again, as a client would."""
    server = ScorpionServer(settings)
    await server.start()
    client = await Client.connect(f"ws://127.0.0.1:{server.port}/")
    await client.hello()
    registered = await retried(partial(client.request, "register", name="ida"))
    assert registered["type"] == "registered", registered
    client.token, client.player = registered["token"], registered["player"]
    created = await retried(partial(client.request, "new_game", level="hard", deal=1))
    return server, client, int(created["game"])


async def test_a_locked_sqlite_database_answers_unavailable_then_the_retry_applies(
    tmp_path: Path,
) -> None:
    server, ida, game = await start(quiet_settings(tmp_path, db_timeout_ms=300))
    try:
        locker = sqlite3.connect(tmp_path / "scorpion.db", isolation_level=None)
        locker.execute("BEGIN IMMEDIATE")  # another writer holds the lock
        started = time.monotonic()
        reply = await ida.request("deal", id_="d1", game=game, v=0)
        assert reply["code"] == "unavailable", reply
        assert time.monotonic() - started < 5
        locker.execute("ROLLBACK")
        locker.close()
        again = await ida.request("deal", id_="d1", game=game, v=0)
        assert (again["type"], again["v"]) == ("ack", 1)
        assert (await ida.request("deal", id_="d1", game=game, v=0))["v"] == 1  # same ack
    finally:
        await ida.close()
        await server.stop()


async def test_a_resent_action_that_was_stored_gets_its_ack_before_the_node_catches_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The commit landed but its answer did not (the database's reply lost to a timeout):
    the player was told ``unavailable`` and resends the same request at the same ``v``.

    The node's game is still at ``v`` until it catches up from the store, so the resent
    action was played again on it, its write refused (the store is at ``v + 1``) and
    answered ``stale``. PROTOCOL.md section 5: the first reply, the ``ack``.
    """
    server, ida, game = await start(quiet_settings(tmp_path))
    try:
        store = server.store
        assert store is not None
        commit, load_game = store.commit, store.load_game

        async def lost_answer(write: Any) -> Any:
            await commit(write)
            raise StoreUnavailable("the commit's answer was lost")

        async def not_yet(*args: Any, **kwargs: Any) -> Any:
            raise StoreUnavailable("the node has not caught up yet")

        monkeypatch.setattr(store, "commit", lost_answer)
        monkeypatch.setattr(store, "load_game", not_yet)  # keep the node's game behind
        reply = await ida.request("deal", id_="d1", game=game, v=0)
        assert reply["code"] == "unavailable", reply
        monkeypatch.setattr(store, "commit", commit)
        again = await ida.request("deal", id_="d1", game=game, v=0)
        assert (again["type"], again["v"]) == ("ack", 1), again
        other = await ida.request("deal", id_="d2", game=game, v=0)
        assert (other["code"], other["v"]) == ("stale", 1), other  # not a resend: stale
        reused = await ida.request("restart", id_="d1", game=game, v=0)
        assert reused["code"] == "id_reused", reused
        monkeypatch.setattr(store, "load_game", load_game)
        assert len(await store.load_actions(game)) == 1
    finally:
        await ida.close()
        await server.stop()


@pytest.fixture
def pg_url(server_postgres_url: str | None) -> str:
    if server_postgres_url is None:
        pytest.skip(f"needs {PG_VARIABLE}")
    return server_postgres_url


@asynccontextmanager
async def behind_a_proxy(
    tmp_path: Path, pg_url: str, **options: Any
) -> AsyncIterator[tuple[FreezableProxy, Settings]]:
    """An empty, migrated database, reached through a proxy that can freeze; the
    server's settings for it (database timeout 0.5 s unless ``options`` say, and
    ``options``)."""
    from tests.server.store.conftest import _admin

    await _admin(pg_url, "DROP SCHEMA public CASCADE", "CREATE SCHEMA public")
    direct = quiet_settings(tmp_path, database_url=pg_url)
    await migrate(direct)
    real = make_url(pg_url)
    async with FreezableProxy(real.host or "127.0.0.1", real.port or 5432) as proxy:
        url = real.set(host="127.0.0.1", port=proxy.port).render_as_string(hide_password=False)
        options = {"db_timeout_ms": 500} | options
        yield proxy, dataclasses.replace(direct, database_url=url, **options)


async def test_a_frozen_postgresql_answers_unavailable_and_is_not_ready(
    tmp_path: Path, pg_url: str
) -> None:
    async with behind_a_proxy(tmp_path, pg_url) as (proxy, settings):
        server, ida, game = await start(settings)
        try:
            proxy.freeze()
            started = time.monotonic()
            reply = await ida.request("deal", id_="d1", game=game, v=0)
            assert reply["code"] == "unavailable", reply
            assert time.monotonic() - started < 8
            status, _, body = await http_get(server.port, "/readyz")
            assert status == 503, body
            proxy.thaw()
            for _ in range(50):  # the pool replaces its timed-out connections
                again = await ida.request("deal", id_="d1", game=game, v=0)
                if again["type"] == "ack":
                    break
                assert again["code"] == "unavailable", again  # a resend is never stale
                await asyncio.sleep(0.1)
            assert (again["type"], again["v"]) == ("ack", 1)
            assert server.store is not None
            for _ in range(50):  # a pooled connection may still be one the freeze broke
                try:
                    assert len(await server.store.load_actions(game)) == 1
                    break
                except StoreUnavailable:
                    await asyncio.sleep(0.1)
            else:
                pytest.fail("the store did not recover after the freeze")
        finally:
            proxy.thaw()
            await ida.close()
            await server.stop()


async def test_many_reads_during_a_freeze_are_all_answered_in_time(
    tmp_path: Path, pg_url: str
) -> None:
    """More reads than the store lets hold a connection at once, all while PostgreSQL
    hangs: each is answered ``unavailable`` within about the timeout, none waits for
    the others' timeouts in turn; after the thaw they read again."""
    async with behind_a_proxy(tmp_path, pg_url, max_connections_per_address=1000) as (
        proxy,
        settings,
    ):
        server, ida, _game = await start(settings)
        readers = [await Client.connect(f"ws://127.0.0.1:{server.port}/") for _ in range(100)]
        try:
            welcomes = await asyncio.gather(
                *(retried(partial(reader.hello, ida.token)) for reader in readers)
            )
            assert {reply["type"] for reply in welcomes} == {"welcome"}, welcomes
            proxy.freeze()
            started = time.monotonic()
            replies = await asyncio.gather(*(reader.request("games") for reader in readers))
            elapsed = time.monotonic() - started
            assert {reply.get("code") for reply in replies} == {"unavailable"}, replies
            assert elapsed < 3, elapsed  # not 100 / READS_AT_ONCE timeouts of 0.5 s in turn
            proxy.thaw()
            # Each reader asks again until it reads, as a client told ``unavailable``
            # does: on a busy machine the pool's new connections may take longer
            # than the 0.5 s timeout at first, and then every waiting read is
            # answered at once until one gets through (``_ReadGate``).
            replies = await asyncio.gather(
                *(retried(partial(reader.request, "games")) for reader in readers)
            )
            assert {reply["type"] for reply in replies} == {"games"}, replies
        finally:
            proxy.thaw()
            for reader in readers:
                await reader.close()
            await ida.close()
            await server.stop()


async def retried(ask: Callable[[], Awaitable[Message]], *, tries: int = 100) -> Message:
    """``ask()`` until it is answered, 0.1 s apart, or the last error: on a busy machine
    a hundred requests at once may outlast the 0.5 s database timeout."""
    for _ in range(tries):
        reply = await ask()
        if reply.get("code") != "unavailable":
            break
        await asyncio.sleep(0.1)
    return reply


async def stored_actions(store: Store, game: int, *, tries: int = 100) -> int:
    """How many actions ``game`` has in ``store``, asked again 0.1 s apart while the store
    is unavailable: after failed reads its read gate lets one read try the database at a
    time and refuses the others at once (``test_read_gate``), and under load the server's
    own catch-up may be that one."""
    for _ in range(tries - 1):
        try:
            return len(await store.load_actions(game))
        except StoreUnavailable:
            await asyncio.sleep(0.1)
    return len(await store.load_actions(game))


async def test_a_server_that_never_answers_the_connect_is_unavailable_in_time() -> None:
    from server.store import Store, StoreUnavailable

    async with FakePostgres() as fake:
        store = Store.connect(fake.hang().url, timeout=0.3)
        try:
            started = time.monotonic()
            with pytest.raises(StoreUnavailable):
                await store.get_game(1)
            assert time.monotonic() - started < 3
        finally:
            await store.close()


async def test_a_postgresql_shutting_down_answers_unavailable_not_internal(
    tmp_path: Path, pg_url: str
) -> None:
    from tests.server.store.conftest import _admin

    await _admin(pg_url, "DROP SCHEMA public CASCADE", "CREATE SCHEMA public")
    direct = quiet_settings(tmp_path, database_url=pg_url)
    await migrate(direct)
    real = make_url(pg_url)
    async with FreezableProxy(real.host or "127.0.0.1", real.port or 5432) as proxy:
        url = real.set(host="127.0.0.1", port=proxy.port).render_as_string(hide_password=False)
        server, ida, game = await start(dataclasses.replace(direct, database_url=url))
        try:
            proxy.shut_down()
            replies = [await ida.request("deal", id_="d1", game=game, v=0) for _ in range(5)]
            assert [r.get("code") for r in replies] == ["unavailable"] * 5, replies
            proxy.reopen()
            again = await ida.request("deal", id_="d1", game=game, v=0)
            assert (again["type"], again["v"]) == ("ack", 1)
        finally:
            await ida.close()
            await server.stop()


async def test_returning_players_while_postgresql_hangs_are_answered_in_time(
    tmp_path: Path, pg_url: str
) -> None:
    """A returning player's reads go through the store's kept connections
    (``pg_reader``): while PostgreSQL hangs they are answered ``unavailable`` within
    about the timeout, the hung connections are dropped, and after the thaw the
    same reads work on fresh ones."""
    from server.store import Store, StoreUnavailable

    async with behind_a_proxy(tmp_path, pg_url, max_connections_per_address=1000) as (
        proxy,
        settings,
    ):
        server, ida, game = await start(settings)
        store = Store.connect(settings.store_url, timeout=0.5)
        returning = [await Client.connect(f"ws://127.0.0.1:{server.port}/") for _ in range(30)]
        try:
            assert (await store.load_game(game))[0] is not None  # its connections are kept
            proxy.freeze()
            started = time.monotonic()
            hellos = await asyncio.gather(*(client.hello(ida.token) for client in returning))
            with pytest.raises(StoreUnavailable):
                await store.load_game(game)
            elapsed = time.monotonic() - started
            assert {reply.get("code") for reply in hellos} == {"unavailable"}, hellos
            assert elapsed < 3, elapsed
            proxy.thaw()
            for _ in range(50):
                hello = await returning[0].hello(ida.token)
                if hello["type"] != "error":
                    break
                await asyncio.sleep(0.1)
            assert hello["type"] == "welcome", hello
            hellos = await asyncio.gather(*(client.hello(ida.token) for client in returning[1:]))
            assert {reply["type"] for reply in hellos} == {"welcome"}
            record, log = await store.load_game(game)
            assert record is not None and record.id == game and log == []
        finally:
            proxy.thaw()
            for client in returning:
                await client.close()
            await store.close()
            await ida.close()
            await server.stop()


async def test_an_action_answered_unavailable_behind_a_lock_is_not_applied_once_it_lifts(
    tmp_path: Path, pg_url: str
) -> None:
    """An action's write waits on a lock (another session's ``LOCK TABLE``, a long
    migration) past the timeout: the client is told ``unavailable``. PostgreSQL must
    not go on to run and commit the statement once the lock is lifted: the server
    dropped the connection, but a backend waiting on a lock does not notice that.
    The lock here lifts as the answer comes, with each statement 60 ms on its way to
    the database: PostgreSQL's own bound starts that much later than the server's,
    and must still have ended it first. The retry then applies it once."""
    import asyncpg

    async with behind_a_proxy(tmp_path, pg_url) as (proxy, settings):
        server, ida, game = await start(settings)
        watcher = await Client.connect(f"ws://127.0.0.1:{server.port}/")
        admin = make_url(pg_url).set(drivername="postgresql")
        locker = await asyncpg.connect(admin.render_as_string(hide_password=False))
        try:
            await watcher.hello(ida.token)
            await watcher.request("open_game", game=game)
            for version, action in enumerate(["deal", "undo"]):  # the statements prepared
                reply = await ida.request(action, id_=f"w{version}", game=game, v=version)
                assert reply["type"] == "ack", reply
            proxy.delay = 0.06
            # the late commit depended on a race: tried four times
            for version, action in enumerate(["deal", "undo", "deal", "undo"], start=2):
                attempt = f"a{version}"
                async with locker.transaction():  # lifted as soon as the answer comes
                    await locker.execute("LOCK TABLE game_actions IN ACCESS EXCLUSIVE MODE")
                    reply = await ida.request(action, id_=attempt, game=game, v=version)
                assert reply["code"] == "unavailable", reply
                await asyncio.sleep(1)  # a statement left waiting would have committed now
                assert server.store is not None
                assert await stored_actions(server.store, game) == version, attempt
                # read through the slow link too: may take a try or two on new connections
                snapshot = await retried(partial(watcher.request, "open_game", game=game))
                assert snapshot.get("v") == version, snapshot
                again = await retried(
                    partial(ida.request, action, id_=attempt, game=game, v=version)
                )
                assert (again["type"], again["v"]) == ("ack", version + 1), again
        finally:
            await locker.close()
            await watcher.close()
            await ida.close()
            await server.stop()


async def timed_stop(server: ScorpionServer, caplog: pytest.LogCaptureFixture) -> float:
    """The seconds ``server.stop()`` takes, its log captured from INFO up."""
    loop = asyncio.get_running_loop()
    started = loop.time()
    with caplog.at_level(logging.INFO):
        await server.stop()
    return loop.time() - started


async def test_a_stop_while_postgresql_is_frozen_ends_in_its_bound_and_quietly(
    tmp_path: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A node stopped while its database is frozen, a game's play time to save. Its stop
    waited out the timeout for each step of the save (the ping of a pooled connection,
    then a new one), then for each pooled connection's goodbye: over 10 s at the default
    5 s timeout, past a supervisor's usual stop timeout (docs/deploy.md), with an ERROR
    and the driver's stack for each goodbye unanswered."""
    monkeypatch.setattr(service_module, "SNAPSHOT_SHUTDOWN_S", 0.5)
    async with behind_a_proxy(tmp_path, pg_url, db_timeout_ms=2000) as (proxy, settings):
        server, ida, game = await start(settings)
        try:
            reply = await retried(partial(ida.request, "deal", id_="d1", game=game, v=0))
            assert reply["type"] == "ack", reply  # the game's clock runs
            proxy.freeze()
            await ida.close()  # its clock stops: its play time is saved, in vain
            took = await timed_stop(server, caplog)
        finally:
            proxy.thaw()
            await ida.close()
            await server.stop()
    errors = [r.getMessage()[:40] for r in caplog.records if r.levelno >= logging.ERROR]
    assert (took < 1.5, errors) == (True, []), took


async def test_a_stop_cuts_short_a_request_waiting_on_a_frozen_postgresql(
    tmp_path: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A request waiting on the database as the stop begins. The stop waited for it, its
    whole database timeout (one after another for requests queued for a connection),
    before the store's bounded work began: 9.8 s for one at the default 5 s timeout."""
    monkeypatch.setattr(service_module, "SNAPSHOT_SHUTDOWN_S", 0.5)
    monkeypatch.setattr(connection_module, "HANDLERS_WAIT_S", 0.5)
    async with behind_a_proxy(tmp_path, pg_url, db_timeout_ms=10_000) as (proxy, settings):
        server, ida, game = await start(settings)
        assert server.store is not None
        store, entered = server.store, asyncio.Event()
        commit = store.commit

        async def noted(write: Any) -> Any:
            entered.set()
            return await commit(write)

        monkeypatch.setattr(store, "commit", noted)
        try:
            proxy.freeze()
            asked = asyncio.ensure_future(ida.request("deal", id_="d1", game=game, v=0))
            await asyncio.wait_for(entered.wait(), 10)
            took = await timed_stop(server, caplog)
        finally:
            proxy.thaw()
            await ida.close()
            await server.stop()
        with pytest.raises(ConnectionResetError):  # closed with 1001, unanswered
            await asked
    errors = [r.getMessage()[:40] for r in caplog.records if r.levelno >= logging.ERROR]
    assert (took < 3, errors) == (True, []), took
    assert any("were cut short" in r.getMessage() for r in caplog.records)
