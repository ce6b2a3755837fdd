"""What a hostile or unlucky client can do, and how the server holds.

- A client that floods WebSocket pings: ``websockets`` writes a pong for each
  straight to the socket, past the outbox's byte budget and before any request
  limit, so the server held hundreds of megabytes until keepalive gave up (when
  the client did not read), or served no one else (when it did). Past the control
  frame limit (pings, pongs and fragments) the connection is closed with 1008, a
  strike on its address.
- A client that offers no subprotocol and says nothing is closed at the hello
  deadline with 1008, as one that offered it (it was closed with 1000).
- ``sign_out`` with ``everywhere`` while another connection of the player has a
  request in flight: a ``new_game`` read the connection's player after its
  await and failed with ``internal`` (a logged error); a ``new_game`` or
  ``open_game`` finishing after the sign-out left the signed-out connection
  watching the game, its clock running; an action waiting for the game's lock
  was applied for a connection signed out. Now such a request answers
  ``unauthenticated`` (a new game started already is still answered, but not
  watched), and nothing is applied.
- ``games`` listed every game of the player: past some 7,000 the reply passed the
  largest server frame (1 MiB) that clients accept. It lists the newest
  ``GAMES_LIST_LIMIT``.
"""

from __future__ import annotations

import asyncio
import logging
import os
import struct
import time
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

import server.service as service_module
from protocol import CONTROL_FRAMES_BURST, CONTROL_FRAMES_PER_S
from server import connection
from server.limits import Rate
from server.logs import connection_id
from server.service import GameService
from server.store import Store, StoreUnavailable
from tests.server.client import Client
from tests.server.conftest import OPEN, Running, Start, hello_held_after_its_read
from tests.server.raw import RawClient, upgrade_head


