"""Change notifications between nodes: payloads, delivery on commit only, reconnecting."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import asyncpg
import pytest
from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine

from server.store import Store, StoreUnavailable, VersionConflict, hash_token, notify, players
from server.store import store as store_module
from server.store.notify import (
    APPLICATION_NAME,
    CHANNEL,
    MAX_PAYLOAD,
    SIGN_OUTS,
    Revocation,
    format_payload,
    format_revocation,
    parse_payload,
    parse_revocation,
)
from tests.server.pg_proxy import SilentProxy
from tests.server.store.conftest import move, new_game


def test_payloads_round_trip_and_stay_under_the_limit() -> None:
    many = range(1, 5000)
    payloads = format_payload("node1", many)
    assert len(payloads) > 1
    assert all(len(payload) <= MAX_PAYLOAD for payload in payloads)
    seen: list[int] = []
    for payload in payloads:
        parsed = parse_payload(payload)
        assert parsed is not None and parsed[0] == "node1"
        seen.extend(parsed[1])
    assert seen == list(many)
    assert format_payload("node1", [3, 1, 3]) == ["node1 1,3"]


@pytest.mark.parametrize("payload", ["", "node", "node ", "node 1,x", " 1,2"])
def test_foreign_payloads_are_not_ours(payload: str) -> None:
    assert parse_payload(payload) is None


HASH = hash_token("a token")


def test_revocation_payloads_round_trip_and_stay_under_the_limit() -> None:
    every = format_revocation("node1", 2**31 - 1)
    assert every == "node1 2147483647"
    assert parse_revocation(every) == Revocation("node1", 2**31 - 1, None)
    one = format_revocation("node1", 7, HASH)
    assert one == f"node1 7 {HASH}" and len(one) <= MAX_PAYLOAD
    assert parse_revocation(one) == Revocation("node1", 7, HASH)


@pytest.mark.parametrize(
    "payload",
    [
        "",
        "node1",
        "node1 ",
        " 7",
        "node1 x",
        "node1 -7",
        "node1 ７",
        "node1 7 ",
        "node1 7 abc",
        f"node1 7 {HASH.upper()}",
        f"node1 7 {HASH} more",
        "node1 1,2",
    ],
)
def test_foreign_revocation_payloads_are_not_ours(payload: str) -> None:
    assert parse_revocation(payload) is None


def test_a_revocation_names_a_token_by_its_hash_only() -> None:
    with pytest.raises(ValueError):
        format_revocation("node1", 7, "a token")


class Heard:
    """Records what a listening store hears."""

    def __init__(self) -> None:
        self.changes: list[int] = []
        self.revoked: list[tuple[int, str | None]] = []
        self.resets = 0
        self.event = asyncio.Event()

    def change(self, game_ids: list[int]) -> None:
        self.changes.extend(game_ids)
        self.event.set()

    def revoke(self, player_id: int, token_hash: str | None) -> None:
        self.revoked.append((player_id, token_hash))
        self.event.set()

    def reset(self) -> None:
        self.resets += 1
        self.event.set()

    async def wait(self) -> None:
        await asyncio.wait_for(self.event.wait(), 10)
        self.event.clear()


@asynccontextmanager
async def second_node(store: Store, database_url: str) -> AsyncIterator[Heard]:
    """Another node's store on the same database, listening; what it hears."""
    if not store.shared:
        pytest.skip("SQLite is served by one node: there is nothing to hear")
    other = Store.connect(database_url)
    heard = Heard()
    await other.listen(heard.change, heard.reset, heard.revoke)
    try:
        yield heard
    finally:
        await other.close()


async def test_a_commit_is_heard_by_the_other_node_only(store: Store, database_url: str) -> None:
    mine = Heard()
    await store.listen(mine.change, mine.reset)
    async with second_node(store, database_url) as heard:
        game = await new_game(store)
        await store.commit(move(game.id, 0))
        await heard.wait()
        assert heard.changes == [game.id]
        with pytest.raises(VersionConflict):
            await store.commit(move(game.id, 0))  # refused: nothing to announce
        await store.commit(move(game.id, 1))
        await heard.wait()
        assert heard.changes == [game.id, game.id]
        assert mine.changes == []  # a node does not hear itself


async def test_a_rolled_back_transaction_announces_nothing(
    store: Store, database_url: str, engine: AsyncEngine
) -> None:
    async with second_node(store, database_url) as heard, engine.connect() as conn:
        await conn.execute(text(f"SELECT pg_notify('{CHANNEL}', 'elsewhere 41')"))
        await conn.rollback()
        await conn.execute(text(f"SELECT pg_notify('{CHANNEL}', 'elsewhere 42')"))
        await conn.commit()
        await heard.wait()
        assert heard.changes == [42]


