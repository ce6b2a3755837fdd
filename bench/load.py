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

``--target echo`` runs the same clients against the ceiling instead
(``bench.echo``: a bare ``websockets`` server answering each frame). Either
way the report gives the CPU time the server process spent in the timed
part per action (utime + stime from ``/proc/<pid>/stat``), so the two are
compared per operation, not only per second. When the machine has two cores
or more the server is pinned to core 0 and the clients to core 1
(``BENCH_PIN=0``: not pinned). ``SCORPION_BENCH_PYSPY=FILE`` attaches py-spy
to the server for the timed part and writes its samples there (collapsed
stacks, ``bench.profile`` sums them up).

    python -m bench.load [--players 50] [--actions 100] [--database-url URL]
                         [--lost-budget-ms 0] [--easy-pool 0] [--commit-batch 64]
                         [--target server|echo] [--loop auto|uvloop|asyncio] [--played 0]

``--played N`` has each player play N actions untimed first (a game N
actions long when the timed part starts).

The server's solver work is off by default: its lost-position check
(``--lost-budget-ms 0``) and its background search for easy deals
(``--easy-pool 0``), so the figure is that of the move path alone; give them
a budget or a target to load the solver workers too.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import os
import secrets
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import msgpack
from websockets.asyncio.client import ClientConnection, connect
from websockets.typing import Subprotocol

from bench.common import Parser, at_least, database_url, percentile, run_main
from engine.cards import card_str
from engine.game import Game
from engine.levels import get_level
from engine.moves import legal_moves
from protocol import SUBPROTOCOL, encode
from server.loop import LOOPS

__all__ = ["run_load"]

DEAL = 1
TIMEOUT_S = 120
# How the server is started; SCORPION_BENCH_PROFILE=FILE runs it under cProfile.
PYTHON = [sys.executable] + (
    ["-m", "cProfile", "-o", os.environ["SCORPION_BENCH_PROFILE"]]
    if os.environ.get("SCORPION_BENCH_PROFILE")
    else []
)


def first_move(deal: int = DEAL) -> tuple[str, int]:
    """A legal move from hard deal ``deal``'s starting position: (card, column)."""
    game = Game(get_level("hard"), deal)
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


def cpu_seconds(pid: int, thread: int | None = None) -> tuple[float, float]:
    """(utime, stime) of process ``pid`` so far, in seconds (``/proc/<pid>/stat``);
    of its thread ``thread`` only when given (``/proc/<pid>/task/<thread>/stat``)."""
    stat = Path(f"/proc/{pid}/stat" if thread is None else f"/proc/{pid}/task/{thread}/stat")
    fields = stat.read_text().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    return int(fields[11]) / tick, int(fields[12]) / tick


def pinned() -> bool:
    return (os.cpu_count() or 1) >= 2 and os.environ.get("BENCH_PIN", "1") != "0"


# Every benchmark client comes from 127.0.0.1, faster than any person plays: the
# server's per-connection and per-address limits (``server.limits``) are set
# far above the load, so they still run on every request but refuse nothing.
UNLIMITED: dict[str, Any] = {
    "max_connections": 1_000_000,
    "max_connections_per_address": 1_000_000,
    "rate_actions": "1000000,1000000",
    "rate_games": "1000000,1000000",
    "rate_hints": "1000000,1000000",
    "rate_reads": "1000000,1000000",
    "rate_registrations": "1000000,1000000",
    "rate_connections": "1000000,1000000",
}


def server_command(
    port: int,
    data: str,
    database_url: str | None,
    options: dict[str, Any],
    source: str | None = None,
) -> list[str]:
    """The full server's command line (solver work off unless ``options`` say otherwise).

    The limits are lifted (``UNLIMITED``) unless ``options`` set them.

    An option the server in ``source`` does not have (an older revision, for
    ``bench.compare``) is left out.
    """
    known = (Path(source or ".") / "server" / "config.py").read_text(encoding="utf-8")
    command = [*PYTHON, "-m", "server", "--port", str(port), "--data-dir", data]
    command += ["--log-level", "WARNING"]
    for name, value in (UNLIMITED | options).items():
        if f"    {name}:" in known:
            command += [f"--{name.replace('_', '-')}", str(value)]
    if database_url:
        migrate = [*command, "--database-url", database_url, "--migrate"]
        subprocess.run(migrate, check=True, cwd=source)
        command += ["--database-url", database_url]
    return command


