"""What a connection is sent is committed state, on every node, whatever the interleaving.

One test per fault the multi-node runs found, each forcing its interleaving
with hooks (a commit held until released, a load held until another node's
notification has arrived) instead of hoping for it:

1. a refused action is never served (not even to a request waiting behind it);
2. after a refused action the node still relays the game to its watchers;
3. a load that races another node's change ends with the newer state;
4. ``new_game`` abandons a game another device keeps changing, never ``stale``;
5. ``lost_position`` carries only a version whose events were already sent.

Also: a ``won`` event reaching a device through ``catch_up`` carries ``stats``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

import pytest

from engine.solver.easy import shipped_easy_deals
from server.live import strings_in
from server.service import GameService
from server.store import Ending, GameWrite, pg_reader
from tests.server.client import TIMEOUT
from tests.server.conftest import Running
from tests.server.test_nodes import nodes, not_clock, sees, two_devices
from tests.server.test_play import play, winning_line

__all__ = ["nodes"]  # the fixture, shared with test_nodes

Message = dict[str, Any]
Nodes = tuple[Running, Running]


def service_of(node: Running) -> GameService:
    assert node.server.service is not None
    return node.server.service


async def until(condition: Callable[[], bool]) -> None:
    async with asyncio.timeout(TIMEOUT):
        while not condition():
            await asyncio.sleep(0.005)


def waiters(node: Running, game: int) -> int:
    """How many requests wait for the game's lock on ``node`` (asyncio.Lock keeps them)."""
    live = service_of(node).cached(game)
    return 0 if live is None else len(getattr(live.lock, "_waiters", None) or ())


def hold_commits(
    node: Running, monkeypatch: pytest.MonkeyPatch, *, first: int = 0
) -> tuple[asyncio.Event, asyncio.Event]:
    """Hold the node's commits after the ``first`` ones until ``release`` is set."""
    store = node.server.store
    assert store is not None
    original = store.commit
    entered, release = asyncio.Event(), asyncio.Event()
    seen = 0

    async def held(write: GameWrite) -> Any:
        nonlocal seen
        seen += 1
        if seen > first:
            entered.set()
            await release.wait()
        return await original(write)

    monkeypatch.setattr(store, "commit", held)
    return entered, release


def heard(node: Running, game: int) -> asyncio.Event:
    """Set once ``node`` hears another node's notification about ``game``."""
    store = node.server.store
    assert store is not None and store._listener is not None
    listener = store._listener
    original = listener._on_change
    event = asyncio.Event()

    def on_change(game_ids: list[int]) -> None:
        original(game_ids)
        if game in game_ids:
            event.set()

    listener._on_change = on_change
    return event


def event_types(frames: list[Message]) -> list[str]:
    return [e["type"] for f in frames if f["type"] == "events" for e in f["events"]]