async def test_a_lost_listening_connection_reconnects_and_resets(
    store: Store, database_url: str, engine: AsyncEngine
) -> None:
    async with second_node(store, database_url) as heard:
        async with engine.connect() as conn:
            killed = await conn.execute(
                text(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                    f" WHERE application_name = '{APPLICATION_NAME}'"
                    " AND datname = current_database()"
                )
            )
            assert killed.all() == [(True,)]
        await heard.wait()
        assert heard.resets == 1  # anything sent while it was away must be rechecked
        game = await new_game(store)
        await store.commit(move(game.id, 0))
        await heard.wait()
        assert heard.changes == [game.id]


async def test_a_listening_connection_gone_silent_is_noticed_and_replaced(
    store: Store,
    database_url: str,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A listening connection that stopped carrying bytes, closed by nothing (a half-open
    TCP connection after a partition), left its node deaf to the others' commits and
    sign-outs for good: a query now and then tells it is gone, in one warning."""
    if not store.shared:
        pytest.skip("SQLite is served by one node: there is nothing to hear")
    monkeypatch.setattr(notify, "HEARTBEAT_S", 0.3)
    url = make_url(database_url)
    proxy = SilentProxy(url.host or "127.0.0.1", url.port or 5432)
    async with proxy, second_node(store, proxy.url_for(database_url)) as heard:
        proxy.silence()
        game = await new_game(store)
        await store.commit(move(game.id, 0))  # not heard: nothing reaches the listener
        while not heard.resets:  # listening again, on a new connection
            await heard.wait()
        assert heard.resets == 1
        said = [r.getMessage() for r in caplog.records if r.name == notify.__name__]
        assert said == [
            "change listener failed (its connection did not answer in 0.3 s); reconnecting"
        ], said
        await store.commit(move(game.id, 1))
        while game.id not in heard.changes:
            await heard.wait()


async def test_a_node_that_cannot_listen_for_a_while_is_not_ready(
    store: Store, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A node whose listening connection could not be made again (its pool still
    answering) said ready while it pushed no other node's moves and heard no sign-out:
    ``/readyz`` sends players elsewhere once it has been deaf for a while."""
    if not store.shared:
        pytest.skip("SQLite is served by one node: there is nothing to hear")
    monkeypatch.setattr(notify, "HEARTBEAT_S", 0.3)
    monkeypatch.setattr(notify, "DEAF_NOT_READY_S", 1.0)
    real_connect = asyncpg.connect
    refused = asyncio.Event()

    async def connect(*args: Any, **kwargs: Any) -> Any:
        listener = kwargs.get("server_settings", {}).get("application_name") == APPLICATION_NAME
        if listener and refused.is_set():
            raise OSError("connection refused")
        return await real_connect(*args, **kwargs)

    monkeypatch.setattr(asyncpg, "connect", connect)
    other = Store.connect(database_url)
    heard = Heard()
    try:
        await other.listen(heard.change, heard.reset, heard.revoke)
        await other.readiness()
        refused.set()
        async with other._engine.connect() as conn:  # its listening connection: gone
            await conn.execute(
                text(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                    f" WHERE application_name = '{APPLICATION_NAME}'"
                    " AND datname = current_database()"
                )
            )
        await asyncio.sleep(0.3)
        await other.readiness()  # deaf for less than DEAF_NOT_READY_S: still ready
        await asyncio.sleep(1.0)
        with pytest.raises(StoreUnavailable, match="not hearing other nodes"):
            await other.readiness()
        while not heard.resets:  # still deaf: what it holds is read again now and then
            await heard.wait()
        assert refused.is_set()
        refused.clear()
        resets = heard.resets
        while heard.resets == resets:  # listening again
            await heard.wait()
        await other.readiness()
    finally:
        await other.close()


async def test_a_node_whose_first_listen_is_not_answered_still_starts(
    store: Store, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A LISTEN with no answer at start-up kept ``listen`` (and the node's start, its
    /healthz with it) waiting for as long as it lasted."""
    if not store.shared:
        pytest.skip("SQLite is served by one node: there is nothing to hear")
    monkeypatch.setattr(notify, "HEARTBEAT_S", 0.3)
    real_connect = asyncpg.connect

    async def connect(*args: Any, **kwargs: Any) -> Any:
        connection = await real_connect(*args, **kwargs)
        listener = kwargs.get("server_settings", {}).get("application_name") == APPLICATION_NAME
        return _ListenHangs(connection) if listener else connection

    monkeypatch.setattr(asyncpg, "connect", connect)
    other = Store.connect(database_url)
    heard = Heard()
    try:
        await asyncio.wait_for(other.listen(heard.change, heard.reset, heard.revoke), 5)
    finally:
        await other.close()


class _ListenHangs:
    """A listening connection whose LISTEN is never answered (a silent network)."""

    def __init__(self, connection: Any) -> None:
        self._connection = connection

    def __getattr__(self, name: str) -> Any:
        return getattr(self._connection, name)

    async def add_listener(self, *_: object) -> None:
        await asyncio.Event().wait()


class _ListenerFails:
    """A listening connection whose ``add_listener`` fails as asyncpg's does when the
    connection is closed under it; everything else is the real connection's."""

    def __init__(self, connection: Any) -> None:
        self._connection = connection

    def __getattr__(self, name: str) -> Any:
        return getattr(self._connection, name)

    async def add_listener(self, *_: object) -> None:
        raise asyncpg.exceptions.InternalClientError("the connection was closed under it")


@pytest.mark.parametrize("step", ["connect", "add_listener"])
async def test_a_listener_outlives_a_failure_on_the_client_side(
    store: Store, database_url: str, monkeypatch: pytest.MonkeyPatch, step: str
) -> None:
    """asyncpg's own errors (``InterfaceError``, ``InternalClientError``) are not
    ``PostgresError``s: the listener retries after them as after a lost connection,
    instead of ending and leaving the node deaf to the others' commits."""
    real_connect = asyncpg.connect
    failed: list[str] = []

    async def connect(*args: Any, **kwargs: Any) -> Any:
        ours = kwargs.get("server_settings", {}).get("application_name") == APPLICATION_NAME
        if not ours or failed:
            return await real_connect(*args, **kwargs)
        failed.append(step)
        if step == "connect":
            raise asyncpg.InterfaceError("connection was closed in the middle of operation")
        return _ListenerFails(await real_connect(*args, **kwargs))

    monkeypatch.setattr(asyncpg, "connect", connect)
    async with second_node(store, database_url) as heard:
        assert failed == [step]
        while not heard.resets:  # listening again; what it may have missed is rechecked
            await heard.wait()
        assert heard.resets == 1
        game = await new_game(store)
        await store.commit(move(game.id, 0))
        while not heard.changes:
            await heard.wait()
        assert heard.changes == [game.id]


async def test_a_node_hears_its_own_commit_when_it_lost_the_answer(
    store: Store, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A commit that timed out may land after all, after the node's catch-up read the
    store: the node's own notification is then how it learns, for that game only."""
    mine = Heard()
    await store.listen(mine.change, mine.reset)
    async with second_node(store, database_url) as heard:
        game, other = await new_game(store), await new_game(store, name="bo")
        submit = store._committer.submit
        landing: list[asyncio.Task[Any]] = []

        async def land_later(write: Any) -> Any:
            await asyncio.sleep(0.1)  # held on the way, as by a frozen network
            return await submit(write)

        async def answer_lost(write: Any) -> Any:
            landing.append(asyncio.create_task(land_later(write)))
            raise StoreUnavailable("the database did not answer in time")

        monkeypatch.setattr(store._committer, "submit", answer_lost)
        with pytest.raises(StoreUnavailable):
            await store.commit(move(game.id, 0))
        monkeypatch.undo()
        await landing[0]  # committed after all, and announced
        await mine.wait()
        assert mine.changes == [game.id]
        await heard.wait()
        await store.commit(move(game.id, 1))  # answered: no doubt left
        await store.commit(move(other.id, 0))
        while heard.changes != [game.id, game.id, other.id]:
            await heard.wait()
        await asyncio.sleep(0.2)  # the node's own notifications came with the other's
        assert mine.changes == [game.id]


def lands_later(store: Store, monkeypatch: pytest.MonkeyPatch) -> list[asyncio.Task[None]]:
    """Have the store's next write transaction answer ``StoreUnavailable`` once its work
    is done, and commit 0.1 s later (held on the way, as by a frozen network): the task
    that lands it."""
    real = store._transaction
    landing: list[asyncio.Task[None]] = []

    @asynccontextmanager
    async def transaction() -> AsyncIterator[Any]:
        monkeypatch.undo()
        context = real()
        yield await context.__aenter__()

        async def commit_later() -> None:
            await asyncio.sleep(0.1)
            await context.__aexit__(None, None, None)

        landing.append(asyncio.create_task(commit_later()))
        raise StoreUnavailable("the database did not answer in time")

    monkeypatch.setattr(store, "_transaction", transaction)
    return landing


@pytest.mark.parametrize("revoke", ["rotate", "everywhere"])
async def test_a_node_hears_its_own_revocation_when_it_lost_the_answer(
    store: Store, database_url: str, monkeypatch: pytest.MonkeyPatch, revoke: str
) -> None:
    """As a game's commit: a revocation answered ``StoreUnavailable`` may land after the
    node's check of its connections' tokens; its own notification then tells it, and
    that revocation's only."""
    if not store.shared:
        pytest.skip("SQLite is served by one node: there is nothing to hear")
    mine = Heard()
    await store.listen(mine.change, mine.reset, mine.revoke)
    player, token = await store.create_player("ann")
    landing = lands_later(store, monkeypatch)
    with pytest.raises(StoreUnavailable):
        if revoke == "rotate":
            await store.rotate_token(token)
        else:
            await store.revoke_tokens(player.id)
    await landing[0]  # committed after all, and announced
    await mine.wait()
    assert mine.revoked == [(player.id, hash_token(token) if revoke == "rotate" else None)]
    async with second_node(store, database_url) as heard:  # answered: no doubt left
        await store.issue_token(player.id)
        assert await store.revoke_tokens(player.id)
        await heard.wait()
    assert len(mine.revoked) == 1


async def test_a_node_hears_its_own_pause_when_it_lost_the_answer(
    store: Store, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pause (or a resume) answered ``StoreUnavailable`` may land after the node's
    catch-up read the game, as a commit may: its own notification then tells it."""
    if not store.shared:
        pytest.skip("SQLite is served by one node: there is nothing to hear")
    mine = Heard()
    await store.listen(mine.change, mine.reset)
    game = await new_game(store)
    landing = lands_later(store, monkeypatch)
    with pytest.raises(StoreUnavailable):
        await store.set_paused(game.id, True)
    await landing[0]  # committed after all, and announced
    await mine.wait()
    assert mine.changes == [game.id]
    async with second_node(store, database_url) as heard:  # answered: no doubt left
        await store.set_paused(game.id, False)
        await heard.wait()
    assert mine.changes == [game.id]


async def test_revocations_are_heard_by_the_other_node_only(
    store: Store, database_url: str
) -> None:
    """Each revocation (a token signed out, one rotated, every token of a player) is told
    with its commit, naming the player and the token's hash; one that revoked nothing
    tells nothing, and game commits go to ``on_change`` alone."""
    mine = Heard()
    await store.listen(mine.change, mine.reset, mine.revoke)
    async with second_node(store, database_url) as heard:
        player, token = await store.create_player("ann")
        second = await store.issue_token(player.id)
        rotated = await store.rotate_token(token)
        assert rotated is not None
        await heard.wait()
        assert heard.revoked == [(player.id, hash_token(token))]
        assert await store.rotate_token(token) is None  # gone: nothing revoked, nothing told
        assert not await store.revoke_token(token)
        assert await store.revoke_token(second)
        await heard.wait()
        assert heard.revoked[1:] == [(player.id, hash_token(second))]
        game = await new_game(store)
        await store.commit(move(game.id, 0))
        await heard.wait()
        assert await store.revoke_tokens(player.id) == 1
        await heard.wait()
        assert heard.revoked[2:] == [(player.id, None)]
        assert await store.revoke_tokens(player.id) == 0
        await store.commit(move(game.id, 1))
        while heard.changes != [game.id, game.id]:
            await heard.wait()
        assert len(heard.revoked) == 3  # the second sign-out everywhere revoked none
        assert mine.revoked == [] and mine.changes == []  # a node does not hear itself


async def test_a_rolled_back_revocation_tells_nothing(
    store: Store, database_url: str, engine: AsyncEngine
) -> None:
    async with second_node(store, database_url) as heard, engine.connect() as conn:
        notify = text("SELECT pg_notify(:channel, :payload)")
        await conn.execute(notify, {"channel": SIGN_OUTS, "payload": "elsewhere 41"})
        await conn.rollback()
        await conn.execute(notify, {"channel": SIGN_OUTS, "payload": f"elsewhere 42 {HASH}"})
        await conn.execute(notify, {"channel": SIGN_OUTS, "payload": "elsewhere 1,2"})  # no
        await conn.commit()
        await heard.wait()
        await asyncio.sleep(0.1)
        assert heard.revoked == [(42, HASH)] and heard.changes == []


async def test_known_tokens_are_those_not_revoked_read_a_batch_at_a_time(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store_module, "TOKENS_PER_READ", 2)
    reads: list[int] = []
    fetch = players.fetch_known_hashes

    async def counted(conn: Any, hashes: Any) -> set[str]:
        reads.append(len(hashes))
        return await fetch(conn, hashes)

    monkeypatch.setattr(players, "fetch_known_hashes", counted)
    player, token = await store.create_player("ann")
    tokens = [token, *[await store.issue_token(player.id) for _ in range(3)]]
    assert await store.revoke_token(tokens[1])
    rotated = await store.rotate_token(tokens[2])
    assert rotated is not None
    asked = [hash_token(t) for t in [*tokens, rotated, "never issued"]]
    known = await store.known_tokens([*asked, asked[0]])
    assert known == {hash_token(tokens[0]), hash_token(tokens[3]), hash_token(rotated)}
    assert reads == [2, 2, 2]  # six different hashes, two a read
    assert await store.known_tokens([]) == set()
    assert reads == [2, 2, 2]
