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
                                 [--no-echo] [--returning PLAYERS] [--seeds 0]
                                 [LABEL=REVISION ...]

``--returning PLAYERS`` counts a returning player instead: ``bench.reconnect``'s
storm of PLAYERS players with unfinished games of 100 actions, from the first
connection to the last player playing (its handshake, ``hello``, ``open_game``:
the game's reads and replay, the reply), divided by the players. The count
does not depend on how many come back at once (7,309,958 per player with
100, 7,305,937 with 300, on SQLite).

With revisions (``bench.compare``'s ``LABEL=REVISION``) each is exported and
counted side by side; without, the server of this checkout. The echo is
counted once beside them, unless ``--no-echo``.

``--seeds`` (default ``0``) sets Python's hash seed for every server counted
(``PYTHONHASHSEED``): under a random seed the same code counts up to ~2% apart
from run to run, as where a string lands in a dict or set decides how long its
lookups probe. A fixed seed makes a run repeatable, but one seed's layout may
favour one revision; with several (``--seeds 1,2,3``) each is counted under
each, and the table gives the median and the range.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable, Coroutine, Iterator, Sequence
from pathlib import Path
from typing import Any

from bench.common import Parser, run_main
from bench.compare import export
from bench.load import run_load
from bench.reconnect import run_reconnect

__all__ = ["count", "table", "valgrind_missing"]

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


@contextlib.contextmanager
def _callgrind(seed: int) -> Iterator[tuple[list[str], Callable[[], int]]]:
    """The command to run a server under (with hash seed ``seed``), and a function
    giving what it counted."""
    with tempfile.TemporaryDirectory() as folder:
        output = Path(folder) / "callgrind.out"
        wrapper = [
            "env",
            f"PYTHONHASHSEED={seed}",
            "valgrind",
            "--tool=callgrind",
            "--instr-atstart=no",
            f"--callgrind-out-file={output}",
        ]
        # The dump asked for at the end of the timed part, then one at exit (of nothing).
        yield wrapper, lambda: sum(_total(path) for path in Path(folder).glob("callgrind.out*"))


async def count(
    players: int,
    actions: int,
    database_url: str | None,
    target: str = "server",
    source: str | None = None,
    seed: int = 0,
) -> dict[str, float]:
    """Instructions per action of one run: ``bench.load``'s report plus ``instructions``."""
    with _callgrind(seed) as (wrapper, total):
        report = await run_load(
            players,
            actions,
            database_url,
            target=target,
            source=source,
            wrapper=wrapper,
            timed=_counting,
        )
        return report | {"instructions": total() / report["actions"]}


async def count_returning(
    players: int,
    database_url: str | None,
    source: str | None = None,
    target: str = "server",
    seed: int = 0,
) -> dict[str, Any]:
    """Instructions per returning player: ``bench.reconnect``'s storm (games of 100
    actions) counted from the first connection to the last player playing; or, with
    ``target="echo"``, per client of the same storm against the echo server."""
    with _callgrind(seed) as (wrapper, total):
        report = await run_reconnect(
            players,
            100,
            database_url=database_url,
            source=source,
            wrapper=wrapper,
            timed=_counting,
            target=target,
        )
        if report["playing"] < players:
            raise RuntimeError(f"only {report['playing']} of {players} players were playing")
        return report | {"instructions": total() / players}


def _under_seeds(
    seeds: list[int], run: Callable[..., Coroutine[Any, Any, dict[str, Any]]]
) -> tuple[float, str, list[dict[str, Any]]]:
    """``run(seed=...)`` under each of ``seeds``: the median of its ``instructions``, the
    range they span ("" for one seed), and the reports."""
    reports = [asyncio.run(run(seed=seed)) for seed in seeds]
    figures = [float(report["instructions"]) for report in reports]
    spread = f" ({min(figures):,.0f} to {max(figures):,.0f})" if len(figures) > 1 else ""
    return statistics.median(figures), spread, reports


def table(
    loads: list[int],
    targets: list[tuple[str, str | None, str | None]],
    actions: int | None = None,
    echo: bool = True,
    seeds: list[int] | None = None,
) -> list[str]:
    """The markdown table: per load, the echo (unless not ``echo``), then each target
    (label, source tree or None for this checkout, database URL or None for SQLite),
    each counted under every hash seed of ``seeds`` (default: 0)."""
    seeds = seeds or [0]
    lines = [
        "| target | players | instructions per action | ratio to the echo |",
        "|---|---|---|---|",
    ]
    for players in loads:
        each_plays = actions or ACTIONS_AT.get(players, max(1, 3000 // players))
        ceiling = None
        if echo:
            ceiling, spread, _ = _under_seeds(
                seeds, functools.partial(count, players, each_plays, None, "echo")
            )
            lines.append(f"| echo | {players} | {ceiling:,.0f}{spread} | 1.0x |")
            print(lines[-1], flush=True)
        for label, source, database_url in targets:
            figure, spread, _ = _under_seeds(
                seeds, functools.partial(count, players, each_plays, database_url, source=source)
            )
            ratio = f"{figure / ceiling:.1f}x" if ceiling else "-"
            lines.append(f"| {label} | {players} | {figure:,.0f}{spread} | {ratio} |")
            print(lines[-1], flush=True)
    return lines


def returning_table(
    players: int,
    targets: list[tuple[str, str | None, str | None]],
    echo: bool = True,
    seeds: list[int] | None = None,
) -> list[str]:
    """The markdown table of instructions per returning player: the same storm against the
    echo first (unless not ``echo``), then per target, each under every seed of ``seeds``."""
    seeds = seeds or [0]
    lines = [
        "| target | returning players | instructions per player | ratio to the echo "
        "| tried again |",
        "|---|---|---|---|---|",
    ]
    ceiling = None
    if echo:
        ceiling, spread, _ = _under_seeds(
            seeds, functools.partial(count_returning, players, None, target="echo")
        )
        lines.append(f"| echo | {players} | {ceiling:,.0f}{spread} | 1.0x | 0 |")
        print(lines[-1], flush=True)
    for label, source, database_url in targets:
        figure, spread, reports = _under_seeds(
            seeds, functools.partial(count_returning, players, database_url, source)
        )
        retries = sum(report["retries"] for report in reports)
        ratio = f"{figure / ceiling:.1f}x" if ceiling else "-"
        lines.append(f"| {label} | {players} | {figure:,.0f}{spread} | {ratio} | {retries} |")
        print(lines[-1], flush=True)
    return lines


def _main(argv: Sequence[str] | None) -> int:
    parser = Parser(prog="python -m bench.instructions", description=__doc__)
    parser.add_argument("specs", nargs="*", help="LABEL=REVISION (default: this checkout)")
    parser.add_argument("--players", default="1,100", help="comma-separated, e.g. 1,100")
    parser.add_argument("--actions", type=int, default=None, help="per player")
    parser.add_argument("--database-url", default=None)
    parser.add_argument("--no-echo", action="store_true")
    parser.add_argument(
        "--seeds",
        default="0",
        help="comma-separated hash seeds each count runs under (default 0); the median is shown",
    )
    parser.add_argument(
        "--returning",
        type=int,
        default=None,
        metavar="PLAYERS",
        help="count instead a returning player (bench.reconnect, this many at once)",
    )
    args = parser.parse_args(argv)
    try:
        loads = [int(each) for each in args.players.split(",")]
    except ValueError:
        parser.error(f"--players: not a list of numbers: {args.players!r}")
    if any(each < 1 for each in loads) or (args.actions is not None and args.actions < 1):
        parser.error("players and actions must be at least 1")
    if args.returning is not None and args.returning < 1:
        parser.error("--returning must be at least 1")
    try:
        seeds = [int(each) for each in args.seeds.split(",")]
    except ValueError:
        parser.error(f"--seeds: not a list of numbers: {args.seeds!r}")
    if any(not 0 <= each <= 4294967295 for each in seeds):
        parser.error("--seeds: each from 0 to 4294967295 (PYTHONHASHSEED's range)")
    missing = valgrind_missing()
    if missing:
        print(f"bench.instructions: {missing}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as folder:
        targets: list[tuple[str, str | None, str | None]] = [
            (label, export(revision, Path(folder)), args.database_url)
            for label, _, revision in (spec.partition("=") for spec in args.specs)
        ] or [("server", None, args.database_url)]
        if args.returning is not None:
            returning_table(args.returning, targets, echo=not args.no_echo, seeds=seeds)
        else:
            table(loads, targets, args.actions, echo=not args.no_echo, seeds=seeds)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return run_main("python -m bench.instructions", _main, argv)


if __name__ == "__main__":
    sys.exit(main())
