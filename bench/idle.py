"""Idle connections: the server's memory per 1,000 open, quiet connections.

Starts the full server (SQLite, solver work off) and, side by side, the bare
``websockets`` server (``bench.echo``), opens ``connections`` WebSocket
connections to each from this process, says ``hello`` on each (the full
server then holds a session for it), and reads the server process's
resident memory (``VmRSS`` in ``/proc/<pid>/status``) before and after. The
figure is the growth per 1,000 connections; their ratio says what the
server keeps per connection beyond what the library does.

    python -m bench.idle [--connections 2000]
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgpack
from websockets.asyncio.client import ClientConnection, connect
from websockets.typing import Subprotocol

from bench.common import Parser, at_least, run_main
from bench.load import free_port, server_command, started, wait_for_port
from protocol import SUBPROTOCOL, encode

__all__ = ["run_idle"]

BATCH = 200  # connections opened at once


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for process {pid}")


async def _open(url: str) -> ClientConnection:
    ws = await connect(
        url, subprotocols=[Subprotocol(SUBPROTOCOL)], compression=None, open_timeout=60
    )
    await ws.send(
        encode({"type": "hello", "id": 1, "protocol": 1, "client": "idle", "locale": "en"})
    )
    reply = msgpack.unpackb(await ws.recv())
    if reply.get("type") == "error":  # (the echo answers an ack-sized frame)
        raise RuntimeError(f"hello was refused: {reply}")
    return ws


async def _hold(pid: int, port: int, connections: int) -> tuple[float, float]:
    """Open ``connections``; the server's RSS before and after, in MiB."""
    url = f"ws://127.0.0.1:{port}/"
    held = [await _open(url)]  # one first, so lazily built state is there before "before"
    await asyncio.sleep(0.5)
    before = rss_mib(pid)
    connections += 1
    while len(held) < connections:
        count = min(BATCH, connections - len(held))
        held += await asyncio.gather(*(_open(url) for _ in range(count)))
    await asyncio.sleep(1)
    after = rss_mib(pid)
    await asyncio.gather(*(ws.close() for ws in held))
    return before, after


async def run_idle(target: str, connections: int) -> dict[str, Any]:
    port = free_port()
    with tempfile.TemporaryDirectory() as data:
        if target == "echo":
            command = [sys.executable, "-m", "bench.echo", "--port", str(port)]
        else:
            command = server_command(port, data, None, {"lost_budget_ms": 0, "easy_pool": 0})
        with started(command) as server:
            await wait_for_port(port, time.monotonic() + 30)
            before, after = await _hold(server.pid, port, connections)
    return {
        "target": target,
        "connections": connections,
        "before_mib": round(before, 1),
        "after_mib": round(after, 1),
        "mib_per_1000": round((after - before) / connections * 1000, 2),
    }


def format_idle(report: dict[str, Any]) -> str:
    return (
        f"{report['target']}: {report['connections']:,} idle connections: "
        f"{report['before_mib']} -> {report['after_mib']} MiB, "
        f"{report['mib_per_1000']} MiB per 1,000"
    )


def _main(argv: Sequence[str] | None) -> int:
    parser = Parser(prog="python -m bench.idle", description=__doc__)
    parser.add_argument("--connections", type=at_least(1), default=2000)
    args = parser.parse_args(argv)
    for target in ("echo", "server"):
        print(format_idle(asyncio.run(run_idle(target, args.connections))))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return run_main("python -m bench.idle", _main, argv)


if __name__ == "__main__":
    sys.exit(main())
