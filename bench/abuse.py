"""A bystander's latency while other clients abuse the server (docs/reliability.md).

Starts ``scorpion-server`` as a separate process on a free port of 127.0.0.1
(SQLite in a temporary directory) with its default limits, trusting 127.0.0.1
as a proxy so that every client here can claim an address of its own in
``X-Forwarded-For`` (as clients behind nginx would). A first server, with
request rates off, prepares the long games the abuses need; the measured
server then runs on the same database. For each scenario, one bystander plays
a move and its undo, alternately, for ``seconds``, while the abusers run:

- ``none``: nobody else;
- ``ping flood``: 4 connections sending pings without waiting for replies;
- ``non-readers``: 4 connections asking a long finished game's replay over and
  over without reading a byte (the server's RSS is reported before and after);
- ``huge history``: 4 connections asking ``open_game since=0`` of a game at the
  most versions a game may have, as fast as they are answered;
- ``connection flood``: 1,000 connections from one address, never saying hello.

Prints one line per scenario: the bystander's median and 95th percentile
action latency, its actions, and what the abusers got (replies, closes).

    python -m bench.abuse [--seconds 5] [--other CHECKOUT]

``--other`` runs the server of another checkout (e.g. one without these
limits, for a before-and-after); its flags are left at their defaults.
"""

from __future__ import annotations

import asyncio
import contextlib
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from pathlib import Path
from typing import Any

import msgpack
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed
from websockets.typing import Subprotocol

from bench.common import Parser, run_main
from bench.load import PYTHON, Player, first_move, free_port, spawn, wait_for_port
from protocol import SUBPROTOCOL, encode
from tests.server.raw import RawClient

__all__ = ["main"]

LONG_GAME = 10_000  # the default most versions of a game
ABUSERS = 4


class Server:
    """``scorpion-server`` in a child process, on one SQLite file."""

    def __init__(self, data: str, *flags: str, other: str | None = None) -> None:
        self.port = free_port()
        python = PYTHON if other is None else [str(Path(other) / ".venv/bin/python")]
        command = [*python, "-m", "server", "--port", str(self.port), "--data-dir", data]
        command += ["--log-level", "ERROR", "--lost-budget-ms", "0", "--easy-pool", "0"]
        if other is None:  # an older checkout may not know the limits' flags
            command += ["--trusted-proxies", "127.0.0.1/32", *flags]
        self.process = spawn(command, cwd=other)
        self.url = f"ws://127.0.0.1:{self.port}/"

    async def started(self) -> None:
        await wait_for_port(self.port, time.monotonic() + 60)

    def rss_kb(self) -> int:
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        return 0

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


async def _ws(url: str, address: str) -> ClientConnection:
    return await connect(
        url,
        subprotocols=[Subprotocol(SUBPROTOCOL)],
        compression=None,
        additional_headers={"X-Forwarded-For": address},
        max_size=None,
    )


async def _join(url: str, address: str, name: str, token: str | None = None) -> Player:
    player = Player(await _ws(url, address))
    hello: dict[str, Any] = {"protocol": 1, "client": "bench", "locale": "en"}
    if token is not None:
        hello["token"] = token
    await player.request("hello", **hello)
    return player


async def prepare(url: str) -> dict[str, Any]:
    """The long games: one finished (for replays), one at the most versions (open_game)."""
    owner = await _join(url, "192.0.2.1", "owner")
    token = (await owner.request("register", name="owner"))["token"]
    games = []
    for finish in (True, False):
        game = (await owner.request("new_game", level="hard", deal=1))["game"]
        for start in range(0, LONG_GAME, 500):
            for v in range(start, start + 500):
                await owner.ws.send(encode({"type": "restart", "id": f"r{v}", "game": game,
                                            "v": v}))  # fmt: skip
            await owner.request("ping")  # every restart before it is answered
        if finish:
            await owner.request("resign", game=game)
        games.append(game)
    await owner.ws.close()
    return {"token": token, "replay_game": games[0], "long_game": games[1]}


async def bystander(url: str, seconds: float) -> list[float]:
    player = await _join(url, "198.51.100.7", f"by{time.monotonic_ns()}")
    await player.request("register", name=f"by{time.monotonic_ns()}")
    game = await player.request("new_game", level="hard", deal=1)
    player.game, player.v = game["game"], game["v"]
    move = first_move()
    latencies: list[float] = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        latencies += await player.play(2, move)
        await asyncio.sleep(0.1)  # a fast player: under 20 actions a second
    await player.ws.close()
    return latencies


async def _flood_pings(url: str, n: int, tally: Counter[str], stop: asyncio.Event) -> None:
    while not stop.is_set():
        try:
            ws = await _ws(url, f"203.0.113.{n}")
            await ws.send(encode({"type": "hello", "id": 0, "protocol": 1, "client": "x",
                                  "locale": "en"}))  # fmt: skip
            reader = asyncio.create_task(_count_replies(ws, tally))
            i = 0
            while not stop.is_set() and not reader.done():
                i += 1
                await ws.send(encode({"type": "ping", "id": i}))
                if i % 50 == 0:
                    await asyncio.sleep(0)
            reader.cancel()
            await ws.close()
        except (ConnectionClosed, OSError) as exc:
            tally[f"closed {getattr(exc, 'rcvd', None) and exc.rcvd.code}"] += 1  # type: ignore[union-attr]
            await asyncio.sleep(0.1)


async def _count_replies(ws: ClientConnection, tally: Counter[str]) -> None:
    try:
        async for frame in ws:
            message = msgpack.unpackb(frame, raw=False)
            tally[str(message.get("code", message.get("type")))] += 1
    except ConnectionClosed as closed:
        tally[f"closed {closed.rcvd.code if closed.rcvd else None}"] += 1