async def refused_on_b(nodes: Nodes, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """A deals on B at v0 while A's move at v0 wins; Z on B asks for the game meanwhile."""
    node_b = nodes[1]
    on_a, x, game = await two_devices(nodes)
    z = await node_b.connect()
    await z.hello(on_a.token)
    assert (await z.request("open_game", game=game))["v"] == 0
    entered, release = hold_commits(node_b, monkeypatch)
    deal = asyncio.create_task(x.request("deal", game=game, v=0))
    await entered.wait()  # B tried the deal and waits for its commit
    opening = asyncio.create_task(z.request("open_game", game=game, since=0))
    await until(lambda: waiters(node_b, game) >= 1)  # Z waits behind the deal
    moved = await on_a.request("move", game=game, v=0, card="7C", to=5)
    assert moved["type"] == "ack" and moved["v"] == 1
    release.set()
    refused = await deal
    assert refused["code"] == "stale" and refused["v"] == 1, refused
    return {"on_a": on_a, "x": x, "z": z, "game": game, "opened": await opening}


async def test_a_refused_action_is_never_served(
    nodes: Nodes, monkeypatch: pytest.MonkeyPatch
) -> None:
    race = await refused_on_b(nodes, monkeypatch)
    opened, z = race["opened"], race["z"]
    assert "dealt" not in event_types([opened] if opened["type"] == "events" else [])
    if opened["type"] == "game":
        assert opened["view"]["stock"] == 3  # the deal was refused: the stock is still there
    else:
        batches = opened["events"]
        assert all(e["type"] != "dealt" for b in batches for e in b["events"]), opened
    await sees(z, 1)
    assert "dealt" not in event_types(z.frames), z.frames
    assert "7C" in set(strings_in(not_clock(z.frames)))  # A's move reached Z


async def test_after_a_refused_action_the_node_still_relays_the_game(
    nodes: Nodes, monkeypatch: pytest.MonkeyPatch
) -> None:
    race = await refused_on_b(nodes, monkeypatch)
    on_a, x, z, game = race["on_a"], race["x"], race["z"], race["game"]
    await sees(z, 1)
    assert (await on_a.request("undo", game=game, v=1))["v"] == 2
    assert (await on_a.request("deal", game=game, v=2))["v"] == 3
    for watcher in (x, z, on_a):
        await sees(watcher, 3)
        versions = [m["v"] for m in not_clock(watcher.frames) if "re" not in m]
        assert versions == sorted(versions) and versions[-3:] == [1, 2, 3], versions


async def test_a_load_racing_a_change_ends_with_the_newer_state(
    nodes: Nodes, monkeypatch: pytest.MonkeyPatch
) -> None:
    node_a, node_b = nodes
    on_a = await node_a.player("lea")
    game = (await on_a.request("new_game", level="hard", deal=1))["game"]
    store_b = node_b.server.store
    assert store_b is not None and store_b._pg_reader is not None
    load_query = store_b._pg_reader._restoring  # B reads the game's row, snapshot and log
    original = pg_reader._rows
    loading, release = asyncio.Event(), asyncio.Event()

    async def held(driver: Any, query: Any, **values: Any) -> Any:
        rows = await original(driver, query, **values)
        if query is load_query and game in values["game_ids"]:  # only B loads it
            loading.set()  # what B read predates what follows
            await release.wait()
        return rows

    monkeypatch.setattr(pg_reader, "_rows", held)
    notified = heard(node_b, game)
    w = await node_b.connect()
    await w.hello(on_a.token)
    opening = asyncio.create_task(w.request("open_game", game=game))
    await loading.wait()  # B read the game (active) and has not yet rebuilt it
    assert (await on_a.request("resign", game=game))["v"] == 1
    await notified.wait()  # B heard of the resignation while loading
    release.set()
    await opening
    await until(lambda: "game_lost" in event_types(w.frames) or opening.result()["v"] == 1)
    again = await w.request("open_game", game=game)
    assert again["v"] == 1 and again["type"] == "game"
    over = await w.request("move", game=game, v=1, card="7C", to=5)
    assert over["code"] == "game_over"


async def test_new_game_abandons_a_game_another_device_keeps_changing(
    nodes: Nodes, monkeypatch: pytest.MonkeyPatch
) -> None:
    node_b = nodes[1]
    on_a, on_b, game = await two_devices(nodes)
    store_b = node_b.server.store
    assert store_b is not None
    original = store_b.commit
    plays: list[dict[str, Any]] = [
        {"type": "move", "card": "7C", "to": 5},
        {"type": "undo"},
        {"type": "move", "card": "7C", "to": 5},
    ]
    v = 0

    async def other_device_first(write: GameWrite) -> Any:
        nonlocal v
        if write.ending is Ending.ABANDONED and plays:
            reply = await play(on_a, game, v, plays.pop(0))  # A moves just before B writes
            assert reply["type"] == "ack", reply
            v = reply["v"]
        return await original(write)

    monkeypatch.setattr(store_b, "commit", other_device_first)
    started = await on_b.request("new_game", level="medium", deal=3)
    assert started["type"] == "game", started
    assert started["lost"] == game and not plays
    await sees(on_a, 4)
    lost = [e for m in not_clock(on_a.frames) for e in m["events"] if e["type"] == "game_lost"]
    assert lost == [{"type": "game_lost", "reason": "abandoned", "deal": 1}]


async def test_a_game_changed_before_every_try_says_so_not_storage_unavailable(
    nodes: Nodes, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Another device that wins every race (as fast as the database answers) made
    ``new_game`` answer "Storage is unavailable", logged as a database failure with a
    stack, while the database was well. It is ``unavailable`` still (retry), in words
    that say why, and logged as what it is."""
    node_b = nodes[1]
    on_a, on_b, game = await two_devices(nodes)
    store_b = node_b.server.store
    assert store_b is not None
    original = store_b.commit
    v = 0

    async def other_device_first(write: GameWrite) -> Any:
        nonlocal v
        if write.ending is Ending.ABANDONED:
            step = {"type": "move", "card": "7C", "to": 5} if v % 2 == 0 else {"type": "undo"}
            reply = await play(on_a, game, v, step)
            assert reply["type"] == "ack", reply
            v = reply["v"]
        return await original(write)

    monkeypatch.setattr(store_b, "commit", other_device_first)
    with caplog.at_level(logging.INFO, logger="server"):
        refused = await on_b.request("new_game", level="medium", deal=3)
    assert refused["code"] == "unavailable" and "keeps changing" in refused["message"], refused
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING], caplog.text
    assert "lost 8 races in a row" in caplog.text
    monkeypatch.setattr(store_b, "commit", original)
    started = await on_b.request("new_game", level="medium", deal=3)
    assert started["type"] == "game" and started["lost"] == game, started


async def test_lost_position_names_only_a_version_already_sent(
    server: Running, monkeypatch: pytest.MonkeyPatch
) -> None:
    service = service_of(server)
    service.solver.lost_budget_ms = 1000
    first_check, calls = asyncio.Event(), 0

    async def verdict(state: object, rules: object) -> str:
        nonlocal calls
        calls += 1
        if calls == 1:
            return "unknown"  # the check at the deal, as the game starts
        if calls == 2:
            await first_check.wait()
            return "unknown"
        return "lost"  # as if remembered: answered at once

    monkeypatch.setattr(service.solver, "verdict", verdict)
    mia = await server.player("mia")
    game = (await mia.request("new_game", level="hard", deal=1))["game"]
    await until(lambda: calls == 1)
    assert (await mia.request("move", game=game, v=0, card="7C", to=5))["v"] == 1
    await until(lambda: calls == 2)  # the check of v1 is running
    assert (await mia.request("undo", game=game, v=1))["v"] == 2  # asks for a recheck
    entered, release = hold_commits(server, monkeypatch)
    third = asyncio.create_task(mia.request("move", game=game, v=2, card="7C", to=5))
    await entered.wait()  # v3 is being stored, not yet sent
    first_check.set()
    await until(lambda: calls == 3)
    await asyncio.sleep(0.05)  # let a (wrong) push of the recheck through, if any
    release.set()
    assert (await third)["v"] == 3
    await mia.events_until(3)
    # the verdict on v3 is pushed after v3 itself: on a loaded machine, a moment later
    await until(lambda: "lost_position" in event_types(mia.frames))
    told = 0
    for frame in mia.frames:
        if frame["type"] in ("events", "ack", "game"):
            if any(e["type"] == "lost_position" for e in frame.get("events", [])):
                assert frame["v"] == told, (frame, told)
            told = max(told, frame["v"])
    assert "lost_position" in event_types(mia.frames)


async def test_a_won_event_from_catch_up_carries_stats(server: Running) -> None:
    deal = shipped_easy_deals()[0]
    ada = await server.player("ada")
    game = (await ada.request("new_game", level="medium", deal=deal))["game"]
    v = 0
    for step in winning_line("medium", deal):
        v = (await play(ada, game, v, step))["v"]
    pushed = [e for f in await ada.events_until(v) for e in f.get("events", [])]
    live_won = next(e for e in pushed if e["type"] == "won")
    await server.restart()  # the game is loaded from the store again
    again = await server.connect()
    await again.hello(ada.token)
    caught = await again.request("open_game", game=game, since=v - 1)
    assert caught["type"] == "catch_up"
    won = [e for b in caught["events"] for e in b["events"] if e["type"] == "won"]
    assert won and won[0]["stats"] == live_won["stats"]


async def test_a_watched_game_dropped_from_memory_is_still_relayed(nodes: Nodes) -> None:
    on_a, on_b, game = await two_devices(nodes)
    service_b = service_of(nodes[1])
    live = service_b.cached(game)
    assert live is not None
    service_b._forget(live)  # as after a log that would not replay
    assert service_b.cached(game) is None
    assert (await on_a.request("move", game=game, v=0, card="7C", to=5))["v"] == 1
    assert (await on_a.request("undo", game=game, v=1))["v"] == 2
    await sees(on_b, 2)
    assert [m["v"] for m in not_clock(on_b.frames)] == [1, 2]
    assert not_clock(on_b.frames) == not_clock(on_a.frames)
