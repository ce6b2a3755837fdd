"""Fuzzing a real server over loopback while a well-behaved player keeps playing.

The server runs in a thread of its own (its own event loop), trusting
127.0.0.1 as a proxy so that every fuzzing connection can claim an address of
its own in ``X-Forwarded-For`` (their strikes and buckets never touch the
player's). Hypothesis draws batches of frames in several categories: random
bytes, random msgpack values, maps with a real request type and random fields,
and well-formed requests with random values, sent on connections that are
anonymous, greeted, or signed in as a player with games of their own. Each
batch is sent without waiting, then every reply is read back.

What must hold: every frame the server sends is in the message catalogue
(``validate_message``); none is ``internal``; the only close codes are the
documented ones; the server's own ``internal`` counter stays at zero; and the
player, acting all along, gets every action acknowledged and every reply in
time. ``make test`` sends FUZZ_FRAMES (about 10,600 frames; frames over the
frame limit are skipped); ``make fuzz`` sets ``SCORPION_FUZZ_EXAMPLES`` for
over 100,000.
"""

from __future__ import annotations

import asyncio
import inspect
import os
import random
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgpack
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from websockets.asyncio.client import connect as ws_connect
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect
from websockets.typing import Subprotocol

from protocol import CLOSE_CODES, MAX_FRAME_BYTES, SUBPROTOCOL, encode, validate_message
from protocol.messages import REQUESTS
from server.app import ScorpionServer
from tests.server.client import Client
from tests.server.conftest import quiet_settings

FRAMES_PER_EXAMPLE = 20
EXAMPLES = int(os.environ.get("SCORPION_FUZZ_EXAMPLES", "530"))
FUZZ_FRAMES = FRAMES_PER_EXAMPLE * EXAMPLES
REPLY_WAIT_S = 10.0

TYPES = sorted(REQUESTS)
CARDS = [r + s for r in "A23456789TJQK" for s in "SHDC"] + ["10h", "4♥", "", "ZZ", "1H"]
WEIRD_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**64 - 1),
    st.floats(allow_nan=True),
    st.text(max_size=80),
    st.binary(max_size=40),
    st.sampled_from(CARDS),
    st.lists(st.integers(-(2**63), 2**63 - 1), max_size=5),
)
MSGPACK_VALUES = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(2**63), 2**64 - 1),
        st.text(max_size=20),
        st.binary(max_size=20),
        st.floats(),
    ),
    lambda children: st.one_of(
        st.lists(children, max_size=6), st.dictionaries(st.text(max_size=10), children, max_size=6)
    ),
    max_leaves=8,
)
FIELD_NAMES = st.sampled_from(
    [
        "id",
        "type",
        "game",
        "v",
        "card",
        "to",
        "since",
        "level",
        "deal",
        "token",
        "name",
        "protocol",
        "client",
        "locale",
        "status",
        "from",
        "x",
    ]
)


def _pack(value: object) -> bytes:
    return bytes(msgpack.packb(value, use_bin_type=True))


@st.composite
def request_like(draw: st.DrawFn, games: list[int]) -> bytes | str:
    """One frame of a random category."""
    category = draw(st.integers(0, 5))
    if category == 0:
        return draw(st.binary(max_size=200))
    if category == 1:
        return _pack(draw(MSGPACK_VALUES))
    if category == 2:
        return draw(st.text(max_size=50))
    fields: dict[str, Any] = {"type": draw(st.sampled_from(TYPES)), "id": draw(st.integers(0, 99))}
    if category == 3:  # a real type, random fields
        fields.update(draw(st.dictionaries(FIELD_NAMES, WEIRD_VALUES, max_size=6)))
        return _pack(fields)
    # a well-formed-looking request with plausible values
    plausible: dict[str, Any] = {
        "game": draw(st.integers(1, 60) | st.integers(1, 10**6)),
        "v": draw(st.integers(0, 50)),
        "card": draw(st.sampled_from(CARDS)),
        "to": draw(st.integers(0, 11)),
        "since": draw(st.integers(0, 60)),
        "level": draw(st.sampled_from(["easy", "medium", "hard", "classic", "relaxed"])),
        "deal": draw(st.integers(1, 10**6)),
        "protocol": 1,
        "client": "fuzz/1",
        "locale": draw(st.sampled_from(["en", "fi", "ru"])),
        "name": draw(st.text(min_size=1, max_size=12)),
        "from": draw(st.integers(0, 5000)),
    }
    spec = REQUESTS[fields["type"]]
    for each in spec.shape.fields:
        if each.name in plausible and (each.required or draw(st.booleans())):
            fields[each.name] = plausible[each.name]
    return encode(fields) if category == 4 else _pack(fields)