async def _non_reader(url: str, n: int, ctx: dict[str, Any], tally: Counter[str],
                      stop: asyncio.Event) -> None:  # fmt: skip
    port = int(url.rsplit(":", 1)[1].strip("/"))
    raw = await RawClient.open(port, {"X-Forwarded-For": f"203.0.113.{50 + n}"})
    raw.send({"type": "hello", "id": 0, "protocol": 1, "client": "x", "locale": "en",
              "token": ctx["token"]})  # fmt: skip
    for i in range(1500):
        if stop.is_set():
            break
        raw.send({"type": "replay", "id": i + 1, "game": ctx["replay_game"]})
        if i % 50 == 0:
            await asyncio.sleep(0.01)
    code = await raw.read_close(30)
    tally[f"closed {code}"] += 1
    await raw.close()


async def _history(url: str, n: int, ctx: dict[str, Any], tally: Counter[str],
                   stop: asyncio.Event) -> None:  # fmt: skip
    player = await _join(url, f"203.0.113.{100 + n}", "owner", ctx["token"])
    while not stop.is_set():
        player.next_id += 1
        await player.ws.send(encode({"type": "open_game", "id": player.next_id,
                                     "game": ctx["long_game"], "since": 0}))  # fmt: skip
        while True:
            reply = msgpack.unpackb(await player.ws.recv(), raw=False)
            if reply.get("re") == player.next_id:
                tally[str(reply.get("code", reply["type"]))] += 1
                break
    await player.ws.close()


async def _connection_flood(url: str, ctx: dict[str, Any], tally: Counter[str],
                            stop: asyncio.Event) -> None:  # fmt: skip
    opened: list[ClientConnection] = []
    for _ in range(1000):
        if stop.is_set():
            break
        try:
            opened.append(await _ws(url, "203.0.113.200"))
            tally["accepted"] += 1
        except Exception as exc:  # refused handshakes count too
            tally[type(exc).__name__] += 1
    await stop.wait()
    closes = Counter(ws.close_code for ws in opened)
    tally.update({f"closed {code}": count for code, count in closes.items()})
    for ws in opened:
        with contextlib.suppress(Exception):
            await ws.close()


Abuse = Callable[[str, dict[str, Any], Counter[str], asyncio.Event], Coroutine[Any, Any, None]]


def _many(make: Callable[..., Awaitable[None]], with_ctx: bool) -> Abuse:
    async def run(url: str, ctx: dict[str, Any], tally: Counter[str], stop: asyncio.Event) -> None:
        jobs = [
            make(url, n, ctx, tally, stop) if with_ctx else make(url, n, tally, stop)
            for n in range(ABUSERS)
        ]
        await asyncio.gather(*jobs, return_exceptions=True)

    return run


async def _nobody(url: str, ctx: dict[str, Any], tally: Counter[str], stop: asyncio.Event) -> None:
    await stop.wait()


SCENARIOS: dict[str, Abuse] = {
    "none": _nobody,
    "ping flood": _many(_flood_pings, with_ctx=False),
    "non-readers": _many(_non_reader, with_ctx=True),
    "huge history": _many(_history, with_ctx=True),
    "connection flood": _connection_flood,
}


async def scenario(server: Server, name: str, ctx: dict[str, Any], seconds: float) -> str:
    tally: Counter[str] = Counter()
    stop = asyncio.Event()
    rss_before = server.rss_kb()
    abuse = asyncio.create_task(SCENARIOS[name](server.url, ctx, tally, stop))
    await asyncio.sleep(0.5)  # the abuse is under way
    latencies = await bystander(server.url, seconds)
    rss_during = server.rss_kb()
    stop.set()
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(abuse, 40)
    median = statistics.median(latencies)
    p95 = statistics.quantiles(latencies, n=20)[-1]
    seen = ", ".join(f"{key}: {count}" for key, count in tally.most_common(5))
    return (
        f"| {name} | {median:.1f} | {p95:.1f} | {len(latencies)} | "
        f"{rss_before // 1024} -> {rss_during // 1024} | {seen or '-'} |"
    )


async def run(seconds: float, other: str | None = None) -> list[str]:
    with tempfile.TemporaryDirectory() as data:
        setup = Server(data, "--rate-actions", "off", "--rate-reads", "off", other=other)
        try:
            await setup.started()
            ctx = await prepare(setup.url)
        finally:
            setup.stop()
        server = Server(data, other=other)
        try:
            await server.started()
            lines = [
                "| abuse | bystander p50 ms | p95 ms | actions | server RSS MB | abusers got |",
                "|---|---|---|---|---|---|",
            ]
            for name in SCENARIOS:
                lines.append(await scenario(server, name, ctx, seconds))
                print(lines[-1], flush=True)
            return lines
        finally:
            server.stop()


def _main(argv: Sequence[str] | None) -> int:
    cli = Parser(prog="python -m bench.abuse", description=__doc__)
    cli.add_argument("--seconds", type=float, default=5.0, help="bystander time per scenario")
    cli.add_argument(
        "--other", metavar="CHECKOUT", help="run the server of another checkout (its .venv)"
    )
    args = cli.parse_args(argv)
    if args.other is not None and not (Path(args.other) / ".venv/bin/python").is_file():
        cli.error(f"--other: no checkout with a .venv at {args.other}")
    print("\n".join(asyncio.run(run(args.seconds, args.other))))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return run_main("python -m bench.abuse", _main, argv)


if __name__ == "__main__":
    sys.exit(main())
