"""Issue 12's faults 1-4 and 7, each reproduced against a real server with tight settings.

1. a client that stops reading holds bounded memory and is closed (1001), logged;
2. a long history costs bounded work (``open_game since=0``), a game has a most
   versions, the history kept in memory is bounded;
3. a long replay comes in pages, each within the frame limit;
4. rate limits (``rate_limited`` with ``retry_after_ms``), strikes that survive a
   reconnect, caps on connections, the hello deadline, the idle timeout, the
   trusted proxy header;
7. a client that does not answer keepalive gets 1011 and a log line; ``Origin``.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import logging
import selectors
import socket
import struct
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, cast

import msgpack
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.typing import Origin, Subprotocol

from engine.game import Game
from engine.levels import LEVELS
from engine.replay import parse_replay, rebuild
from protocol import MAX_SERVER_FRAME_BYTES, REPLAY_PAGE_ACTIONS, SUBPROTOCOL, build, encode
from protocol.messages import SERVER_MESSAGES
from server import connection, logs
from server import service as service_module
from server.config import Settings, published_limits
from server.connection import HANDSHAKES_PER_ADDRESS
from server.limits import Rate
from server.live import LiveGame
from server.service import GameService
from server.store import GameRecord, GameStatus
from tests.server.client import Client
from tests.server.conftest import OPEN, Start
from tests.server.http_get import http_get
from tests.server.raw import RawClient


async def long_game(client: Client, versions: int, *, finish: bool = False) -> int:
    """A hard game with ``versions`` restarts (pipelined, in chunks that each have the
    client's timeout: thousands at once could outlast it on a busy machine), resigned
    when ``finish``."""
    game = int((await client.request("new_game", level="hard", deal=1))["game"])
    for first in range(0, versions, 500):
        replies = await client.pipeline(
            [
                {"type": "restart", "game": game, "v": v}
                for v in range(first, min(first + 500, versions))
            ]
        )
        assert all(reply["type"] == "ack" for reply in replies), replies[-1]
    if finish:
        assert (await client.request("resign", game=game))["type"] == "ack"
    return game


async def wait_for(condition: Callable[[], bool], seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        await asyncio.sleep(0.05)
    return condition()


# -- 1. a client that stops reading ------------------------------------------------------


async def test_a_client_that_stops_reading_holds_bounded_memory_and_is_closed(
    start: Start, caplog: pytest.LogCaptureFixture
) -> None:
    budget = 256 * 1024
    server = await start(outbox_bytes=budget, drain_timeout_ms=1500, **OPEN)
    ada = await server.player("ada")
    game = await long_game(ada, 1500, finish=True)  # a replay of about 30 KB
    handler = server.server.handler
    assert handler is not None
    raw = await RawClient.open(server.server.port)
    raw.send({"type": "hello", "id": 0, "protocol": 1, "client": "raw/1", "locale": "en"})
    raw.send({"type": "hello", "id": 1, "protocol": 1, "client": "raw/1", "locale": "en",
              "token": ada.token})  # fmt: skip
    peak = 0
    with caplog.at_level(logging.WARNING, logger="server"):
        for i in range(400):  # about 12 MB asked for, never read
            raw.send({"type": "replay", "id": 2 + i, "game": game})
            if i % 20 == 0:
                await asyncio.sleep(0.01)
                peak = max(peak, handler.buffered_bytes())
        closed = await wait_for(lambda: handler.open == 1, 15.0)  # only ada is left
        peak = max(peak, handler.buffered_bytes())
    # The outbox's budget, plus what the socket layer holds: one frame and its write limit.
    assert peak <= budget + MAX_SERVER_FRAME_BYTES + 64 * 1024, peak
    assert closed, "a client that reads nothing is still connected"
    assert any("does not read" in r.getMessage() or "did not read" in r.getMessage()
               for r in caplog.records)  # fmt: skip
    assert handler.buffered_bytes() < 64 * 1024  # its memory went with it
    await raw.close()
    assert (await ada.request("ping"))["type"] == "pong"  # the reader was never hurt


async def test_a_client_that_stops_reading_as_its_socket_fills_is_closed_in_time(
    start: Start,
) -> None:
    """The write that empties a client's outbox may be the one that fills its socket
    (websockets pauses writing past its high-water mark): when nothing more is queued
    for it, the drain timeout still closes it, and the line names its connection. (The
    socket is filled well within the drain timeout, which closes a peer that takes
    nothing whether or not its socket is full.)"""
    server = await start(drain_timeout_ms=5000, keepalive_ms=0, idle_timeout_ms=60_000, **OPEN)
    ada = await server.player("ada")
    game = await long_game(ada, 1500, finish=True)  # a replay of about 30 KB
    handler = server.server.handler
    assert handler is not None
    raw = await RawClient.open(server.server.port)
    raw.send({"type": "hello", "id": 1, "protocol": 1, "client": "raw/1", "locale": "en",
              "token": ada.token})  # fmt: skip
    assert await wait_for(lambda: len(handler._sockets) == 2)
    ws = list(handler._sockets.values())[-1]
    lines = io.StringIO()
    written, _limiter = logs.make_handler(stream=lines)  # as the server's log shows them
    logging.getLogger("server").addHandler(written)
    try:
        answered = handler.metrics._answered.get("replay", 0)
        for i in range(500):  # one request at a time, until a reply leaves the socket full
            raw.send({"type": "replay", "id": 2 + i, "game": game})
            answered += 1
            by = time.monotonic() + 10.0
            while handler.metrics._answered.get("replay", 0) < answered:
                assert time.monotonic() < by, "a replay was not answered"
                await asyncio.sleep(0.001)  # answered, and its reply written
            if ws.paused:
                break
        assert ws.paused and not handler.queued_bytes(), "the socket never filled"
        closed = await wait_for(lambda: handler.open == 1, 15.0)
    finally:
        logging.getLogger("server").removeHandler(written)
    assert closed, "a client that stopped reading as its socket filled is still connected"
    (line,) = [each for each in lines.getvalue().splitlines() if "did not read" in each]
    assert " connection=2:" in line, line  # the raw client's, not ada's (the first)
    await raw.close()
    assert (await ada.request("ping"))["type"] == "pong"


async def test_a_client_that_stops_reading_while_the_kernel_holds_its_replies_is_closed(
    start: Start, caplog: pytest.LogCaptureFixture
) -> None:
    """Small replies to a client that reads nothing may all fit in the kernel's send
    buffer (it grows to megabytes): the outbox is empty and websockets never pauses
    writing, yet the peer takes none of them. The drain timeout closes it all the same
    (1001), logged; a connection with nothing waiting for it stays open."""
    server = await start(drain_timeout_ms=500, keepalive_ms=0, idle_timeout_ms=60_000, **OPEN)
    ada = await server.player("ada")
    handler = server.server.handler
    assert handler is not None
    raw = await RawClient.open(server.server.port)
    raw.send({"type": "hello", "id": 1, "protocol": 1, "client": "raw/1", "locale": "en"})
    assert await wait_for(lambda: len(handler._sockets) == 2)
    pings = 20_000  # some 400 KB of pongs
    answered = handler.metrics._answered.get("ping", 0) + pings
    with caplog.at_level(logging.WARNING, logger="server"):
        for i in range(pings):
            raw.send({"type": "ping", "id": 2 + i})
        assert await wait_for(lambda: handler.metrics._answered.get("ping", 0) >= answered, 30.0)
        assert not handler.queued_bytes()  # every reply went to the socket
        closed = await wait_for(lambda: handler.open == 1, 15.0)
    assert closed, "a client whose replies wait in the kernel is still connected"
    assert any("did not read its frames within 0.5 s" in r.getMessage() for r in caplog.records)
    went_away = handler.metrics.registry.get_sample_value(
        "scorpion_connections_closed_total", {"code": "1001"}
    )
    assert went_away == 1
    await raw.close()
    assert (await ada.request("ping"))["type"] == "pong"


async def test_a_client_that_reads_slowly_but_steadily_is_not_closed(start: Start) -> None:
    """The drain timeout closes a socket whose peer takes none of its bytes in that
    time, not one that holds bytes for longer while the peer reads on: every reply
    reaches a client that reads a few KB at a time, for several drain timeouts. And
    once it has read them all, its socket is no longer watched."""
    server = await start(drain_timeout_ms=2000, keepalive_ms=0, idle_timeout_ms=60_000, **OPEN)
    handler = server.server.handler
    assert handler is not None
    raw = await RawClient.open(server.server.port)
    raw.send({"type": "hello", "id": 1, "protocol": 1, "client": "raw/1", "locale": "en"})
    pings = 40_000  # some 800 KB of pongs, read at about 200 KB a second
    for i in range(pings):
        raw.send({"type": "ping", "id": 2 + i})
    pongs, buffer, started = 0, bytearray(), time.monotonic()
    while pongs < pings:
        chunk = await raw.reader.read(2048)
        assert chunk, f"closed after {pongs} pongs, {time.monotonic() - started:.1f} s"
        buffer += chunk
        while len(buffer) >= 4:  # the frames read whole: pongs, and the welcome (< 64 KB)
            size, head = buffer[1] & 0x7F, 2
            if size == 126:
                (size,), head = struct.unpack_from("!H", buffer, 2), 4
            if len(buffer) < head + size:
                break
            frame, buffer = bytes(buffer[head : head + size]), buffer[head + size :]
            pongs += msgpack.unpackb(frame)["type"] == "pong"
        await asyncio.sleep(0.01)
    assert time.monotonic() - started > 2.0, "read faster than the test means"
    assert await wait_for(lambda: not handler._unsent), "a drained socket is still watched"
    assert handler.open == 1
    await raw.close()


async def test_the_total_outbound_budget_closes_the_fullest_queue(start: Start) -> None:
    server = await start(outbox_total_bytes=64 * 1024, drain_timeout_ms=60_000, **OPEN)
    ada = await server.player("ada")
    game = await long_game(ada, 1500, finish=True)
    handler = server.server.handler
    assert handler is not None
    raw = await RawClient.open(server.server.port)
    raw.send({"type": "hello", "id": 1, "protocol": 1, "client": "raw/1", "locale": "en",
              "token": ada.token})  # fmt: skip
    for i in range(300):
        raw.send({"type": "replay", "id": 2 + i, "game": game})
    assert await wait_for(lambda: handler.open == 1, 15.0)
    assert handler.budget.shed >= 1
    assert handler.queued_bytes() <= 64 * 1024
    await raw.close()


# -- 2. bounded work per request --------------------------------------------------------


async def test_open_game_since_0_on_a_long_game_does_bounded_work(
    start: Start, monkeypatch: pytest.MonkeyPatch
) -> None:
    keep = 100
    server = await start(history_keep=keep, **OPEN)
    ada = await server.player("ada")
    game = await long_game(ada, 3000)
    built = 0
    real_batch = build.batch

    def counting(v: int, events: Any) -> Any:
        nonlocal built
        built += 1
        return real_batch(v, events)

    monkeypatch.setattr(build, "batch", counting)
    reply = await ada.request("open_game", game=game, since=0)
    assert reply["type"] == "game" and reply["v"] == 3000  # a snapshot, not 3000 batches
    assert built <= keep
    recent = await ada.request("open_game", game=game, since=3000 - 10)
    assert recent["type"] == "catch_up" and len(recent["events"]) == 10
    live = server.server.service.cached(game) if server.server.service else None
    assert live is not None and len(live.batches) <= keep  # bounded history in memory


async def test_a_catch_up_is_measured_batch_by_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    """The size check stops encoding as soon as the history passes one frame."""
    game = Game(LEVELS["hard"], 1)
    now = datetime.now(UTC)
    record = GameRecord(
        1, 1, "hard", 1, GameStatus.ACTIVE, 0, 0, 0, 0, 0, 0, 0, now, now, None, None
    )
    live = LiveGame(record, game, [], keep=10_000)
    big = [{"type": "restarted", "padding": "x" * 1000}]
    for t in range(3000):  # 3 MB of history: three frames' worth
        game.restart(t)
        live.add([big])
    encoded = 0
    real_encode = encode

    def counting(message: Any) -> bytes:
        nonlocal encoded
        frame = real_encode(message)
        encoded += len(frame)
        return frame

    monkeypatch.setattr(service_module, "encode", counting, raising=True)
    reply = GameService._opening(None, live, 1, 0)  # type: ignore[arg-type]
    assert reply["type"] == "game"
    assert encoded <= MAX_SERVER_FRAME_BYTES + 2 * 1100


async def test_a_game_has_at_most_max_versions(start: Start) -> None:
    server = await start(max_versions=40, **OPEN)
    ada = await server.player("ada")
    game = await long_game(ada, 40)
    refused = await ada.request("restart", game=game, v=40)
    assert refused["type"] == "error" and refused["code"] == "game_too_long", refused
    hint = await ada.request("hint", game=game)
    assert hint["code"] == "game_too_long"
    assert (await ada.request("resign", game=game))["type"] == "ack"


# -- 3. replays in pages ----------------------------------------------------------------


async def test_a_long_replay_comes_in_pages_within_the_frame_limit(start: Start) -> None:
    server = await start(**OPEN)
    ada = await server.player("ada")
    total = REPLAY_PAGE_ACTIONS + 500
    game = await long_game(ada, total, finish=True)
    first = await ada.request("replay", game=game)
    assert len(first["replay"]["actions"]) == REPLAY_PAGE_ACTIONS
    assert first["next"] == REPLAY_PAGE_ACTIONS
    second = await ada.request("replay", game=game, **{"from": first["next"]})
    assert len(second["replay"]["actions"]) == 500 and "next" not in second
    for reply in (first, second):
        assert len(encode(reply)) <= MAX_SERVER_FRAME_BYTES
    document = {
        **first["replay"],
        "actions": first["replay"]["actions"] + second["replay"]["actions"],
    }
    assert len(rebuild(parse_replay(document)).actions) == total


# -- 4. abuse controls ------------------------------------------------------------------


async def test_a_game_is_open_on_at_most_so_many_connections_on_a_node(start: Start) -> None:
    """Nothing bounded the connections one game was open on: one player signed in on
    4,000 connections from many addresses, each with the game open, and a pause and a
    resume within the action rate were 8,000 frames; every other player's moves slowed
    from 4 to 108 ms (p50). Past ``--max-game-watchers`` an ``open_game`` is refused;
    signing in is not, so the owner of a token that leaked can always revoke it."""
    server = await start(max_game_watchers=2, **OPEN)
    ida = await server.player("ida")
    game = (await ida.request("new_game", level="hard", deal=1))["game"]
    devices = [await server.connect() for _ in range(3)]
    for device in devices:
        assert (await device.hello(ida.token))["type"] == "welcome"
    assert (await devices[0].request("open_game", game=game))["type"] == "game"
    assert (await devices[0].request("open_game", game=game))["type"] == "game"  # again
    refused = await devices[1].request("open_game", game=game)
    assert refused["type"] == "error" and refused["code"] == "too_many_watchers", refused
    moved = await devices[1].request("move", game=game, v=0, card="7C", to=5)
    assert moved["code"] == "not_open", moved  # nothing done where its events would not go
    assert (await ida.request("close_game", game=game))["type"] == "ack"
    assert (await devices[1].request("open_game", game=game))["type"] == "game"
    signed_out = await devices[2].request("sign_out", everywhere=True)
    assert signed_out["type"] == "signed_out", signed_out


async def test_a_ping_flood_is_rate_limited_with_a_retry_after(start: Start) -> None:
    server = await start(rate_reads="5,10", abuse_limit=1000)
    ada = await server.player("ada")
    replies = await ada.pipeline([{"type": "ping"} for _ in range(40)])
    limited = [reply for reply in replies if reply.get("code") == "rate_limited"]
    assert 25 <= len(limited) <= 31, len(limited)
    assert all(0 < reply["retry_after_ms"] <= 1000 for reply in limited)
    await asyncio.sleep(limited[-1]["retry_after_ms"] / 1000)
    assert (await ada.request("ping"))["type"] == "pong"


async def test_strikes_close_and_survive_a_reconnect(start: Start) -> None:
    server = await start(rate_reads="5,5", abuse_limit=5, abuse_window_s=60)
    rude = await server.connect()
    await rude.hello()
    for n in range(20):
        await rude.send_raw(encode({"type": "ping", "id": f"p{n}"}))
    await asyncio.wait_for(rude.ws.wait_closed(), 5)
    assert rude.ws.close_code == 1008
    again = await server.connect()
    await asyncio.wait_for(again.ws.wait_closed(), 5)  # closed at once: the address is struck
    assert again.ws.close_code == 1008

    async def counted() -> tuple[float, float]:
        """Connections opened and closed, as /metrics says."""
        text = (await http_get(server.server.port, "/metrics"))[2].decode()
        lines = [line.split() for line in text.splitlines() if not line.startswith("#")]
        lines = [line for line in lines if len(line) == 2]
        opened = sum(float(n) for name, n in lines if name == "scorpion_connections_opened_total")
        closed = sum(
            float(n) for name, n in lines if name.startswith("scorpion_connections_closed_total")
        )
        return opened, closed

    async with asyncio.timeout(10):  # the refused one was counted closed, never opened
        while await counted() != (2, 2):
            await asyncio.sleep(0.05)


async def test_a_client_that_waits_as_told_is_never_struck(start: Start) -> None:
    """PROTOCOL.md: wait ``retry_after_ms`` before sending that kind again. A client that
    does so at full speed meets the limit on every other request; those refusals are no
    strikes (it backed off as told), where a client that comes back early is struck."""
    server = await start(rate_reads="50,5", rate_hints="50,5", abuse_limit=5, abuse_window_s=60)
    polite = await server.player("ada")
    answers: dict[str, int] = {}
    for _ in range(60):
        reply = await polite.request("ping")
        answers[reply["type"]] = answers.get(reply["type"], 0) + 1
        if reply["type"] == "error":
            assert reply["code"] == "rate_limited", reply
            await asyncio.sleep(reply["retry_after_ms"] / 1000)
    assert answers.get("error", 0) > 5 and answers["pong"] >= 30, answers  # limited, not closed
    assert polite.ws.close_code is None
    rude = await server.player("bob")
    # comes back at once: struck from its second refusal on. (Twenty were sometimes not
    # enough on a busy machine: read slowly, the bucket filled again between them.)
    with contextlib.suppress(ConnectionClosed):
        for n in range(200):
            await rude.send_raw(encode({"type": "ping", "id": f"p{n}"}))
    await asyncio.wait_for(rude.ws.wait_closed(), 5)
    assert rude.ws.close_code == 1008


async def test_connections_per_address_are_capped(start: Start) -> None:
    server = await start(max_connections_per_address=3)
    clients = [await server.connect() for _ in range(3)]
    extra = await server.connect()
    await asyncio.wait_for(extra.ws.wait_closed(), 5)
    assert extra.ws.close_code == 1013
    await clients[0].close()
    assert await wait_for(
        lambda: server.server.handler is not None and server.server.handler.open == 2
    )
    later = await server.connect()
    assert (await later.hello())["type"] == "welcome"


async def test_connections_in_all_are_capped(start: Start) -> None:
    server = await start(max_connections=2)
    for _ in range(2):
        await server.connect()
    extra = await server.connect()
    await asyncio.wait_for(extra.ws.wait_closed(), 5)
    assert extra.ws.close_code == 1013


async def test_the_hello_deadline_and_the_idle_timeout(start: Start) -> None:
    server = await start(hello_timeout_ms=300, idle_timeout_ms=600)
    silent = await server.connect()
    talker = await server.connect()
    await talker.hello()
    await asyncio.wait_for(silent.ws.wait_closed(), 5)
    assert silent.ws.close_code == 1008
    await asyncio.wait_for(talker.ws.wait_closed(), 5)
    assert talker.ws.close_code == 1001


async def test_the_welcome_tells_the_limits_the_server_was_given(start: Start) -> None:
    """A client could not learn the server's idle timeout, rates or caps: the web
    client pinged after a minute whatever the server's idle timeout was."""
    server = await start(
        hello_timeout_ms=4000,
        idle_timeout_ms=20_000,
        rate_actions="12.5,40",
        rate_hints="off",
        max_game_watchers=3,
        max_versions=500,
        abuse_limit=7,
    )
    client = await server.connect()
    welcome = await client.hello()
    assert welcome["limits"] == {
        "hello_timeout_ms": 4000,
        "idle_timeout_ms": 20_000,
        "rates": {
            "action": {"per_s": 12.5, "burst": 40.0},
            "game": {"per_s": 5000.0, "burst": 5000.0},  # the tests' (quiet_settings)
            "hint": None,
            "read": {"per_s": 5000.0, "burst": 5000.0},
            "register": {"per_s": 0.2, "burst": 20.0},
            "auth": {"per_s": 0.2, "burst": 10.0},
            "connect": None,  # the tests' (quiet_settings)
        },
        "player_factor": 2,
        "address_factor": 16,
        "abuse_limit": 7,
        "abuse_window_s": 60,
        "max_game_watchers": 3,
        "max_versions": 500,
    }
    # PROTOCOL.md section 1: these are floats on the wire even when whole, and only these
    rates = [rate for rate in welcome["limits"]["rates"].values() if rate is not None]
    assert all(type(value) is float for rate in rates for value in rate.values())
    others = [value for key, value in welcome["limits"].items() if key != "rates"]
    assert all(type(value) is int for value in others)


def test_the_documented_limits_are_the_defaults() -> None:
    """PROTOCOL.md's welcome examples show the limits of a server left at its defaults."""
    examples = SERVER_MESSAGES["welcome"].examples
    assert examples and all(each["limits"] == published_limits(Settings()) for each in examples)


async def test_a_refused_token_leaves_the_connection_greeted_past_the_hello_deadline(
    start: Start,
) -> None:
    """PROTOCOL.md: after ``unauthenticated`` the connection stays open, signed out. A
    client whose token expired, showing its register form, is not closed as one that
    never said hello (1008) while its player types a name."""
    server = await start(hello_timeout_ms=300, idle_timeout_ms=60_000)
    stale = await server.connect()
    assert (await stale.hello("an-expired-token"))["code"] == "unauthenticated"
    await asyncio.sleep(0.9)  # three hello deadlines
    assert stale.ws.close_code is None
    assert (await stale.request("register", name="eve"))["type"] == "registered"
    assert (await stale.request("games"))["type"] == "games"


async def test_a_hello_limited_for_refused_tokens_gives_a_new_hello_deadline(start: Start) -> None:
    """A device behind the same address as one retrying a stale token is told to wait
    (``rate_limited``) before its own hello with a token: waiting as told, on the same
    connection, it was closed as one that never said hello (1008)."""
    # The address's refused-token bucket refills in 2.5 s; the device's deadline is 2 s.
    server = await start(hello_timeout_ms=2000, rate_auth_failures="0.4,1", abuse_limit=1000)
    ada = await server.player("ada")
    stale = await server.connect()
    assert (await stale.hello("a-revoked-token"))["code"] == "unauthenticated"
    device = await server.connect()
    connected = time.monotonic()
    await asyncio.sleep(1.5)  # most of its hello deadline gone already
    limited = await device.hello(ada.token)
    assert limited["code"] == "rate_limited" and limited["retry_after_ms"] <= 1000, limited
    # as told, and past the first deadline (and its sweep), well within a new one
    past_first = connected + 2.3 - time.monotonic()
    await asyncio.sleep(max(limited["retry_after_ms"] / 1000 + 0.1, past_first))
    assert device.ws.close_code is None
    assert (await device.hello(ada.token))["type"] == "welcome"


async def test_a_hello_told_to_wait_past_its_deadline_may_wait(start: Start) -> None:
    """PROTOCOL.md: a hello answered ``rate_limited`` for its address's refused tokens
    "starts that time again: wait as told, and say it again". With a hello deadline
    shorter than the wait told (0.6 s against about 2.5 s), a client that waited as told was
    closed as one that never said hello (1008) before it could."""
    server = await start(hello_timeout_ms=600, rate_auth_failures="0.4,1", abuse_limit=1000)
    ada = await server.player("ada")
    stale = await server.connect()
    assert (await stale.hello("a-revoked-token"))["code"] == "unauthenticated"
    device = await server.connect()
    limited = await device.hello(ada.token)
    assert limited["code"] == "rate_limited" and limited["retry_after_ms"] > 1200, limited
    await asyncio.sleep(limited["retry_after_ms"] / 1000 + 0.1)
    assert device.ws.close_code is None
    assert (await device.hello(ada.token))["type"] == "welcome"


async def test_pings_before_hello_do_not_hold_the_hello_deadline_off(start: Start) -> None:
    """Pings before hello (answered ``hello_required``) use up the read rate, and a hello
    then refused ``rate_limited`` for it must not start the deadline again: a
    connection could stay open for ever without saying hello."""
    # one read a second: a token refilled between the pings and the hello would let the
    # hello through (at 20 a second, 50 ms between them on a loaded machine did)
    server = await start(hello_timeout_ms=600, rate_reads="1,2", abuse_limit=1000)
    idle = await server.connect()
    # closed 0.6 s on, on a quiet machine; the bound is for a loaded one (5 s was passed)
    async with asyncio.timeout(30):
        while idle.ws.close_code is None:
            with contextlib.suppress(ConnectionClosed):
                for _ in range(3):  # the read rate's tokens gone: the hello is refused
                    await idle.send_raw(encode({"type": "ping", "id": "p"}))
                hello = {"type": "hello", "id": "h", "protocol": 1, "client": "c", "locale": "en"}
                await idle.send_raw(encode(hello))
            await asyncio.sleep(0.05)
    assert idle.ws.close_code == 1008


async def test_token_rotations_are_limited_as_the_accounts_writes(start: Start) -> None:
    """Each rotate_token is a transaction of its own: at the read rate (50 a second per
    connection, 16 times that per address) a few players kept the store's write lock
    busy, and other players' moves waited seconds for it."""
    server = await start(rate_registrations="0.01,3", abuse_limit=1000)
    ada = await server.player("ada")
    codes = [(await ada.request("rotate_token")).get("code", "ok") for _ in range(4)]
    assert codes == ["ok", "ok", "rate_limited", "rate_limited"]  # registering took one
    assert (await ada.request("games"))["type"] == "games"  # reads are not held back


async def test_new_games_are_limited_apart_from_moves(start: Start) -> None:
    """A new game costs many moves' work (its rows, a deal drawn, the game it replaces
    booked as lost): counted as one action, 8 players of one address starting games as
    fast as answered slowed everyone else's moves twenty-fold. With the defaults, ten
    at once, then one every 5 s; the moves of the game go on meanwhile."""
    server = await start(rate_games="0.2,10", rate_actions="30,120", abuse_limit=1000)
    ada = await server.player("ada")
    codes = [
        (await ada.request("new_game", level="hard", deal=1)).get("code", "ok") for _ in range(11)
    ]
    assert codes == ["ok"] * 10 + ["rate_limited"], codes
    game = (await ada.request("games", status="active"))["games"][0]["game"]
    moved = await ada.request("move", game=game, v=0, card="7C", to=5)
    assert moved["type"] == "ack", moved


async def test_a_neighbour_cannot_keep_a_player_from_revoking_a_token(start: Start) -> None:
    """rotate_token and sign_out are counted per connection and per player: a connection
    behind the same address, signed in or not, asking them over and over takes nothing
    from the player who needs to revoke a leaked token."""
    server = await start(rate_registrations="0.01,3", abuse_limit=1000)
    ada = await server.player("ada")
    stranger = await server.connect()
    await stranger.hello()
    for _ in range(6):  # no player: answered unauthenticated, counted as reads
        assert (await stranger.request("sign_out"))["code"] == "unauthenticated"
    eve = await server.player("eve")
    eve_codes = [(await eve.request("rotate_token")).get("code", "ok") for _ in range(4)]
    assert eve_codes[-1] == "rate_limited"  # eve's own rotations are limited...
    assert (await ada.request("rotate_token"))["type"] == "token"  # ...not ada's
    assert (await ada.request("sign_out", everywhere=True))["type"] == "signed_out"


async def test_registrations_per_address_are_limited(start: Start) -> None:
    server = await start(rate_registrations="0.01,3", abuse_limit=1000)
    codes = []
    for n in range(5):
        client = await server.connect()
        await client.hello()
        codes.append((await client.request("register", name=f"p{n}"))["type"])
    assert codes[:3] == ["registered"] * 3
    assert codes[3:] == ["error", "error"]


async def test_refused_tokens_are_limited_per_address_and_logged(
    start: Start, caplog: pytest.LogCaptureFixture
) -> None:
    server = await start(rate_auth_failures="0.01,3", abuse_limit=1000)
    ada = await server.player("ada")
    guesser = await server.connect()
    with caplog.at_level(logging.WARNING, logger="server"):
        codes = [(await guesser.hello(f"guess{n}"))["code"] for n in range(4)]
    assert codes == ["unauthenticated"] * 3 + ["rate_limited"]
    assert (await guesser.hello(ada.token))["code"] == "rate_limited"  # even a right one, now
    assert any("refused token" in record.getMessage() for record in caplog.records)


async def test_hellos_in_flight_together_cannot_overdraw_the_refused_tokens(
    start: Start, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The refused-token bucket was checked before the token's read and charged after
    it: on PostgreSQL, whose read yields, 60 wrong hellos sent at once all passed the
    check, and the next right hello from that address was told to wait 255 s. A guess
    now takes its token before the read: at most the burst are read, and the wait a
    client is told stays within one token's time (5 s)."""
    server = await start(rate_auth_failures="0.5,10", abuse_limit=1000)
    ada = await server.player("ada")
    store = server.server.store
    assert store is not None
    sign_in = store.sign_in

    async def yielding_read(*args: Any, **kwargs: Any) -> Any:
        await asyncio.sleep(0.2)  # a read that yields, as PostgreSQL's does
        return await sign_in(*args, **kwargs)

    monkeypatch.setattr(store, "sign_in", yielding_read)
    guessers = [await server.connect() for _ in range(30)]
    replies = await asyncio.gather(*(g.hello(f"guess{n}") for n, g in enumerate(guessers)))
    codes = [reply.get("code") for reply in replies]
    assert 10 <= codes.count("unauthenticated") <= 11, codes  # the burst (and a refill)
    told = await (await server.connect()).hello(ada.token)
    assert told["code"] == "rate_limited" and told["retry_after_ms"] <= 2000
    await asyncio.sleep(told["retry_after_ms"] / 1000)
    # a right token takes a guess for its read, and has it back: the next one finds it too
    assert (await (await server.connect()).hello(ada.token))["type"] == "welcome"
    assert (await (await server.connect()).hello(ada.token))["type"] == "welcome"


async def test_right_tokens_said_together_behind_one_address_are_all_welcome(
    start: Start, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each hello with a new token held one of its address's refused tokens for its
    read: 40 players behind one NAT saying hello at once with their own right tokens
    (on PostgreSQL, whose read yields) had 10 welcomed and 30 told ``rate_limited``,
    though no token was refused. A hello finding every share held by reads in flight
    now waits for them to end."""
    server = await start(
        rate_registrations="100,100", abuse_limit=1000, max_connections_per_address=100
    )
    tokens = []
    for n in range(40):
        player = await server.player(f"p{n}")
        assert player.token is not None
        tokens.append(player.token)
    store = server.server.store
    assert store is not None
    sign_in = store.sign_in

    async def yielding_read(*args: Any, **kwargs: Any) -> Any:
        await asyncio.sleep(0.05)  # a read that yields, as PostgreSQL's does
        return await sign_in(*args, **kwargs)

    monkeypatch.setattr(store, "sign_in", yielding_read)
    clients = [await server.connect() for _ in tokens]
    replies = await asyncio.gather(*(c.hello(t) for c, t in zip(clients, tokens, strict=True)))
    assert [reply["type"] for reply in replies] == ["welcome"] * 40, replies


async def test_a_stale_token_retried_does_not_lock_its_neighbours_out(start: Start) -> None:
    """A device retrying one stale token as fast as it is told spends no more of its
    address's refused-token rate after the first refusal: only new tokens are
    guesses. A player behind the same address (a NAT) still signs in, and the stale
    token is still refused, at the read rate."""
    server = await start(rate_auth_failures="0.01,2", abuse_limit=1000)
    ada = await server.player("ada")
    stale = await server.connect()
    codes = [(await stale.hello("a-revoked-token"))["code"] for _ in range(5)]
    assert codes == ["unauthenticated"] * 5
    neighbour = await server.connect()
    assert (await neighbour.hello(ada.token))["type"] == "welcome"
    guesser = await server.connect()
    guesses = [(await guesser.hello(f"guess{n}"))["code"] for n in range(2)]
    assert guesses == ["unauthenticated", "rate_limited"]  # the second new token is over


async def test_sockets_that_never_handshake_are_capped_per_address(
    start: Start, caplog: pytest.LogCaptureFixture
) -> None:
    """The cap on connections per address counted only finished handshakes: one address
    could hold any number of silent sockets for websockets' 10 s each, every one a file
    descriptor, until the server had none left for other players."""
    server = await start(max_connections_per_address=2)
    port = server.server.port
    beside = ("127.0.0.2", 0)  # another client address on this machine
    silent = []
    with caplog.at_level(logging.WARNING):
        for _ in range(2 + HANDSHAKES_PER_ADDRESS + 5):
            silent.append(await asyncio.open_connection("127.0.0.1", port, local_addr=beside))

        async def closed(reader: asyncio.StreamReader) -> bool:
            with contextlib.suppress(TimeoutError, ConnectionError):
                return await asyncio.wait_for(reader.read(), 1) == b""
            return False

        # those beyond the cap are closed at once, unread; the others wait for a request
        seen = await asyncio.gather(*(closed(reader) for reader, _writer in silent))
    assert sum(seen) == 5 and not any(seen[: 2 + HANDSHAKES_PER_ADDRESS])
    assert any("before its handshake" in r.getMessage() for r in caplog.records)
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    ada = await server.player("ada")  # another address is served meanwhile
    assert (await ada.request("ping"))["type"] == "pong"
    for _reader, writer in silent:
        writer.close()
    await asyncio.sleep(0.3)
    url = f"ws://127.0.0.1:{port}/"
    async with connect(url, subprotocols=[Subprotocol(SUBPROTOCOL)], local_addr=beside) as ws:
        await ws.send(encode({"type": "ping", "id": 1}))
        assert msgpack.unpackb(await ws.recv())["code"] == "hello_required"


async def test_sockets_in_their_handshakes_are_capped_in_all(
    start: Start, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Sockets before their handshake were capped per address only: 30 addresses
    holding 78 each used up the process's 1024 descriptors whatever --max-connections
    said, new connections failed, and a signed-in player's new_game was answered
    ``unavailable`` (SQLite could not open its file). They are capped in all too (a
    quarter of --max-connections, at least ``HANDSHAKES_IN_ALL``: 20 here); a
    connection past its handshake no longer counts among them, and a client from
    another address takes the place of a socket of the address holding the most, or,
    none holding more than its share, of the oldest."""
    monkeypatch.setattr(connection, "HANDSHAKES_IN_ALL", 20)
    server = await start(max_connections=40, max_connections_per_address=20)
    port = server.server.port
    ada = await server.player("ada")  # past its handshake: not counted
    players = [await server.player(f"p{n}") for n in range(19)]
    silent = []

    async def closed(reader: asyncio.StreamReader) -> bool:
        with contextlib.suppress(TimeoutError, ConnectionError):
            return await asyncio.wait_for(reader.read(), 0.5) == b""
        return False

    with caplog.at_level(logging.WARNING):
        for n in range(30):  # 3 addresses, 10 sockets each: within their own caps
            beside = (f"127.0.0.{2 + n % 3}", 0)
            silent.append(await asyncio.open_connection("127.0.0.1", port, local_addr=beside))
        seen = await asyncio.gather(*(closed(reader) for reader, _writer in silent))
        # No address held more than its share: each of the last 10 took the place of the
        # oldest socket still in its handshake, closed unread.
        assert seen == [True] * 10 + [False] * 20
        url = f"ws://127.0.0.1:{port}/"
        async with connect(url, subprotocols=[Subprotocol(SUBPROTOCOL)],
                           local_addr=("127.0.0.9", 0)) as newcomer:  # fmt: skip
            await newcomer.send(encode({"type": "ping", "id": 1}))
            assert msgpack.unpackb(await newcomer.recv())["code"] == "hello_required"
        seen = await asyncio.gather(*(closed(reader) for reader, _writer in silent[10:]))
    assert seen.count(True) == 1  # one of an address holding 7 made room for it
    said = [r.getMessage() for r in caplog.records]
    assert any("none holding more than its share, and it the oldest" in line for line in said)
    assert any("in its handshake for one from 127.0.0.9" in line for line in said)
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert (await ada.request("new_game", level="easy"))["type"] == "game"  # served
    for client in players:
        await client.close()
    for _reader, writer in silent:
        writer.close()


async def test_new_connections_are_limited_per_address(
    start: Start, caplog: pytest.LogCaptureFixture
) -> None:
    """One address opening and closing connections as fast as it could (connect, hello,
    close: 110 to 175 a second), within every other limit, took a core and slowed every
    player's moves tenfold. Beyond its rate of new connections, one is closed at once."""
    server = await start(rate_connections="2,10")
    port = server.server.port
    beside = ("127.0.0.2", 0)  # another client address on this machine

    async def kept(count: int) -> list[bool]:
        """``count`` connections from ``beside`` at once: whether each was kept open."""
        opened = [
            await asyncio.open_connection("127.0.0.1", port, local_addr=beside)
            for _ in range(count)
        ]

        async def open_still(reader: asyncio.StreamReader) -> bool:
            try:
                return await asyncio.wait_for(reader.read(1), 0.5) != b""
            except TimeoutError:
                return True  # waiting for a request
            except ConnectionError:
                return False  # reset

        try:
            return list(await asyncio.gather(*(open_still(reader) for reader, _ in opened)))
        finally:
            for _reader, writer in opened:
                writer.close()

    with caplog.at_level(logging.WARNING):
        first = await kept(14)
    assert first[:10] == [True] * 10 and first.count(False) >= 3, first  # a burst of 10
    assert any("new connections a second" in r.getMessage() for r in caplog.records)
    ada = await server.player("ada")  # another address is served meanwhile
    assert (await ada.request("ping"))["type"] == "pong"
    await asyncio.sleep(0.6)  # a token again
    assert await kept(1) == [True]


async def test_behind_a_trusted_proxy_new_connections_are_limited_per_client(
    start: Start, caplog: pytest.LogCaptureFixture
) -> None:
    """A trusted proxy's sockets are not counted at the accept (they carry many clients),
    and nothing counted the client's by the forwarded address: one client behind nginx
    opened and closed connections at any rate (400 connect, hello, close: none refused;
    175 of 400 directly). Beyond its rate, one is answered 429 with Retry-After."""
    server = await start(trusted_proxies="127.0.0.1/32", rate_connections="2,10")
    port = server.server.port
    url = f"ws://127.0.0.1:{port}/"

    async def status(client: str) -> int:
        """A WebSocket upgrade forwarded from ``client``: 101, or the status refusing it."""
        try:
            ws = await connect(url, subprotocols=[Subprotocol(SUBPROTOCOL)],
                               additional_headers={"X-Forwarded-For": client})  # fmt: skip
        except InvalidStatus as refused:
            response = refused.response
            assert response.status_code != 429 or int(response.headers["Retry-After"]) >= 1
            return response.status_code
        await ws.close()
        return 101

    with caplog.at_level(logging.WARNING):
        statuses = [await status("198.51.100.7") for _ in range(14)]
        health, _, _ = await http_get(port, "/healthz", headers={"X-Forwarded-For": "198.51.100.7"})
    assert statuses[:10] == [101] * 10 and statuses.count(429) >= 3, statuses  # a burst of 10
    assert health == 429  # plain HTTP counts too, as on a direct connection
    head = await http_get(
        port, "/healthz", method="HEAD", headers={"X-Forwarded-For": "198.51.100.7"}
    )
    assert head[0] == 429 and head[2] == b""  # a HEAD's answer has no body (it had 58 bytes)
    assert any("through a trusted proxy" in r.getMessage() for r in caplog.records)
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert await status("198.51.100.8") == 101  # another client behind the same proxy
    proxy_own = [(await http_get(port, "/healthz"))[0] for _ in range(12)]
    assert proxy_own == [200] * 12  # the proxy's own requests stand for no one client
    await asyncio.sleep(0.6)  # a token again
    assert await status("198.51.100.7") == 101


def test_a_peer_reset_after_its_request_is_no_error() -> None:
    """Under uvloop, a client that sent a request and reset made the server log an
    ERROR with a traceback: its address was read from the closed socket (ValueError,
    negative file descriptor). It is the address read at the accept."""

    class Closed:
        def get_extra_info(self, name: str, default: Any = None) -> Any:
            raise ValueError("negative file descriptor")  # as uvloop's closed socket

    ws = connection._Bounded.__new__(connection._Bounded)
    ws.transport = cast(Any, Closed())
    ws.peer = "127.0.0.1"
    gate = connection.SocketGate(1, [], Rate(1, 1))
    assert connection._too_soon_through_proxy(cast(Any, None), gate, ws, "GET") is None


async def test_behind_a_trusted_proxy_the_forwarded_address_counts(start: Start) -> None:
    server = await start(trusted_proxies="127.0.0.1/32", max_connections_per_address=1)
    url = f"ws://127.0.0.1:{server.server.port}/"

    async def opened(forwarded: str) -> int | None:
        ws = await connect(url, subprotocols=[Subprotocol(SUBPROTOCOL)],
                           additional_headers={"X-Forwarded-For": forwarded})  # fmt: skip
        try:
            await asyncio.wait_for(ws.recv(), 0.5)
        except TimeoutError:
            return None  # still open
        except ConnectionClosed:
            return ws.close_code
        finally:
            if ws.close_code is None:
                pending.append(ws)
        return None

    pending: list[Any] = []
    assert await opened("198.51.100.1") is None
    assert await opened("198.51.100.2") is None  # another client behind the same proxy
    assert await opened("203.0.113.9, 198.51.100.1") == 1013  # the proxy appended .1 again
    for ws in pending:
        await ws.close()


async def test_a_forwarded_header_given_twice_is_read_as_one_chain(
    start: Start, caplog: pytest.LogCaptureFixture
) -> None:
    """Two proxies may each add their own ``X-Forwarded-For`` line: the lines are one
    chain, in order (RFC 9110 5.3). Reading the header raised on the second line, and
    the connection ended in an error logged with its traceback."""
    server = await start(trusted_proxies="127.0.0.1/32", max_connections_per_address=1)
    url = f"ws://127.0.0.1:{server.server.port}/"
    first = await connect(url, subprotocols=[Subprotocol(SUBPROTOCOL)],
                          additional_headers={"X-Forwarded-For": "198.51.100.1"})  # fmt: skip
    lines = [("X-Forwarded-For", "203.0.113.9"), ("X-Forwarded-For", "198.51.100.1")]
    with caplog.at_level(logging.WARNING):
        second = await connect(
            url, subprotocols=[Subprotocol(SUBPROTOCOL)], additional_headers=lines
        )
        with pytest.raises(ConnectionClosed):
            await asyncio.wait_for(second.recv(), 5)
    assert second.close_code == 1013  # counted as 198.51.100.1, which has its one connection
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    await first.close()


async def test_rfc_7239_forwarded_is_read_and_an_unreadable_one_is_logged(
    start: Start, caplog: pytest.LogCaptureFixture
) -> None:
    """With ``--forwarded-header Forwarded`` every client was counted as the proxy (the
    ``for=`` syntax was not read), silently: one client's strikes barred them all."""
    server = await start(
        trusted_proxies="127.0.0.1/32", forwarded_header="Forwarded", max_connections_per_address=1
    )
    url = f"ws://127.0.0.1:{server.server.port}/"
    opened = []
    for client in ("198.51.100.1", "198.51.100.2"):
        header = {"Forwarded": f"for={client};proto=https"}
        opened.append(await connect(url, subprotocols=[Subprotocol(SUBPROTOCOL)],
                                    additional_headers=header))  # fmt: skip
    for ws in opened:  # two clients, one connection each: neither closed
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(ws.recv(), 0.3)
    with caplog.at_level(logging.WARNING):
        hidden = await connect(url, subprotocols=[Subprotocol(SUBPROTOCOL)],
                               additional_headers={"Forwarded": "for=unknown"})  # fmt: skip
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(hidden.recv(), 0.3)  # served, as the proxy's address
    assert any("without a client address" in r.getMessage() for r in caplog.records)
    for ws in (*opened, hidden):
        await ws.close()


async def test_without_a_trusted_proxy_the_header_is_ignored(start: Start) -> None:
    server = await start(max_connections_per_address=1)
    url = f"ws://127.0.0.1:{server.server.port}/"
    first = await connect(url, subprotocols=[Subprotocol(SUBPROTOCOL)],
                          additional_headers={"X-Forwarded-For": "198.51.100.1"})  # fmt: skip
    second = await connect(url, subprotocols=[Subprotocol(SUBPROTOCOL)],
                           additional_headers={"X-Forwarded-For": "198.51.100.2"})  # fmt: skip
    with pytest.raises(ConnectionClosed):
        await asyncio.wait_for(second.recv(), 5)
    assert second.close_code == 1013
    await first.close()


# -- 7. keepalive, close codes, Origin ----------------------------------------------------


async def test_a_client_that_ignores_keepalive_gets_1011_and_a_log_line(
    start: Start, caplog: pytest.LogCaptureFixture
) -> None:
    server = await start(keepalive_ms=200)
    raw = await RawClient.open(server.server.port)
    raw.send({"type": "hello", "id": 1, "protocol": 1, "client": "raw/1", "locale": "en"})
    handler = server.server.handler
    assert handler is not None
    with caplog.at_level(logging.WARNING, logger="server"):
        code = await raw.read_close(5.0)
        await raw.close()
        assert await wait_for(lambda: handler.open == 0, 5.0)
    assert code == 1011
    assert any("keepalive" in record.getMessage() for record in caplog.records)


async def test_origin_is_checked_against_the_allow_list(start: Start) -> None:
    server = await start(allowed_origins="https://scorpion.example")
    url = f"ws://127.0.0.1:{server.server.port}/"
    protocols = [Subprotocol(SUBPROTOCOL)]
    with pytest.raises(InvalidStatus) as refused:
        await connect(url, subprotocols=protocols, origin=Origin("https://evil.example"))
    assert refused.value.response.status_code == 403
    browser = await connect(url, subprotocols=protocols, origin=Origin("https://scorpion.example"))
    not_a_browser = await connect(url, subprotocols=protocols)
    await browser.close()
    await not_a_browser.close()


def _handshakes_within(port: int, count: int, seconds: float) -> int:
    """Open ``count`` TCP connections to ``port`` at once; how many the kernel completed
    within ``seconds`` (a connection is writable once its handshake is done). Called
    on the event loop's thread, so the server accepts none of them meanwhile: each
    waits in the listening socket's queue, or, beyond the queue, is dropped and
    tried again by the client's kernel a second later."""
    sockets = [socket.socket(socket.AF_INET, socket.SOCK_STREAM) for _ in range(count)]
    try:
        for sock in sockets:
            sock.setblocking(False)
            sock.connect_ex(("127.0.0.1", port))
        with selectors.DefaultSelector() as waiting:  # epoll: no limit on descriptor numbers
            for sock in sockets:
                waiting.register(sock, selectors.EVENT_WRITE)
            deadline = time.monotonic() + seconds
            while waiting.get_map() and (left := deadline - time.monotonic()) > 0:
                for key, _events in waiting.select(left):
                    waiting.unregister(key.fileobj)
            return count - len(waiting.get_map())
    finally:
        for sock in sockets:
            sock.close()


async def test_a_storm_of_connections_waits_in_the_listen_queue(start: Start) -> None:
    """Players reconnecting all at once after a restart: connections made while the
    loop is busy wait for it in the listen queue (``listen_backlog``), rather than
    being dropped and retried a second later (asyncio's own backlog is 100). (From
    one address here: its cap raised above the storm.)"""
    server = await start(max_connections_per_address=1000)
    assert _handshakes_within(server.server.port, 500, 0.8) == 500
    client = await server.player("anna")  # and the server serves on
    assert (await client.request("ping"))["type"] == "pong"


async def test_a_connection_refused_after_its_handshake_counts_among_the_handshakes_till_gone(
    start: Start,
) -> None:
    """A connection refused right after its handshake (1013 over a cap, 1008 banned) was
    counted nowhere while its close was waited for, its descriptor held: 25 addresses,
    each within its own cap, held every descriptor the caps were to leave room for. It
    stays among the sockets in their handshakes until it is gone, under their cap in all,
    where a newcomer may take its place."""
    server = await start(max_connections=40, max_connections_per_address=1)
    ada = await server.player("ada")  # 127.0.0.1's one connection
    refused = await RawClient.open(server.server.port)  # 101, then 1013: it reads nothing
    assert server.server._listener is not None
    gate = server.server._listener._gate
    await asyncio.sleep(0.3)
    assert gate.handshaking.count == 1
    assert (await ada.request("ping"))["type"] == "pong"  # served: not counted
    refused.writer.close()
    async with asyncio.timeout(5):
        while gate.handshaking.count:
            await asyncio.sleep(0.05)
    await ada.close()