PR_SET_PDEATHSIG = 1  # prctl(2)


def _ended_with_parent() -> None:
    """In a server's process, before it runs: Linux sends it SIGTERM when the benchmark's
    process ends, however it ends (``prctl(PR_SET_PDEATHSIG)``). A benchmark stopped by a
    signal runs no ``finally``, and left its server running, skewing the runs after it."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def spawn(command: list[str], cwd: str | None = None) -> subprocess.Popen[bytes]:
    """Start a server process for a benchmark: on Linux it ends when this process does."""
    ends_with_us = _ended_with_parent if sys.platform == "linux" else None
    return subprocess.Popen(command, cwd=cwd, preexec_fn=ends_with_us)


@contextlib.contextmanager
def started(command: list[str], cwd: str | None = None) -> Iterator[subprocess.Popen[bytes]]:
    """Run ``command`` (pinned to core 0 when ``pinned()``); terminate it at the end, or
    (on Linux) when this process ends first (``spawn``)."""
    process = spawn(command, cwd)
    try:
        if pinned():
            os.sched_setaffinity(process.pid, {0})
            os.sched_setaffinity(0, set(range(1, os.cpu_count() or 2)))
        yield process
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:  # still closing thousands of connections
            process.kill()
            process.wait()


@contextlib.contextmanager
def sampled(pid: int) -> Iterator[None]:
    """Attach py-spy to ``pid`` when SCORPION_BENCH_PYSPY names an output file."""
    output = os.environ.get("SCORPION_BENCH_PYSPY")
    if not output:
        yield
        return
    spy = Path(sys.executable).with_name("py-spy")
    command = [str(spy), "record", "--pid", str(pid), "--format", "raw", "--rate", "250"]
    recorder = subprocess.Popen([*command, "--nonblocking", "--output", output])
    time.sleep(1)  # let it attach
    try:
        yield
    finally:
        recorder.send_signal(signal.SIGINT)
        recorder.wait(timeout=60)


async def run_load(
    players: int,
    actions: int,
    database_url: str | None,
    lost_budget_ms: int = 0,
    easy_pool: int = 0,
    commit_batch: int = 64,
    target: str = "server",
    loop: str = "auto",
    played: int = 0,
    source: str | None = None,
    wrapper: list[str] | None = None,
    timed: Callable[[int], contextlib.AbstractContextManager[None]] | None = None,
) -> dict[str, Any]:
    """One run against the full server or, ``target="echo"``, the ceiling (module docstring).

    ``source``: run the server of that source tree instead (``bench.compare``).
    ``wrapper``: a command the server's runs under (``bench.instructions``: valgrind),
    and ``timed(pid)``: a context entered around the timed part instead of ``sampled``.
    """
    port = free_port()
    with tempfile.TemporaryDirectory() as data:
        if target == "echo":
            command = [sys.executable, "-m", "bench.echo", "--port", str(port), "--loop", loop]
        else:
            options: dict[str, Any] = {"lost_budget_ms": lost_budget_ms, "easy_pool": easy_pool}
            options |= {"commit_batch": commit_batch, "winnable_pool": 0}
            if loop != "auto":
                options["event_loop"] = loop
            if wrapper:
                # About 50 times slower under valgrind: 100 players registering at once
                # held SQLite's write lock past the default 5 s of one another's waits.
                options["db_timeout_ms"] = 100_000
            command = server_command(port, data, database_url, options, source)
        slow = 600 if wrapper else 30  # valgrind's start is slow
        with started([*(wrapper or []), *command], source) as server:
            await wait_for_port(port, time.monotonic() + slow)
            around = timed or sampled
            results, elapsed, cpu = await _drive(
                server.pid, port, players, actions, played, around, TIMEOUT_S * (slow // 30)
            )
    latencies = sorted(ms for session in results for ms in session)
    return {
        "target": target,
        "store": "none" if target == "echo" else _backend(database_url),
        "commit_batch": commit_batch,
        "players": players,
        "played": played,
        "actions": len(latencies),
        "actions_per_s": round(len(latencies) / elapsed),
        "cpu_us": round((cpu[0] + cpu[1]) / len(latencies) * 1e6, 1),
        "system_us": round(cpu[1] / len(latencies) * 1e6, 1),
        "loop_us": round(cpu[2] / len(latencies) * 1e6, 1),
        "median_ms": round(statistics.median(latencies), 2),
        "p99_ms": round(percentile(latencies, 0.99), 2),
    }


def _backend(database_url: str | None) -> str:
    return "postgresql" if database_url and database_url.startswith("postgres") else "sqlite"


async def _drive(
    pid: int,
    port: int,
    players: int,
    actions: int,
    played: int,
    around: Callable[[int], contextlib.AbstractContextManager[None]],
    timeout: float,
) -> tuple[list[list[float]], float, tuple[float, float, float]]:
    """Join ``players`` and play ``played`` actions each untimed, then time ``actions``
    more (inside ``around(pid)``): latencies, seconds, server CPU seconds (user, system,
    the main thread's)."""
    move = first_move()
    run = secrets.token_hex(4)  # names stay unique across runs on one database
    url = f"ws://127.0.0.1:{port}/"
    async with asyncio.timeout(timeout):
        # Everyone connects and starts a game first; then only actions are timed.
        joined = [Player.join(url, f"bench-{run}-{n}") for n in range(players)]
        clients = list(await asyncio.gather(*joined))
        await asyncio.gather(*(each.play(played, move) for each in clients))
        with around(pid):
            user, system = cpu_seconds(pid)
            main = sum(cpu_seconds(pid, pid))  # the main thread: the event loop's
            started = time.perf_counter()
            results = await asyncio.gather(*(each.play(actions, move) for each in clients))
            elapsed = time.perf_counter() - started
            user_after, system_after = cpu_seconds(pid)
            cpu = (user_after - user, system_after - system, sum(cpu_seconds(pid, pid)) - main)
        await asyncio.gather(*(each.ws.close() for each in clients))
    return list(results), elapsed, cpu


def format_load(report: dict[str, Any]) -> str:
    what = "echo" if report["target"] == "echo" else report["store"]
    if report["target"] != "echo":
        what += f", up to {report['commit_batch']} per commit"
    return (
        f"{what}: {report['players']} players, {report['actions']:,} actions: "
        f"{report['actions_per_s']:,} actions/s, {report['cpu_us']} us server CPU each "
        f"({report['system_us']} us in the kernel, {report['loop_us']} us on the main thread), "
        f"median {report['median_ms']} ms, p99 {report['p99_ms']} ms"
    )


def _main(argv: Sequence[str] | None) -> int:
    parser = Parser(prog="python -m bench.load", description=__doc__)
    parser.add_argument("--players", type=at_least(1), default=50)
    parser.add_argument("--actions", type=at_least(1), default=100)
    parser.add_argument(
        "--database-url",
        type=database_url,
        default=os.environ.get("SCORPION_BENCH_DATABASE_URL"),
    )
    parser.add_argument("--lost-budget-ms", type=at_least(0), default=0)
    parser.add_argument("--easy-pool", type=at_least(0), default=0)
    parser.add_argument(
        "--commit-batch", type=at_least(1), default=64, help="1: a commit per action"
    )
    parser.add_argument("--target", choices=("server", "echo"), default="server")
    parser.add_argument("--played", type=at_least(0), default=0, help="untimed actions first, each")
    parser.add_argument("--loop", choices=LOOPS, default="auto", help="the event loop")
    args = parser.parse_args(argv)
    report = asyncio.run(
        run_load(
            args.players,
            args.actions,
            args.database_url,
            args.lost_budget_ms,
            args.easy_pool,
            args.commit_batch,
            args.target,
            args.loop,
            args.played,
        )
    )
    print(format_load(report))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return run_main("python -m bench.load", _main, argv)


if __name__ == "__main__":
    sys.exit(main())
