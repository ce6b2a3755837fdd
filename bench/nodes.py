"""Several nodes on one PostgreSQL: throughput of 1 and of N server processes side by side.

Starts ``--nodes`` ``scorpion-server`` processes on one PostgreSQL database
(``--database-url``, default ``SCORPION_BENCH_DATABASE_URL``), spreads
``--players`` players over them in turn, and has each play ``--actions``
actions as ``bench.load`` does (a legal move and its undo, alternately, each
committed and acknowledged before the next). Then the same with one node and
the same players. The two alternate over ``--rounds`` rounds; medians.

Reported per run: actions per second, and the CPU time per action of the
server processes together, of PostgreSQL's processes (every process named
``postgres`` on this machine: run it where nothing else uses PostgreSQL) and
of the client process. Nothing is pinned: on a machine with fewer cores than
nodes + PostgreSQL + clients they share the cores, and the rate says how the
machine copes, not how the nodes would with a core each. The CPU per action
gives that estimate (``format_nodes``): with a core per node, N nodes serve at
most N / (server CPU per action per node) actions a second, and PostgreSQL at
most its cores / (its CPU per action).

    python -m bench.nodes [--nodes 3] [--players 100] [--actions 100] [--rounds 3]
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
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from bench.common import Parser, run_main
from bench.load import (
    TIMEOUT_S,
    Player,
    cpu_seconds,
    first_move,
    free_port,
    server_command,
    spawn,
    wait_for_port,
)

__all__ = ["format_nodes", "run_nodes"]

_OPTIONS: dict[str, Any] = {"lost_budget_ms": 0, "easy_pool": 0, "winnable_pool": 0}


def postgres_cpu() -> float:
    """CPU seconds so far of every process named ``postgres`` (gone ones not counted)."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:  # ended meanwhile
            continue
        name, _, rest = stat.partition("(")[2].rpartition(")")
        if name == "postgres":
            fields = rest.split()
            total += (int(fields[11]) + int(fields[12])) / tick
    return total


@contextmanager
def cluster(database_url: str, count: int) -> Iterator[tuple[list[str], list[int]]]:
    """``count`` server processes on ``database_url``: their URLs and process ids."""
    with tempfile.TemporaryDirectory() as data, ExitStack() as stack:
        ports = [free_port() for _ in range(count)]
        processes = []
        for n, port in enumerate(ports):
            command = server_command(port, data, database_url if n == 0 else None, _OPTIONS)
            if n:  # migrated by the first
                command += ["--database-url", database_url]
            process = spawn(command)
            stack.callback(_stop, process)
            processes.append(process)
        for port in ports:
            asyncio.run(wait_for_port(port, time.monotonic() + 30))
        yield [f"ws://127.0.0.1:{port}/" for port in ports], [p.pid for p in processes]


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


async def _play(urls: list[str], pids: list[int], players: int, actions: int) -> dict[str, Any]:
    move = first_move()
    run = secrets.token_hex(4)
    async with asyncio.timeout(TIMEOUT_S):
        joined = [Player.join(urls[n % len(urls)], f"nodes-{run}-{n}") for n in range(players)]
        clients = list(await asyncio.gather(*joined))
        servers = sum(sum(cpu_seconds(pid)) for pid in pids)
        database = postgres_cpu()
        own = time.process_time()
        started = time.perf_counter()
        await asyncio.gather(*(each.play(actions, move) for each in clients))
        elapsed = time.perf_counter() - started
        own = time.process_time() - own
        database = postgres_cpu() - database
        servers = sum(sum(cpu_seconds(pid)) for pid in pids) - servers
        await asyncio.gather(*(each.ws.close() for each in clients))
    total = players * actions
    return {
        "nodes": len(urls),
        "actions_per_s": total / elapsed,
        "server_us": servers / total * 1e6,
        "postgres_us": database / total * 1e6,
        "client_us": own / total * 1e6,
    }


def run_nodes(
    database_url: str, nodes: int, players: int, actions: int, rounds: int
) -> dict[int, dict[str, float]]:
    """Medians of ``rounds`` runs with 1 node and with ``nodes``, alternately."""
    runs: dict[int, list[dict[str, Any]]] = {1: [], nodes: []}
    for _ in range(rounds):
        for count in (1, nodes):
            with cluster(database_url, count) as (urls, pids):
                runs[count].append(asyncio.run(_play(urls, pids, players, actions)))
    return {
        count: {key: statistics.median(r[key] for r in each) for key in each[0]}
        for count, each in runs.items()
    }


def format_nodes(medians: dict[int, dict[str, float]], cores: int) -> list[str]:
    """The table, the ratio measured and the estimate with a core per node."""
    lines = [
        "| nodes | actions/s | server CPU per action (all nodes) | PostgreSQL CPU per action "
        "| client CPU per action |",
        "|---|---|---|---|---|",
    ]
    for count, m in sorted(medians.items()):
        lines.append(
            f"| {count} | {m['actions_per_s']:,.0f} | {m['server_us']:,.0f} us "
            f"| {m['postgres_us']:,.0f} us "
            f"| {m['client_us']:,.0f} us |"
        )
    one, many = medians[1], medians[max(medians)]
    count = max(medians)
    lines += [
        "",
        f"Measured: {count} nodes served {many['actions_per_s'] / one['actions_per_s']:.2f}x "
        f"the actions per second of one node, on {cores} cores shared by the nodes, "
        "PostgreSQL and the clients.",
    ]
    # With a core per node, each node spends (rate / count) * server_us of CPU a second
    # (its own actions, and hearing the others'): the rate is bounded by count / server_us.
    per_node = many["server_us"]
    nodes_bound = count * 1e6 / per_node
    one_bound = 1e6 / one["server_us"]
    lines.append(
        f"With a core per node (the model): one node at most {one_bound:,.0f} actions/s "
        f"({one['server_us']:,.0f} us of its CPU each), {count} nodes at most "
        f"{nodes_bound:,.0f} ({per_node:,.0f} us each), {nodes_bound / one_bound:.2f}x; "
        f"PostgreSQL at {many['postgres_us']:,.0f} us per action needs "
        f"{nodes_bound * many['postgres_us'] / 1e6:.2f} cores for that."
    )
    return lines


def _main(argv: Sequence[str] | None) -> int:
    parser = Parser(prog="python -m bench.nodes", description=__doc__)
    parser.add_argument("--nodes", type=int, default=3)
    parser.add_argument("--players", type=int, default=100)
    parser.add_argument("--actions", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--database-url", default=os.environ.get("SCORPION_BENCH_DATABASE_URL"))
    args = parser.parse_args(argv)
    if not args.database_url or not args.database_url.startswith("postgresql"):
        parser.error(
            "nodes share a PostgreSQL database: give --database-url postgresql+asyncpg://..."
        )
    if args.nodes < 2 or args.players < 1 or args.actions < 1 or args.rounds < 1:
        parser.error("--nodes at least 2; --players, --actions and --rounds at least 1")
    medians = run_nodes(args.database_url, args.nodes, args.players, args.actions, args.rounds)
    print("\n".join(format_nodes(medians, os.cpu_count() or 1)))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return run_main("python -m bench.nodes", _main, argv)


if __name__ == "__main__":
    sys.exit(main())
