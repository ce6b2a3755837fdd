"""Delivery latency: how soon a player's other devices see an action, on the same node and across.

Starts two ``scorpion-server`` processes on one PostgreSQL database (the one
named by ``SCORPION_BENCH_DATABASE_URL``; nodes need PostgreSQL). One player
plays from device A on node 1 while device B watches on node 1 and device C
on node 2. A plays ``actions`` actions in lock-step (a legal move and its
undo, alternately, one every ``gap_ms`` so the machine stays quiet); for each
one the benchmark takes the time from sending it to A's ack, to B's push of
that version (same node) and to C's push (another node: commit, NOTIFY,
catch-up from the log, push). Reports the median and 99th percentile of each.

    python -m bench.delivery [--actions 300] [--gap-ms 20] [--database-url URL]
"""

from __future__ import annotations

import asyncio
import os
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import msgpack
from websockets.asyncio.client import ClientConnection, connect
from websockets.typing import Subprotocol

from bench.common import Parser, at_least, percentile, run_main
from bench.load import first_move, free_port, spawn, wait_for_port
from protocol import SUBPROTOCOL, encode

__all__ = ["format_delivery", "run_delivery"]

TIMEOUT_S = 120


class Device:
    """A connection that records when each version's events arrived."""

    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws
        self.arrived: dict[int, float] = {}
        self.replies: dict[Any, asyncio.Future[dict[str, Any]]] = {}
        self.next_id = 0
        self._reader = asyncio.create_task(self._read())

    @classmethod
    async def open(cls, url: str) -> Device:
        ws = await connect(url, subprotocols=[Subprotocol(SUBPROTOCOL)], compression=None)
        return cls(ws)

    async def _read(self) -> None:
        async for frame in self.ws:
            message = msgpack.unpackb(frame, raw=False)
            now = time.perf_counter()
            if _records_an_action(message) and message["v"] not in self.arrived:
                self.arrived[message["v"]] = now
            future = self.replies.pop(message.get("re"), None)
            if future is not None:
                future.set_result(message)

    async def request(self, kind: str, **fields: Any) -> dict[str, Any]:
        self.next_id += 1
        future = asyncio.get_running_loop().create_future()
        self.replies[self.next_id] = future
        await self.ws.send(encode({"type": kind, "id": self.next_id, **fields}))
        reply: dict[str, Any] = await future
        if reply["type"] == "error":
            raise RuntimeError(f"{kind}: {reply}")
        return reply

    async def seen(self, v: int) -> float:
        async with asyncio.timeout(10):
            while v not in self.arrived:
                await asyncio.sleep(0.0005)
        return self.arrived[v]

    async def close(self) -> None:
        await self.ws.close()
        self._reader.cancel()


def _records_an_action(message: dict[str, Any]) -> bool:
    return message.get("type") == "events" and any(
        event["type"] != "clock" for event in message["events"]
    )


@contextmanager
def nodes(database_url: str, count: int) -> Iterator[list[str]]:
    """``count`` server processes on one database; their URLs."""
    ports = [free_port() for _ in range(count)]
    with tempfile.TemporaryDirectory() as data:
        base = [sys.executable, "-m", "server", "--data-dir", data, "--log-level", "WARNING"]
        base += ["--lost-budget-ms", "0", "--easy-pool", "0", "--winnable-pool", "0"]
        base += ["--database-url", database_url]
        subprocess.run([*base, "--migrate"], check=True)
        servers = [spawn([*base, "--port", str(port)]) for port in ports]
        try:
            yield [f"ws://127.0.0.1:{port}/" for port in ports]
        finally:
            for server in servers:
                server.terminate()
                server.wait(timeout=30)


async def run_delivery(database_url: str, actions: int = 300, gap_ms: float = 20) -> dict[str, Any]:
    with nodes(database_url, 2) as urls:
        for port in urls:
            await wait_for_port(int(port.rsplit(":", 1)[1].rstrip("/")), time.monotonic() + 30)
        async with asyncio.timeout(TIMEOUT_S):
            return await _measure(urls, actions, gap_ms)


async def _measure(urls: list[str], actions: int, gap_ms: float) -> dict[str, Any]:
    a, b, c = await Device.open(urls[0]), await Device.open(urls[0]), await Device.open(urls[1])
    await a.request("hello", protocol=1, client="bench", locale="en")
    token = (await a.request("register", name=f"delivery-{secrets.token_hex(4)}"))["token"]
    game = (await a.request("new_game", level="hard", deal=1))["game"]
    for device in (b, c):
        await device.request("hello", protocol=1, client="bench", locale="en", token=token)
        await device.request("open_game", game=game)
    card, to = first_move()
    ack, same, other = [], [], []
    v = 0
    for step in range(actions):
        fields = {"card": card, "to": to} if step % 2 == 0 else {}
        started = time.perf_counter()
        reply = await a.request("move" if step % 2 == 0 else "undo", game=game, v=v, **fields)
        ack.append(time.perf_counter() - started)
        v = reply["v"]
        same.append(await b.seen(v) - started)
        other.append(await c.seen(v) - started)
        await asyncio.sleep(gap_ms / 1000)
    for device in (a, b, c):
        await device.close()
    return {
        "actions": actions,
        "ack": _figures(ack),
        "same": _figures(same),
        "other": _figures(other),
    }


def _figures(seconds: list[float]) -> dict[str, float]:
    ordered = sorted(seconds)
    return {
        "p50_ms": round(statistics.median(ordered) * 1000, 2),
        "p99_ms": round(percentile(ordered, 0.99) * 1000, 2),
    }


def format_delivery(report: dict[str, Any]) -> list[str]:
    rows = [("ack to the acting device", "ack"), ("push to a device on the same node", "same")]
    rows.append(("push to a device on another node", "other"))
    lines = ["| from sending the action to | p50 | p99 |", "|---|---|---|"]
    for label, key in rows:
        figures = report[key]
        lines.append(f"| {label} | {figures['p50_ms']} ms | {figures['p99_ms']} ms |")
    return lines


def _main(argv: Sequence[str] | None) -> int:
    parser = Parser(prog="python -m bench.delivery", description=__doc__)
    parser.add_argument("--actions", type=at_least(1), default=300)
    parser.add_argument("--gap-ms", type=float, default=20)
    parser.add_argument("--database-url", default=os.environ.get("SCORPION_BENCH_DATABASE_URL"))
    args = parser.parse_args(argv)
    if not args.database_url:
        print("bench.delivery needs PostgreSQL: set SCORPION_BENCH_DATABASE_URL", file=sys.stderr)
        return 2
    report = asyncio.run(run_delivery(args.database_url, args.actions, args.gap_ms))
    print("\n".join(format_delivery(report)))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return run_main("python -m bench.delivery", _main, argv)


if __name__ == "__main__":
    sys.exit(main())