@dataclass
class Tally:
    sent: int = 0
    replies: int = 0
    closes: dict[int, int] = field(default_factory=dict)
    codes: dict[str, int] = field(default_factory=dict)


@dataclass
class Player:
    """The well-behaved client's record, written from the server's thread."""

    actions: int = 0
    failures: list[str] = field(default_factory=list)
    slowest: float = 0.0
    stop: bool = False


class ServerThread:
    """A ``ScorpionServer`` and a playing client on an event loop in another thread."""

    def __init__(self, data_dir: Path) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        settings_ = quiet_settings(
            data_dir,
            trusted_proxies="127.0.0.1/32",
            abuse_limit=1000,  # frames keep being answered; strikes have their own tests
            rate_actions="30,120",  # the defaults' order: some fuzz gets rate_limited
            rate_reads="50,200",
            rate_hints="3,20",
            hint_budget_ms=5,
            # websockets draws keepalive ping payloads from the global ``random``, which
            # Hypothesis watches while it generates data: no keepalive on this loop.
            keepalive_ms=0,
        )
        self.server = ScorpionServer(settings_)
        self.player = Player()
        self._run(self.server.start())
        self.url = f"ws://127.0.0.1:{self.server.port}/"
        self.playing = asyncio.run_coroutine_threadsafe(self._play(), self.loop)

    def _run(self, work: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(work, self.loop).result(60)

    async def _play(self) -> None:
        """Deal, undo, deal, undo... on one game, checking every reply."""
        player = self.player
        ws = await ws_connect(
            self.url, subprotocols=[Subprotocol(SUBPROTOCOL)], compression=None, ping_interval=None
        )
        client = Client(ws)
        await client.register("steady")
        game = (await client.request("new_game", level="hard", deal=1))["game"]
        v = 0
        while not player.stop:
            kind = "deal" if v % 2 == 0 else "undo"
            started = time.monotonic()
            reply = await client.request(kind, game=game, v=v)
            player.slowest = max(player.slowest, time.monotonic() - started)
            if reply.get("type") != "ack":
                player.failures.append(f"{kind} at v={v}: {reply}")
                return
            v = reply["v"]
            player.actions += 1
            await asyncio.sleep(0.05)
        await client.close()

    def internal_errors(self) -> float:
        total = 0.0
        for metric in self.server.metrics.errors.collect():
            for sample in metric.samples:
                if sample.labels.get("code") == "internal" and sample.name.endswith("_total"):
                    total += sample.value
        return total

    def close(self) -> None:
        self.player.stop = True
        self.playing.result(30)
        self._run(self.server.stop())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.loop.close()


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerThread]:
    server = ServerThread(tmp_path_factory.mktemp("fuzz"))
    yield server
    server.close()


# Used without a ``with``: websockets 17.1+ wants that said (legacy=True), 17.0 has no flag.
_DIRECT: dict[str, Any] = (
    {"legacy": True} if "legacy" in inspect.signature(connect).parameters else {}
)


def _open(url: str, rng: random.Random) -> ClientConnection:
    address = f"10.{rng.randrange(256)}.{rng.randrange(256)}.{rng.randrange(1, 255)}"
    connection: ClientConnection = connect(
        url,
        subprotocols=[Subprotocol(SUBPROTOCOL)],
        additional_headers={"X-Forwarded-For": address},
        max_size=None,
        open_timeout=10,
        **_DIRECT,
    )
    return connection


