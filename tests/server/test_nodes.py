"""Two server nodes on one PostgreSQL database: one player, a game open on both.

Each test starts two ``ScorpionServer``s on the same database (as two
replicas behind a load balancer would run) and connects one client to each
with the same player's token. PostgreSQL only: SQLite is served by one node.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.server.client import TIMEOUT, Client
from tests.server.conftest import Running, quiet_settings
from tests.server.store.conftest import PG_EXAMPLE, PG_VARIABLE, _admin
from tests.server.test_play import play

Message = dict[str, Any]


@pytest.fixture
async def nodes(
    server_postgres_url: str | None, tmp_path: Path
) -> AsyncIterator[tuple[Running, Running]]:
    if server_postgres_url is None:
        pytest.skip(f"multi-node tests need PostgreSQL: set {PG_VARIABLE}, e.g. {PG_EXAMPLE}")
    await _admin(server_postgres_url, "DROP SCHEMA public CASCADE", "CREATE SCHEMA public")
    settings = quiet_settings(tmp_path, database_url=server_postgres_url)
    first, second = Running(settings), Running(settings)
    await first.start()
    await second.start()
    yield first, second
    await first.stop()
    await second.stop()


async def two_devices(nodes: tuple[Running, Running]) -> tuple[Client, Client, int]:
    """One player on node A and node B, with hard deal 1 open on both."""
    a_node, b_node = nodes
    on_a = await a_node.player("kai")
    game = (await on_a.request("new_game", level="hard", deal=1))["game"]
    on_b = await b_node.connect()
    await on_b.hello(on_a.token)
    opened = await on_b.request("open_game", game=game)
    assert opened["type"] == "game" and opened["v"] == 0
    return on_a, on_b, game


def not_clock(messages: list[Message]) -> list[Message]:
    """The ``events`` pushes that are not clock starts and stops."""
    return [m for m in messages if m["type"] == "events" and m["events"][0]["type"] != "clock"]


async def sees(client: Client, v: int) -> None:
    """Wait until ``client`` was pushed the events of version ``v``."""
    async with asyncio.timeout(TIMEOUT):
        while v and not any(m["v"] >= v for m in not_clock(client.frames)):
            await asyncio.sleep(0.01)


async def test_moves_on_either_node_reach_both(nodes: tuple[Running, Running]) -> None:
    on_a, on_b, game = await two_devices(nodes)
    steps: list[tuple[Client, dict[str, Any]]] = [
        (on_a, {"type": "move", "card": "7C", "to": 5}),
        (on_b, {"type": "undo"}),
        (on_a, {"type": "deal"}),
        (on_b, {"type": "restart"}),
    ]
    v = 0
    for client, step in steps:
        await sees(client, v)  # each device acts on the version it was told about
        reply = await play(client, game, v, step)
        assert reply["type"] == "ack" and reply["v"] == v + 1, reply
        v = reply["v"]
    await sees(on_a, v)
    await sees(on_b, v)
    assert [m["v"] for m in not_clock(on_a.frames)] == [1, 2, 3, 4]
    assert not_clock(on_a.frames) == not_clock(on_b.frames)


async def test_same_version_on_two_nodes_one_wins_one_is_stale(
    nodes: tuple[Running, Running],
) -> None:
    on_a, on_b, game = await two_devices(nodes)
    replies = await asyncio.gather(
        on_a.request("move", game=game, v=0, card="7C", to=5),
        on_b.request("deal", game=game, v=0),
    )
    kinds = sorted(reply["type"] for reply in replies)
    assert kinds == ["ack", "error"], replies
    refused = next(reply for reply in replies if reply["type"] == "error")
    assert refused["code"] == "stale" and refused["v"] == 1
    # The refused device resyncs as PROTOCOL.md says (open_game since its version)
    # and goes on from there; both devices then see the next action alike.
    loser, winner = (on_a, on_b) if replies[0]["type"] == "error" else (on_b, on_a)
    caught = await loser.request("open_game", game=game, since=0)
    assert caught["type"] == "catch_up" and caught["v"] == 1
    assert [batch["v"] for batch in caught["events"]] == [1]
    assert (await loser.request("undo", game=game, v=1))["v"] == 2
    await sees(winner, 2)
    await sees(loser, 2)
    assert not_clock(winner.frames)[-1] == not_clock(loser.frames)[-1]
    assert not_clock(winner.frames)[-1]["v"] == 2


async def test_an_action_at_a_version_only_the_other_node_has_heard_of_is_applied(
    nodes: tuple[Running, Running], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A device that saw version 1 (played on node A) acts on node B before B has heard
    of it: B catches up from the store and applies the action, rather than answering
    ``stale`` with the version it has (which names an older version than the device's)."""
    on_a, on_b, game = await two_devices(nodes)
    store = nodes[1].server.store
    assert store is not None and store._listener is not None
    listener = store._listener
    monkeypatch.setattr(listener, "_on_change", lambda game_ids: None)  # B hears nothing
    moved = await on_a.request("move", game=game, v=0, card="7C", to=5)
    assert moved["type"] == "ack" and moved["v"] == 1, moved
    undone = await on_b.request("undo", game=game, v=1)
    assert undone["type"] == "ack" and undone["v"] == 2, undone
    await sees(on_b, 2)
    assert [m["v"] for m in not_clock(on_b.frames)] == [1, 2]  # B pushed version 1 first
    # A version no node has is still stale, naming the store's.
    ahead = await on_b.request("deal", game=game, v=9)
    assert ahead["type"] == "error" and ahead["code"] == "stale" and ahead["v"] == 2, ahead