async def wait_for(condition: Callable[[], bool], seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        await asyncio.sleep(0.02)
    return condition()


def ping_frame(payload: bytes) -> bytes:
    """A masked WebSocket ping (control frames carry at most 125 bytes)."""
    mask = os.urandom(4)
    masked = bytes(byte ^ mask[i % 4] for i, byte in enumerate(payload))
    return struct.pack("!BB", 0x89, 0x80 | len(payload)) + mask + masked


# -- pings --------------------------------------------------------------------------------


async def test_a_ping_flood_that_is_never_read_is_closed_with_bounded_memory(
    start: Start, caplog: pytest.LogCaptureFixture
) -> None:
    server = await start(outbox_bytes=256 * 1024, **OPEN)
    handler = server.server.handler
    assert handler is not None
    watcher = await server.player("ada")
    raw = await RawClient.open(server.server.port)  # a tiny receive buffer, never read
    raw.send({"type": "hello", "id": 1, "protocol": 1, "client": "raw/1", "locale": "en"})
    chunk = ping_frame(b"p" * 125) * 500  # 65 KB of pings, about as much of pongs
    peak = 0
    with caplog.at_level(logging.WARNING, logger="server"):
        for _ in range(160):  # 10 MB of pings
            if handler.open == 1:
                break
            raw.writer.write(chunk)
            await asyncio.sleep(0.005)
            peak = max(peak, handler.buffered_bytes())
        closed = await wait_for(lambda: handler.open == 1, 10.0)  # only ada is left
    # One read's worth of pongs (asyncio reads at most 256 KiB at once), at most.
    assert peak <= 512 * 1024, peak
    assert closed, "a client that floods pings and reads nothing is still connected"
    assert any("too many pings, pongs or fragments" in r.getMessage() for r in caplog.records)
    assert await wait_for(lambda: handler.buffered_bytes() < 64 * 1024)
    await raw.close()
    assert (await watcher.request("ping"))["type"] == "pong"  # others are served


async def test_a_ping_flood_that_reads_its_pongs_is_closed_and_struck(start: Start) -> None:
    """websockets answers each ping at once, before any request limit: one connection
    sending pings as fast as its pongs came back kept the server from everyone else
    (for as long as it went on). Past the control frame limit it is closed with 1008,
    and that is a strike on its address."""
    server = await start(**OPEN)
    ada = await server.player("ada")
    raw = await RawClient.open(server.server.port)
    flood = ping_frame(b"p" * 125) * (CONTROL_FRAMES_BURST + 50)
    raw.writer.write(flood)
    assert await raw.read_close() == 1008
    await raw.close()
    assert server.server.handler is not None
    book = server.server.handler.limits.book
    assert await wait_for(lambda: book._count("127.0.0.1", time.monotonic()) == 1)
    assert (await ada.request("ping"))["type"] == "pong"  # others are served


async def test_a_flood_of_fragments_is_closed(start: Start) -> None:
    """The pieces of a fragmented message count as control frames: an endless message of
    empty fragments (each parsed, none a request) is closed, not kept until its end."""
    server = await start(**OPEN)
    raw = await RawClient.open(server.server.port)
    raw.send({"type": "hello", "id": 1, "protocol": 1, "client": "raw/1", "locale": "en"})
    first = struct.pack("!BB", 0x02, 0x80) + os.urandom(4)  # binary, not fin, empty
    more = struct.pack("!BB", 0x00, 0x80) + os.urandom(4)  # continuation, not fin, empty
    raw.writer.write(first + more * (CONTROL_FRAMES_BURST + 50))
    assert await raw.read_close() == 1008
    await raw.close()


async def test_a_message_after_a_flood_of_fragments_is_dropped_not_a_crash(
    start: Start, caplog: pytest.LogCaptureFixture
) -> None:
    """Past the limit the flood's fragments were dropped, the last one among them, and
    a whole message sent after them reached websockets in the middle of the dropped
    one: its handler failed on an assertion (an ERROR with a stack) and the peer got
    1011. Once the connection is closed for a flood, nothing more of it is read.
    (The frames are a few bytes each: all of them are in one of ``_read``'s slices.)"""
    server = await start(**OPEN)
    raw = await RawClient.open(server.server.port)
    raw.send({"type": "hello", "id": 1, "protocol": 1, "client": "raw/1", "locale": "en"})
    first = struct.pack("!BB", 0x02, 0x80) + os.urandom(4)  # binary, not fin, empty
    more = struct.pack("!BB", 0x00, 0x80) + os.urandom(4)  # continuation, not fin, empty
    last = struct.pack("!BB", 0x80, 0x80) + os.urandom(4)  # continuation, fin, empty
    with caplog.at_level(logging.WARNING):
        # in one read: the message comes right after the fragment past the limit
        raw.writer.write(first + more * (CONTROL_FRAMES_BURST + 1) + last)
        raw.send({"type": "ping", "id": 2})
        assert await raw.read_close() == 1008
        await raw.close()
        await asyncio.sleep(0.2)  # the handler's end, logged if it failed
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], caplog.text


async def test_a_reader_of_its_pongs_may_ping_within_the_limit(start: Start) -> None:
    """A client that pings now and then, or a burst of them, is never closed."""
    server = await start(**OPEN)
    ada = await server.player("ada")
    for _ in range(CONTROL_FRAMES_BURST - 10):
        await asyncio.wait_for(await ada.ws.ping(os.urandom(100)), 5)
    await asyncio.sleep(10 / CONTROL_FRAMES_PER_S)  # the bucket fills again meanwhile
    for _ in range(20):
        await asyncio.wait_for(await ada.ws.ping(os.urandom(100)), 5)
    assert (await ada.request("ping"))["type"] == "pong"


async def test_a_client_without_the_subprotocol_that_says_nothing_gets_1008(
    start: Start, caplog: pytest.LogCaptureFixture
) -> None:
    server = await start(hello_timeout_ms=300)
    with caplog.at_level(logging.WARNING, logger="server"):
        async with connect(f"ws://127.0.0.1:{server.server.port}/") as ws:
            assert ws.subprotocol is None
            with pytest.raises(ConnectionClosed):
                await asyncio.wait_for(ws.recv(), 5)
            assert ws.close_code == 1008
            assert ws.close_reason == "no hello in time"
    assert any("no hello in time" in r.getMessage() for r in caplog.records)


