"""The server's play clock (R22): runs while watched and not paused, pushed as clock events."""

from __future__ import annotations

import asyncio

import pytest

from server import service as service_module
from server.clock import PlayClock
from tests.server.client import Client
from tests.server.conftest import Running


def test_play_clock_banks_time_between_runs() -> None:
    now = [100.0]
    clock = PlayClock(500, monotonic=lambda: now[0])
    assert clock.now_ms() == 500 and not clock.running
    clock.start()
    now[0] += 2.0
    assert clock.now_ms() == 2500
    clock.stop()
    now[0] += 10.0
    assert clock.now_ms() == 2500
    clock.advance_to(3000)
    assert clock.now_ms() == 3000


def test_a_held_clock_stops_at_the_time_given_running_or_not() -> None:
    """The store's time for a paused game, even below what this clock ran on to."""
    now = [100.0]
    clock = PlayClock(500, monotonic=lambda: now[0])
    clock.start()
    now[0] += 2.0
    clock.hold(900)
    now[0] += 5.0
    assert (clock.now_ms(), clock.running) == (900, False)
    clock.hold(700)
    assert clock.now_ms() == 700


async def clock_events(client: Client) -> list[tuple[bool, int]]:
    await client.request("ping")
    return [
        (event["running"], event["time_ms"])
        for push in client.drain()
        for event in push.get("events", [])
        if event["type"] == "clock"
    ]


async def test_clock_events_on_open_pause_resume_close(server: Running) -> None:
    lee = await server.player("lee")
    game = (await lee.request("new_game", level="hard", deal=1))["game"]
    assert [running for running, _ in await clock_events(lee)] == [True]
    await asyncio.sleep(0.05)
    assert (await lee.request("pause", game=game))["type"] == "ack"
    [(running, paused_at)] = await clock_events(lee)
    assert running is False and paused_at >= 40
    await asyncio.sleep(0.05)
    move = await lee.request("move", game=game, v=0, card="7C", to=5)
    assert move["code"] == "paused"  # a pause pauses play, not only the clock
    assert (await lee.request("resume", game=game))["v"] == 0
    [(running, resumed_at)] = await clock_events(lee)
    assert running is True and resumed_at == paused_at  # paused time is not play time
    other = await server.connect()
    await other.hello(lee.token)
    await other.request("open_game", game=game)
    assert await clock_events(lee) == []  # already running: nothing changes
    await other.request("close_game", game=game)
    assert (await lee.request("close_game", game=game))["type"] == "ack"
    assert await clock_events(lee) == []  # nobody watches any more: no watcher to tell
    view = (await lee.request("open_game", game=game))["view"]
    assert view["time_ms"] >= paused_at
    assert [running for running, _ in await clock_events(lee)] == [True]


async def test_time_since_the_last_action_survives_a_restart(server: Running) -> None:
    """Pausing, closing or shutting down banks the play time: a restart gives none back."""
    ida = await server.player("ida")
    token = ida.token
    game = (await ida.request("new_game", level="hard", deal=1))["game"]
    assert (await ida.request("move", game=game, v=0, card="7C", to=5))["v"] == 1
    await asyncio.sleep(0.2)
    await ida.request("pause", game=game)
    [(_, paused_at)] = [entry for entry in await clock_events(ida) if not entry[0]]
    assert paused_at >= 150
    await ida.request("resume", game=game)
    await asyncio.sleep(0.2)  # still open when the server shuts down
    await server.restart()
    again = await server.connect()
    await again.hello(token)
    view = (await again.request("open_game", game=game))["view"]
    assert view["time_ms"] >= paused_at + 150
    assert (await again.request("undo", game=game, v=1))["v"] == 2


async def test_a_paused_game_stays_paused_after_a_restart(server: Running) -> None:
    max_ = await server.player("max")
    token = max_.token
    game = (await max_.request("new_game", level="hard", deal=1))["game"]
    await max_.request("pause", game=game)
    await server.restart()
    again = await server.connect()
    await again.hello(token)
    opened = await again.request("open_game", game=game)
    assert opened["type"] == "game"
    assert await clock_events(again) == []  # opened, but paused: the clock does not start
    await again.request("resume", game=game)
    assert [running for running, _ in await clock_events(again)] == [True]


async def test_once_shutdown_has_stopped_the_clocks_no_request_starts_one(
    server: Running,
) -> None:
    """Requests still arriving while the connections close (an open_game, a move) leave
    the clock where the signal stopped it: the time played ends at the signal."""
    lee = await server.player("lee")
    game = (await lee.request("new_game", level="hard", deal=1))["game"]
    service = server.server.service
    assert service is not None
    live = service.cached(game)
    assert live is not None and live.clock.running
    service.stop_clocks()
    stopped_at = live.clock.now_ms()
    again = await server.connect()
    await again.hello(lee.token)
    assert (await again.request("open_game", game=game))["view"]["running"] is False
    assert (await lee.request("move", game=game, v=0, card="7C", to=5))["type"] == "ack"
    await lee.request("close_game", game=game)
    assert not live.clock.running
    await asyncio.sleep(0.1)
    assert live.clock.now_ms() == stopped_at


async def test_a_running_clock_is_banked_on_every_store(
    server: Running, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On SQLite the play time since the last action reached the store only when the
    clock stopped: a crash (kill -9) after 35 s with the game open and no action gave
    all 35 s back. Running clocks bank their time every ``CLOCK_BANK_S`` on every
    store, so a crash loses at most that much."""
    monkeypatch.setattr(service_module, "CLOCK_BANK_S", 0.2)
    kim = await server.player("kim")
    game = (await kim.request("new_game", level="hard", deal=1))["game"]
    await asyncio.sleep(1.0)
    store = server.server.store
    assert store is not None
    record = await store.get_game(game)
    assert record is not None and record.time_ms >= 600, record
