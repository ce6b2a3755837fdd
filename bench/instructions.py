"""Instructions per action: the server's CPU work counted, not timed.

The machines these benchmarks run on are shared: the same code measures up to
2x apart in CPU time from one hour to the next. An instruction count does not
move with the machine. This runs ``bench.load`` with the server (or the echo,
``bench.echo``) under valgrind's callgrind, which counts the instructions the
process executes in user space, counting only while the timed part runs
(``--instr-atstart=no``, then ``callgrind_control -i on`` and ``off``), and
divides by the actions played. The same code and load give the same count
within a fraction of a percent, whatever else the machine does.

What it leaves out: the kernel's work (system calls, fsync, the network
stack), the database server's on PostgreSQL, and what an instruction costs
(cache misses, a core woken from idle): at one player in lock-step those are
most of the time ``bench.load`` measures, so the counts say where the
server's own work went, and ``bench.load`` how long it took.

Under callgrind the server runs about 50 times slower; the clients keep their
pace, so at 100 players the server is saturated and commits full batches, as
in ``bench.load``'s runs at that load.

    python -m bench.instructions [--players 1,100] [--actions 300] [--database-url URL]
                                 [--no-echo] [LABEL=REVISION ...]

With revisions (``bench.compare``'s ``LABEL=REVISION``) each is exported and
counted side by side; without, the server of this checkout. The echo is
counted once beside them, unless ``--no-echo``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

from bench.compare import export
from bench.load import run_load

__all__ = ["count", "valgrind_missing"]

ACTIONS_AT = {1: 300, 100: 30}
"""Timed actions per player by default: 300 in lock-step, 30 each of 100 (3,000)."""


def valgrind_missing() -> str | None:
    """Why the count cannot run here, or None."""
    for tool in ("valgrind", "callgrind_control"):
        if shutil.which(tool) is None:
            return f"{tool} not found (Debian's package valgrind)"
    return None


@contextlib.contextmanager
def _counting(pid: int) -> Iterator[None]:
    """callgrind counts in ``pid`` while the block runs, then writes what it counted."""
    _control("-i", "on", pid)
    try:
        yield
    finally:
        _control("-i", "off", pid)
        _control("-d", pid)


def _control(*args: str | int) -> None:
    subprocess.run(["callgrind_control", *map(str, args)], check=True, capture_output=True)


def _total(path: Path) -> int:
    """The instructions a callgrind output file counted (its ``totals:`` line)."""
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        if line.startswith("totals:"):
            return int(line.split()[1])
    return 0


async def count(
    players: int,
    actions: int,
    database_url: str | None,
    target: str = "server",
    source: str | None = None,
) -> dict[str, float]:
    """Instructions per action of one run: ``bench.load``'s report plus ``instructions``."""
    with tempfile.TemporaryDirectory() as folder:
        output = Path(folder) / "callgrind.out"
        wrapper = [
            "valgrind",
            "--tool=callgrind",
            "--instr-atstart=no",
            f"--callgrind-out-file={output}",
        ]
        report = await run_load(
            players,
            actions,
            database_url,
            target=target,
            source=source,
            wrapper=wrapper,
            timed=_counting,
        )
        # The dump asked for at the end of the timed part, then one at exit (of nothing).
        total = sum(_total(path) for path in Path(folder).glob("callgrind.out*"))
    return report | {"instructions": total / report["actions"]}


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.instructions", description=__doc__)
    parser.add_argument("specs", nargs="*", help="LABEL=REVISION (default: this checkout)")
    parser.add_argument("--players", default="1,100", help="comma-separated, e.g. 1,100")
    parser.add_argument("--actions", type=int, default=None, help="per player")
    parser.add_argument("--database-url", default=None)
    parser.add_argument("--no-echo", action="store_true")
    args = parser.parse_args()
    missing = valgrind_missing()
    if missing:
        print(f"bench.instructions: {missing}", file=sys.stderr)
        return 2
    try:
        loads = [int(each) for each in args.players.split(",")]
    except ValueError:
        parser.error(f"--players: not a list of numbers: {args.players!r}")
    if any(each < 1 for each in loads) or (args.actions is not None and args.actions < 1):
        parser.error("players and actions must be at least 1")
    print("| target | players | instructions per action | ratio to the echo |")
    print("|---|---|---|---|")
    with tempfile.TemporaryDirectory() as folder:
        targets: list[tuple[str, str | None]] = [
            (label, export(revision, Path(folder)))
            for label, _, revision in (spec.partition("=") for spec in args.specs)
        ] or [("server", None)]
        for players in loads:
            actions = args.actions or ACTIONS_AT.get(players, max(1, 3000 // players))
            echo = None
            if not args.no_echo:
                echo = asyncio.run(count(players, actions, None, "echo"))["instructions"]
                print(f"| echo | {players} | {echo:,.0f} | 1.0x |", flush=True)
            for label, source in targets:
                found = asyncio.run(count(players, actions, args.database_url, source=source))
                each = found["instructions"]
                ratio = f"{each / echo:.1f}x" if echo else "-"
                print(f"| {label} | {players} | {each:,.0f} | {ratio} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