def _signed_in(ws: ClientConnection, mode: int, rng: random.Random) -> list[int]:
    """Greet (mode 1) or also register and start a game (mode 2); the games it may name."""
    if mode == 0:
        return []
    ws.send(encode({"type": "hello", "id": "h", "protocol": 1, "client": "fuzz/1",
                    "locale": "en"}))  # fmt: skip
    ws.recv(REPLY_WAIT_S)
    if mode == 1:
        return []
    ws.send(encode({"type": "register", "id": "r", "name": f"f{rng.getrandbits(48):x}"}))
    ws.recv(REPLY_WAIT_S)
    ws.send(encode({"type": "new_game", "id": "g", "level": "hard", "deal": 1}))
    games = []
    for _ in range(3):
        message = msgpack.unpackb(ws.recv(REPLY_WAIT_S), raw=False)
        if message.get("re") == "g" and message.get("type") == "game":
            games.append(int(message["game"]))
            break
    return games


def _check(frame: bytes | str, tally: Tally) -> dict[str, Any]:
    assert isinstance(frame, bytes), "the server sends binary frames only"
    assert len(frame) <= 1024 * 1024
    message: dict[str, Any] = msgpack.unpackb(frame, raw=False)
    validate_message(message)
    if message.get("type") == "error":
        code = str(message["code"])
        tally.codes[code] = tally.codes.get(code, 0) + 1
        assert code != "internal", message
        if code == "rate_limited":
            assert message["retry_after_ms"] > 0
    return message


class Connections:
    """One fuzzing connection per mode (anonymous, greeted, signed in), reopened when closed."""

    def __init__(self, url: str, tally: Tally) -> None:
        self.url = url
        self.tally = tally
        self.rng = random.Random(12)
        self._open: dict[int, ClientConnection] = {}
        self._ends = 0

    def get(self, mode: int) -> ClientConnection:
        ws = self._open.get(mode)
        if ws is None:
            ws = self._open[mode] = _open(self.url, self.rng)
            _signed_in(ws, mode, self.rng)
        return ws

    def exchange(self, mode: int, frames: list[bytes | str]) -> None:
        """Send ``frames`` and a closing ping on mode's connection; read every reply."""
        tally = self.tally
        try:
            ws = self.get(mode)
            for frame in frames:
                if isinstance(frame, bytes) and len(frame) > MAX_FRAME_BYTES:
                    continue
                ws.send(frame)
                tally.sent += 1
            self._ends += 1
            end = f"end-{self._ends}"
            ws.send(encode({"type": "ping", "id": end}))
            while True:
                message = _check(ws.recv(REPLY_WAIT_S), tally)
                tally.replies += 1
                if message.get("re") == end:
                    return
        except ConnectionClosed as closed:
            code = closed.rcvd.code if closed.rcvd is not None else 0
            tally.closes[code] = tally.closes.get(code, 0) + 1
            assert code in CLOSE_CODES, closed
            self._open.pop(mode, None)

    def close(self) -> None:
        for ws in self._open.values():
            ws.close()


# The server's thread runs while Hypothesis draws; Hypothesis warns when the global
# ``random`` changes during a draw, which another thread's library code may do.
@pytest.mark.filterwarnings("ignore::hypothesis.errors.HypothesisDeprecationWarning")
def test_fuzzed_frames_never_break_the_server(running: ServerThread) -> None:
    tally = Tally()
    connections = Connections(running.url, tally)

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(data=st.data(), mode=st.integers(0, 2))
    def one_batch(data: st.DataObject, mode: int) -> None:
        frames = data.draw(st.lists(request_like([]), min_size=FRAMES_PER_EXAMPLE,
                                    max_size=FRAMES_PER_EXAMPLE))  # fmt: skip
        connections.exchange(mode, frames)
        assert not running.player.failures, running.player.failures

    try:
        one_batch()
    finally:
        connections.close()
    player = running.player
    assert tally.sent >= FUZZ_FRAMES * 0.95, tally  # 10,070 by default
    assert running.internal_errors() == 0
    assert not player.failures, player.failures
    assert player.actions >= 10
    # every action answered, none stuck behind the fuzz (9 s seen on a machine loaded far
    # beyond its cores, where the fuzzing thread and the server share one interpreter)
    assert player.slowest < 20.0
    print(f"\nfuzz: {tally.sent} frames, {tally.replies} replies, closes {tally.closes}, "
          f"codes {dict(sorted(tally.codes.items()))}; player: {player.actions} "
          f"actions, slowest {player.slowest * 1000:.0f} ms")  # fmt: skip