# -- signing out everywhere while another connection's request is in flight -------------


def the_store(server: Running) -> Store:
    store = server.server.store
    assert store is not None
    return store


def the_service(server: Running) -> GameService:
    service = server.server.service
    assert service is not None
    return service


class Gate:
    """Holds the calls of one method (after the first ``let_through``) until ``release``."""

    def __init__(self, let_through: int = 0) -> None:
        self.entered = asyncio.Event()
        self.released = asyncio.Event()
        self.let_through = let_through

    def hold(self, original: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
        async def held(*args: Any, **kwargs: Any) -> Any:
            if self.let_through > 0:
                self.let_through -= 1
            else:
                self.entered.set()
                await self.released.wait()
            return await original(*args, **kwargs)

        return held

    async def until_entered(self) -> None:
        await asyncio.wait_for(self.entered.wait(), 10)


async def leaked_device(server: Running, name: str) -> tuple[Client, Client]:
    """The player's own connection, and a second one on the same token."""
    owner = await server.player(name)
    other = await server.connect()
    assert (await other.hello(owner.token))["type"] == "welcome"
    return owner, other


def no_internal_errors(caplog: pytest.LogCaptureFixture) -> None:
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert not errors, errors


async def test_a_sign_out_while_new_game_draws_its_deal_starts_nothing(
    server: Running, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    service = the_service(server)
    gate = Gate()
    monkeypatch.setattr(service, "_draw_deal", gate.hold(service._draw_deal))
    owner, other = await leaked_device(server, "ada")
    with caplog.at_level(logging.WARNING, logger="server"):
        starting = asyncio.create_task(other.request("new_game", level="hard"))
        await gate.until_entered()
        assert (await owner.request("sign_out", everywhere=True))["type"] == "signed_out"
        gate.released.set()
        reply = await starting
    assert reply["code"] == "unauthenticated", reply  # was internal: a logged AttributeError
    no_internal_errors(caplog)
    assert owner.player is not None
    assert await the_store(server).list_games(owner.player["id"]) == []


async def test_a_new_game_started_as_its_connection_is_signed_out_is_not_watched(
    server: Running, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, service = the_store(server), the_service(server)
    gate = Gate()
    monkeypatch.setattr(store, "create_game", gate.hold(store.create_game))
    owner, other = await leaked_device(server, "bea")
    starting = asyncio.create_task(other.request("new_game", level="hard", deal=1))
    await gate.until_entered()  # signed in when it began: it is started
    assert (await owner.request("sign_out", everywhere=True))["type"] == "signed_out"
    gate.released.set()
    reply = await starting
    assert reply["type"] == "game", reply
    game = reply["game"]
    assert service.hub.count(game) == 0  # was 1: a signed-out connection watching it
    live = service.cached(game)
    assert live is not None and not live.clock.running  # nobody watches: no play time
    assert (await other.request("games"))["code"] == "unauthenticated"


async def test_an_open_game_as_its_connection_is_signed_out_opens_nothing(
    server: Running, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, service = the_store(server), the_service(server)
    owner, other = await leaked_device(server, "cid")
    game = (await owner.request("new_game", level="hard", deal=1))["game"]
    assert (await owner.request("resign", game=game))["type"] == "ack"
    gate = Gate()
    monkeypatch.setattr(store, "game_owner", gate.hold(store.game_owner))
    monkeypatch.setattr(service, "_games", type(service._games)())  # read from the store
    opening = asyncio.create_task(other.request("open_game", game=game))
    await gate.until_entered()
    assert (await owner.request("sign_out", everywhere=True))["type"] == "signed_out"
    gate.released.set()
    reply = await opening
    assert reply["code"] == "unauthenticated", reply  # was a game, and the game watched
    assert service.hub.count(game) == 0


async def test_an_action_waiting_for_the_game_as_its_connection_is_signed_out_is_refused(
    server: Running, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, service = the_store(server), the_service(server)
    owner, other = await leaked_device(server, "dan")
    game = (await owner.request("new_game", level="hard", deal=1))["game"]
    assert (await other.request("open_game", game=game))["v"] == 0
    gate = Gate()
    monkeypatch.setattr(store, "commit", gate.hold(store.commit))
    moving = asyncio.create_task(owner.request("move", game=game, v=0, card="7C", to=5))
    await gate.until_entered()  # the move holds the game's lock
    dealing = asyncio.create_task(other.request("deal", game=game, v=1))
    live = service.cached(game)
    assert live is not None
    # The deal waits for the lock (asyncio.Lock keeps its waiters).
    await wait_for(lambda: bool(getattr(live.lock, "_waiters", None)))
    third = await server.connect()
    assert (await third.hello(owner.token))["type"] == "welcome"
    assert (await third.request("sign_out", everywhere=True))["type"] == "signed_out"
    gate.released.set()
    assert (await moving)["type"] == "ack"  # it held the lock before: it lands
    refused = await dealing
    assert refused["code"] == "unauthenticated", refused  # was an ack: dealt for nobody
    assert live.version == 1


async def test_a_hint_whose_search_outlasts_its_connections_sign_in_is_not_counted(
    server: Running, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The hint's search runs under the game's lock; a sign-out everywhere meanwhile
    signs its connection out: no hint is recorded (hints count in the game's record)."""
    service = the_service(server)
    owner, other = await leaked_device(server, "gus")
    game = (await owner.request("new_game", level="hard", deal=1))["game"]
    assert (await other.request("open_game", game=game))["v"] == 0
    gate = Gate()
    monkeypatch.setattr(service.advisor, "hint", gate.hold(service.advisor.hint))
    hinting = asyncio.create_task(other.request("hint", game=game))
    await gate.until_entered()
    assert (await owner.request("sign_out", everywhere=True))["type"] == "signed_out"
    gate.released.set()
    refused = await hinting
    assert refused.get("code") == "unauthenticated", refused  # was a hint, counted for nobody
    live = service.cached(game)
    assert live is not None and live.version == 0


async def test_a_hello_that_reads_its_token_as_the_player_signs_out_everywhere_is_refused(
    server: Running, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A hello whose token was read before a sign-out everywhere revoked it, and that
    signs in after that sign-out signed the player's connections out, would leave one
    connection signed in with a revoked token: it is ``unauthenticated``."""
    store = the_store(server)
    owner = await server.player("hal")
    late = await server.connect()
    assert owner.token is not None
    greeting, released = await hello_held_after_its_read(store, late, owner.token, monkeypatch)
    assert (await owner.request("sign_out", everywhere=True))["type"] == "signed_out"
    released.set()
    reply = await greeting
    assert reply.get("code") == "unauthenticated", reply  # was welcome, signed in for good
    assert (await late.request("games"))["code"] in ("unauthenticated", "hello_required")


async def test_stats_as_its_connection_is_signed_out_is_answered(
    server: Running, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    store = the_store(server)
    gate = Gate()
    monkeypatch.setattr(store, "level_stats", gate.hold(store.level_stats))
    owner, other = await leaked_device(server, "eve")
    with caplog.at_level(logging.WARNING, logger="server"):
        asking = asyncio.create_task(other.request("stats"))
        await gate.until_entered()
        assert (await owner.request("sign_out", everywhere=True))["type"] == "signed_out"
        gate.released.set()
        reply = await asking
    assert reply["type"] == "stats", reply  # was internal: the player read after the await
    assert len(reply["stats"]) == 6
    no_internal_errors(caplog)


async def test_a_token_rotated_as_its_connection_is_signed_out_is_not_kept(
    server: Running, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, service = the_store(server), the_service(server)
    gate = Gate()
    monkeypatch.setattr(store, "rotate_token", gate.hold(store.rotate_token))
    owner, other = await leaked_device(server, "fay")
    rotating = asyncio.create_task(other.request("rotate_token"))
    await gate.until_entered()
    assert (await owner.request("sign_out", everywhere=True))["type"] == "signed_out"
    gate.released.set()
    reply = await rotating
    assert reply["code"] == "unauthenticated", reply
    assert not any(service.signed_in._tokens.values())  # nothing held for a signed-out one


# -- the games list -----------------------------------------------------------------------


async def test_games_lists_the_newest_games_only(
    server: Running, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(service_module, "GAMES_LIST_LIMIT", 3)
    ada = await server.player("ada")
    started = [(await ada.request("new_game", level="hard", deal=d))["game"] for d in range(1, 6)]
    listed = (await ada.request("games"))["games"]
    assert [summary["game"] for summary in listed] == started[:1:-1]  # the newest 3
    lost = (await ada.request("games", status="lost"))["games"]
    assert [summary["game"] for summary in lost] == started[-2::-1][:3]


async def test_a_hello_answered_unavailable_gives_the_client_a_new_hello_deadline(
    start: Start, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The 1008 "no hello in time" is for a peer that says nothing, not for one whose every
    hello the database could not answer (an outage): it retries on the same connection."""
    server = await start(hello_timeout_ms=400)
    ada = await server.player("ada")
    token = ada.token
    store = the_store(server)
    sign_in = store.sign_in

    async def down(*_: Any, **__: Any) -> Any:
        raise StoreUnavailable("the database is not answering; retry shortly")

    monkeypatch.setattr(store, "sign_in", down)
    again = await server.connect()
    for _ in range(8):  # 1.2 s of retries: three times the deadline
        reply = await again.request("hello", protocol=1, client="test", locale="en", token=token)
        assert reply["code"] == "unavailable", reply
        await asyncio.sleep(0.15)
    monkeypatch.setattr(store, "sign_in", sign_in)
    welcome = await again.request("hello", protocol=1, client="test", locale="en", token=token)
    assert welcome["type"] == "welcome", welcome


async def _pongs_then_close(reader: asyncio.StreamReader) -> tuple[int, int | None]:
    """Read frames to the server's close: how many pongs came, and the close code."""
    pongs = 0
    async with asyncio.timeout(20):
        while True:
            first, second = await reader.readexactly(2)
            size = second & 0x7F
            if size == 126:
                (size,) = struct.unpack("!H", await reader.readexactly(2))
            payload = await reader.readexactly(size)
            if first & 0x0F == 0xA:
                pongs += 1
            elif first & 0x0F == 0x8:
                return pongs, struct.unpack("!H", payload[:2])[0] if payload else None


async def test_pings_in_one_write_are_stopped_within_it(start: Start) -> None:
    """websockets parsed all a read brought (64 KiB: some 11,000 empty pings) and answered
    each before the limit could close the connection: it is given 1 KiB at a time."""
    server = await start(**OPEN)
    raw = await RawClient.open(server.server.port)
    raw.send({"type": "hello", "id": 1, "protocol": 1, "client": "raw/1", "locale": "en"})
    raw.writer.write(ping_frame(b"") * 20_000)
    await raw.reader.readexactly(2)  # the welcome's head
    pongs, code = await _pongs_then_close(raw.reader)
    await raw.close()
    assert code == 1008 and pongs <= CONTROL_FRAMES_BURST + 200, pongs


@pytest.mark.parametrize("pings", [CONTROL_FRAMES_BURST + 1, 2 * CONTROL_FRAMES_BURST])
async def test_a_ping_past_the_limit_gets_no_pong(
    start: Start, monkeypatch: pytest.MonkeyPatch, pings: int
) -> None:
    """The limit was counted on websockets' events, which come once it has parsed a
    slice of the read and answered every ping in it: 101 pings in one write got 101
    pongs, 200 got 147, before the 1008. Now the limit comes before the answer: as many
    pongs as the burst allows, then the close. (The bucket fills no faster than one
    token in 1,000 s here, however slowly a loaded machine reads.)"""
    monkeypatch.setattr(connection, "CONTROL_FRAMES", Rate(0.001, CONTROL_FRAMES_BURST))
    server = await start(**OPEN)
    raw = await RawClient.open(server.server.port)
    raw.writer.write(ping_frame(b"p") * pings)  # in one slice of a read, or two
    pongs, code = await _pongs_then_close(raw.reader)
    await raw.close()
    assert (pongs, code) == (CONTROL_FRAMES_BURST, 1008)


async def test_frames_sent_with_the_upgrade_wait_for_its_answer(start: Start) -> None:
    """Pings sent in one write with the upgrade request were answered before the ``101``
    (RFC 6455: no frame before the handshake's answer), 20,000 pongs of them."""
    server = await start(**OPEN)
    reader, writer = await asyncio.open_connection("127.0.0.1", server.server.port)
    head = upgrade_head(server.server.port)
    writer.write(head + ping_frame(b"") * 10_000)
    try:
        answer = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
        assert answer.startswith(b"HTTP/1.1 101 "), answer[:80]
        pongs, code = await _pongs_then_close(reader)
        assert code == 1008 and pongs <= CONTROL_FRAMES_BURST + 200, pongs
    finally:
        writer.close()


async def test_more_than_a_frame_sent_with_the_upgrade_is_cut_off(start: Start) -> None:
    """What follows the request head is held until its answer, 64 KiB at most: what came
    in the head's own read was not counted, so a plain socket could pass the bound."""
    server = await start(**OPEN)
    reader, writer = await asyncio.open_connection("127.0.0.1", server.server.port)
    head = upgrade_head(server.server.port)
    writer.write(head + ping_frame(b"p" * 100) * 800)  # 84,800 bytes, in one write
    try:
        answer = await asyncio.wait_for(reader.read(), 10)
        assert answer == b"", answer[:80]  # aborted: neither a 101 nor a pong
    except ConnectionResetError:
        pass
    finally:
        writer.close()


class _SeenWith(logging.Filter):
    """Notes each line of ``server.connection`` with the connection its context names."""

    def __init__(self) -> None:
        super().__init__()
        self.lines: list[tuple[str, int | None]] = []

    def filter(self, record: logging.LogRecord) -> bool:
        self.lines.append((record.getMessage(), connection_id.get()))
        return True


async def test_a_missed_hello_deadline_is_logged_as_its_own_connections(start: Start) -> None:
    """The sweeper of deadlines ran in the context of the connection that started it:
    the line closing a silent connection (2) said connection=1, a healthy one."""
    server = await start(hello_timeout_ms=300)
    seen = _SeenWith()
    logger = logging.getLogger("server.connection")
    logger.addFilter(seen)
    try:
        ada = await server.player("ada")  # connection 1: starts the sweeper
        silent = await RawClient.open(server.server.port)  # connection 2: says nothing
        assert await silent.read_close(5) == 1008
        await silent.close()
        assert (await ada.request("ping"))["type"] == "pong"
    finally:
        logger.removeFilter(seen)
    late = [who for line, who in seen.lines if "no hello in time" in line]
    assert late == [2], seen.lines


async def test_a_peer_closed_for_a_protocol_error_is_not_also_late_with_its_hello(
    start: Start,
) -> None:
    """A bad opcode is closed at once (1002); a peer that leaves that close unanswered was
    then also logged at the hello deadline as 'no hello in time (1008)', which it never got."""
    server = await start(hello_timeout_ms=300)
    seen = _SeenWith()
    logger = logging.getLogger("server.connection")
    logger.addFilter(seen)
    try:
        ada = await server.player("ada")
        rude = await RawClient.open(server.server.port)
        rude.writer.write(bytes([0x83, 0x80]) + os.urandom(4))  # opcode 3: reserved
        assert await rude.read_close(5) == 1002
        await asyncio.sleep(1.0)  # past the hello deadline, the close still unanswered
        assert (await ada.request("ping"))["type"] == "pong"
        await rude.close()
    finally:
        logger.removeFilter(seen)
    assert not [line for line, _who in seen.lines if "no hello in time" in line], seen.lines
