"""Server load benchmark: many players moving at once over real WebSockets on loopback.

Starts ``scorpion-server`` as a separate process on a free port of 127.0.0.1
(SQLite in a temporary directory, or the PostgreSQL database named by
``SCORPION_BENCH_DATABASE_URL``), then runs ``players`` clients in this
process. Each registers, starts hard deal 1 and plays ``actions`` actions: a
legal move and its undo, alternately, so every action is applied by the
engine and committed before it is acknowledged. Reports actions per second
and the median and 99th percentile of the time from sending an action to its
reply. The run is bounded in count and time and stops the server itself.

    python -m bench.load [--players 50] [--actions 100] [--database-url URL]
                         [--lost-budget-ms 0] [--easy-pool 0]

The server's solver work is off by default: its lost-position check
(``--lost-budget-ms 0``) and its background search for easy deals
(``--easy-pool 0``), so the figure is that of the move path alone; give them
a budget or a target to load the solver workers too.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

import msgpack
from websockets.asyncio.client import ClientConnection, connect
from websockets.typing import Subprotocol

from engine.cards import card_str
from engine.game import Game
from engine.levels import get_level
from engine.moves import legal_moves
from protocol import SUBPROTOCOL, encode

__all__ = ["run_load"]

DEAL = 1
TIMEOUT_S = 120
# How the server is started; SCORPION_BENCH_PROFILE=FILE runs it under cProfile.
PYTHON = [sys.executable] + (
    ["-m", "cProfile", "-o", os.environ["SCORPION_BENCH_PROFILE"]]
    if os.environ.get("SCORPION_BENCH_PROFILE")
    else []
)


def first_move() -> tuple[str, int]:
    """A legal move from hard deal 1's starting position: (card, column)."""
    game = Game(get_level("hard"), DEAL)
    src, index, dst = legal_moves(game.state, game.rules, useful_only=True)[0]
    return card_str(game.state.cols[src][index]), dst + 1


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class Player:
    """One benchmark client: sends a request and waits for its reply, skipping pushes."""

    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws
        self.next_id = 0

    async def request(self, kind: str, **fields: Any) -> dict[str, Any]:
        self.next_id += 1
        await self.ws.send(encode({"type": kind, "id": self.next_id, **fields}))
        while True:
            reply: dict[str, Any] = msgpack.unpackb(await self.ws.recv(), raw=False)
            if reply.get("re") == self.next_id:
                return reply


async def play(url: str, name: str, actions: int, move: tuple[str, int]) -> list[float]:
    """One player's session; the latency of each action in milliseconds."""
    latencies = []
    async with connect(url, subprotocols=[Subprotocol(SUBPROTOCOL)], compression=None) as ws:
        player = Player(ws)
        await player.request("hello", protocol=1, client="bench", locale="en")
        await player.request("register", name=name)
        game = await player.request("new_game", level="hard", deal=DEAL)
        gid, v = game["game"], game["v"]
        for step in range(actions):
            fields = {"card": move[0], "to": move[1]} if step % 2 == 0 else {}
            started = time.perf_counter()
            reply = await player.request(
                "move" if step % 2 == 0 else "undo", game=gid, v=v, **fields
            )
            latencies.append((time.perf_counter() - started) * 1000)
            if reply["type"] != "ack":
                raise RuntimeError(f"{name}: {reply}")
            v = reply["v"]
    return latencies


async def wait_for_port(port: int, deadline: float) -> None:
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError):
            _reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.close()
            return
        await asyncio.sleep(0.1)
    raise RuntimeError("the server did not start")


async def run_load(
    players: int,
    actions: int,
    database_url: str | None,
    lost_budget_ms: int = 0,
    easy_pool: int = 0,
) -> dict[str, Any]:
    port = free_port()
    with tempfile.TemporaryDirectory() as data:
        command = [*PYTHON, "-m", "server", "--port", str(port), "--data-dir", data]
        command += ["--log-level", "WARNING", "--lost-budget-ms", str(lost_budget_ms)]
        command += ["--easy-pool", str(easy_pool)]
        if database_url:
            subprocess.run([*command, "--database-url", database_url, "--migrate"], check=True)
            command += ["--database-url", database_url]
        server = subprocess.Popen(command)
        try:
            await wait_for_port(port, time.monotonic() + 30)
            move = first_move()
            run = os.getpid()
            started = time.perf_counter()
            sessions = [
                play(f"ws://127.0.0.1:{port}/", f"bench-{run}-{n}", actions, move)
                for n in range(players)
            ]
            results = await asyncio.wait_for(asyncio.gather(*sessions), TIMEOUT_S)
            elapsed = time.perf_counter() - started
        finally:
            server.terminate()
            server.wait(timeout=30)
    latencies = sorted(ms for session in results for ms in session)
    return {
        "store": "postgresql" if database_url else "sqlite",
        "players": players,
        "actions": len(latencies),
        "actions_per_s": round(len(latencies) / elapsed),
        "median_ms": round(statistics.median(latencies), 1),
        "p99_ms": round(latencies[int(len(latencies) * 0.99) - 1], 1),
    }


def format_load(report: dict[str, Any]) -> str:
    return (
        f"{report['store']}: {report['players']} players, {report['actions']:,} actions: "
        f"{report['actions_per_s']:,} actions/s, median {report['median_ms']} ms, "
        f"p99 {report['p99_ms']} ms"
    )


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.load", description=__doc__)
    parser.add_argument("--players", type=int, default=50)
    parser.add_argument("--actions", type=int, default=100)
    parser.add_argument("--database-url", default=os.environ.get("SCORPION_BENCH_DATABASE_URL"))
    parser.add_argument("--lost-budget-ms", type=int, default=0)
    parser.add_argument("--easy-pool", type=int, default=0)
    args = parser.parse_args()
    report = asyncio.run(
        run_load(args.players, args.actions, args.database_url, args.lost_budget_ms, args.easy_pool)
    )
    print(format_load(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