async def test_a_sign_out_while_an_action_catches_up_applies_nothing(
    nodes: tuple[Running, Running], monkeypatch: pytest.MonkeyPatch
) -> None:
    """While node B reads the store to catch up for an action at a version beyond its
    own, a ``sign_out`` with ``everywhere`` on another of B's connections signs the
    acting connection out: the action is ``unauthenticated`` and changes nothing."""
    on_a, on_b, game = await two_devices(nodes)
    b_node = nodes[1].server
    store = b_node.store
    assert store is not None and store._listener is not None
    monkeypatch.setattr(store._listener, "_on_change", lambda game_ids: None)
    moved = await on_a.request("move", game=game, v=0, card="7C", to=5)
    assert moved["type"] == "ack" and moved["v"] == 1, moved
    third = await nodes[1].connect()
    assert (await third.hello(on_a.token))["type"] == "welcome"
    entered, released = asyncio.Event(), asyncio.Event()
    load_game = store.load_game

    async def held(*args: Any, **kwargs: Any) -> Any:
        entered.set()
        await released.wait()
        return await load_game(*args, **kwargs)

    monkeypatch.setattr(store, "load_game", held)
    acting = asyncio.create_task(on_b.request("undo", game=game, v=1))
    await asyncio.wait_for(entered.wait(), TIMEOUT)
    assert (await third.request("sign_out", everywhere=True))["type"] == "signed_out"
    released.set()
    reply = await acting
    assert reply["type"] == "error" and reply["code"] == "unauthenticated", reply
    monkeypatch.setattr(store, "load_game", load_game)
    record, actions = await store.load_game(game, 0)
    assert record is not None and record.version == 1 and len(actions) == 1  # no undo


async def test_resigning_on_one_node_ends_the_game_on_the_other(
    nodes: tuple[Running, Running],
) -> None:
    on_a, on_b, game = await two_devices(nodes)
    assert (await on_b.request("resign", game=game))["v"] == 1
    await sees(on_a, 1)
    lost = [e for m in not_clock(on_a.frames) for e in m["events"]]
    assert {"type": "game_lost", "reason": "resigned", "deal": 1} in lost
    refused = await on_a.request("move", game=game, v=1, card="7C", to=5)
    assert refused["code"] == "game_over"
    stats = await on_a.request("stats", level="hard")
    assert stats["stats"][0]["losses"] == 1


async def test_pausing_on_one_node_stops_the_clock_on_the_other(
    nodes: tuple[Running, Running],
) -> None:
    on_a, on_b, game = await two_devices(nodes)
    assert (await on_b.request("pause", game=game))["type"] == "ack"
    async with asyncio.timeout(TIMEOUT):
        while not any(
            event == {**event, "type": "clock", "running": False}
            for m in on_a.frames
            if m["type"] == "events"
            for event in m["events"]
        ):
            await asyncio.sleep(0.01)
