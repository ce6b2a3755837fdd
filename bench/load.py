"""Server load benchmark: many players moving at once over real WebSockets on loopback.

Starts ``scorpion-server`` as a separate process on a free port of 127.0.0.1
(SQLite in a temporary directory, or the PostgreSQL database named by
``SCORPION_BENCH_DATABASE_URL``), then runs ``players`` clients in this
process. Each registers and starts hard deal 1; once all have, each plays
``actions`` actions: a legal move and its undo, alternately, so every action
is applied by the engine and committed before it is acknowledged. Reports
actions per second and the median and 99th percentile of the time from
sending an action to its reply (the timed part holds actions only). The run
is bounded in count and time and stops the server itself.

    python -m bench.load [--players 50] [--actions 100] [--database-url URL]
                         [--lost-budget-ms 0] [--easy-pool 0] [--commit-batch 64]

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
import secrets
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
        self.game = 0
        self.v = 0

    @classmethod
    async def join(cls, url: str, name: str) -> Player:
        """Connect, register as ``name`` and start hard deal ``DEAL``."""
        ws = await connect(url, subprotocols=[Subprotocol(SUBPROTOCOL)], compression=None)
        player = cls(ws)
        await player.request("hello", protocol=1, client="bench", locale="en")
        await player.request("register", name=name)
        game = await player.request("new_game", level="hard", deal=DEAL)
        player.game, player.v = game["game"], game["v"]
        return player

    async def request(self, kind: str, **fields: Any) -> dict[str, Any]:
        self.next_id += 1
        await self.ws.send(encode({"type": kind, "id": self.next_id, **fields}))
        while True:
            reply: dict[str, Any] = msgpack.unpackb(await self.ws.recv(), raw=False)
            if reply.get("re") == self.next_id:
                if reply["type"] == "error":
                    raise RuntimeError(f"{kind}: {reply}")
                return reply

    async def play(self, actions: int, move: tuple[str, int]) -> list[float]:
        """A move and its undo, alternately; the latency of each action in milliseconds."""
        latencies = []
        for step in range(actions):
            fields = {"card": move[0], "to": move[1]} if step % 2 == 0 else {}
            started = time.perf_counter()
            reply = await self.request(
                "move" if step % 2 == 0 else "undo", game=self.game, v=self.v, **fields
            )
            latencies.append((time.perf_counter() - started) * 1000)
            self.v = reply["v"]
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
    commit_batch: int = 64,
) -> dict[str, Any]:
    port = free_port()
    with tempfile.TemporaryDirectory() as data:
        command = [*PYTHON, "-m", "server", "--port", str(port), "--data-dir", data]
        command += ["--log-level", "WARNING", "--lost-budget-ms", str(lost_budget_ms)]
        command += ["--easy-pool", str(easy_pool), "--commit-batch", str(commit_batch)]
        command += ["--winnable-pool", "0"]
        if database_url:
            subprocess.run([*command, "--database-url", database_url, "--migrate"], check=True)
            command += ["--database-url", database_url]
        server = subprocess.Popen(command)
        try:
            await wait_for_port(port, time.monotonic() + 30)
            move = first_move()
            run = secrets.token_hex(4)  # names stay unique across runs on one database
            url = f"ws://127.0.0.1:{port}/"
            async with asyncio.timeout(TIMEOUT_S):
                # Everyone connects and starts a game first; then only actions are timed.
                joined = [Player.join(url, f"bench-{run}-{n}") for n in range(players)]
                clients = list(await asyncio.gather(*joined))
                started = time.perf_counter()
                results = await asyncio.gather(*(each.play(actions, move) for each in clients))
                elapsed = time.perf_counter() - started
                await asyncio.gather(*(each.ws.close() for each in clients))
        finally:
            server.terminate()
            server.wait(timeout=30)
    latencies = sorted(ms for session in results for ms in session)
    return {
        "store": "postgresql" if database_url else "sqlite",
        "commit_batch": commit_batch,
        "players": players,
        "actions": len(latencies),
        "actions_per_s": round(len(latencies) / elapsed),
        "median_ms": round(statistics.median(latencies), 1),
        "p99_ms": round(latencies[int(len(latencies) * 0.99) - 1], 1),
    }


def format_load(report: dict[str, Any]) -> str:
    return (
        f"{report['store']}, up to {report['commit_batch']} per commit: "
        f"{report['players']} players, {report['actions']:,} actions: "
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
    parser.add_argument("--commit-batch", type=int, default=64, help="1: a commit per action")
    args = parser.parse_args()
    report = asyncio.run(
        run_load(
            args.players,
            args.actions,
            args.database_url,
            args.lost_budget_ms,
            args.easy_pool,
            args.commit_batch,
        )
    )
    print(format_load(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
