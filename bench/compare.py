"""The same load on several revisions of the server, side by side: each optimisation's effect.

Each argument is ``LABEL=REVISION`` or ``LABEL=REVISION:LOOP`` (LOOP: ``asyncio``
or ``uvloop``, for revisions that have ``--event-loop``). Each revision's
source is exported (``git archive``) into a temporary directory and its
server started from there, with this checkout's clients; the revisions run
in rotating order for ``--rounds`` rounds at 100 players and at one, on
SQLite (or ``--database-url``), and the medians are printed as a table.

    python -m bench.compare base=main fork=HEAD~2 writer=HEAD:asyncio uvloop=HEAD:uvloop

With ``--returning PLAYERS`` the rounds are ``bench.reconnect``'s storms instead
(PLAYERS players with unfinished games of 100 actions coming back at once), and
the table gives the medians of the time until all play and of the server's
CPU time per player.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import io
import statistics
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from bench.common import BenchError, Parser, at_least, database_url, run_main
from bench.load import format_load, run_load
from bench.reconnect import format_reconnect, run_reconnect

__all__ = ["compare"]


def export(revision: str, into: Path) -> str:
    """The source tree of ``revision`` under ``into``; its path."""
    if not revision:
        raise BenchError("no revision given: each is LABEL=REVISION")
    archive = subprocess.run(["git", "archive", revision], capture_output=True)
    if archive.returncode:  # git's own words are several lines: one of ours instead
        raise BenchError(f"no such revision: {revision!r} (git archive cannot export it)")
    folder = into / revision.replace("/", "_").replace("~", "_").replace("^", "_")
    if not folder.exists():
        with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
            tar.extractall(folder, filter="data")
    return str(folder)


@contextlib.contextmanager
def _exported(specs: list[str]) -> Iterator[dict[str, dict[str, Any]]]:
    """Per label, its revision's exported source and its event loop (removed after)."""
    with tempfile.TemporaryDirectory() as folder:
        runs: dict[str, dict[str, Any]] = {}
        for spec in specs:
            label, _, target = spec.partition("=")
            revision, _, loop = target.partition(":")
            runs[label] = {"source": export(revision, Path(folder)), "loop": loop or "auto"}
        yield runs


def _side_by_side(
    runs: dict[str, dict[str, Any]],
    rounds: int,
    run: Callable[[dict[str, Any]], dict[str, Any]],
    describe: Callable[[dict[str, Any]], str],
) -> dict[str, list[dict[str, Any]]]:
    """Per label, the reports of ``run`` on its settings, ``rounds`` times: the labels
    round after round, each round starting one further on."""
    reports: dict[str, list[dict[str, Any]]] = {label: [] for label in runs}
    labels = list(runs)
    for round_ in range(rounds):
        shift = round_ % len(labels)
        for label in labels[shift:] + labels[:shift]:
            report = run(runs[label])
            print(f"{label}: {describe(report)}", file=sys.stderr)
            reports[label].append(report)
    return reports


def compare(
    specs: list[str], rounds: int, database_url: str | None, configs: list[tuple[int, int]]
) -> list[str]:
    rows = []
    with _exported(specs) as runs:
        for players, actions in configs:
            load = functools.partial(_load, players, actions, database_url)
            for label, each in _side_by_side(runs, rounds, load, format_load).items():
                med = {k: statistics.median(r[k] for r in each) for k in each[0] if k in _FIGURES}
                rows.append(
                    f"| {label} | {players} | {med['actions_per_s']:,.0f} "
                    f"| {med['cpu_us']:,.0f} us | {med['median_ms']:.2f} / {med['p99_ms']:.2f} ms |"
                )
    header = "| change | players | actions/s | server CPU per action | p50 / p99 |"
    return [header, "|---|---|---|---|---|", *rows]


_FIGURES = ("actions_per_s", "cpu_us", "median_ms", "p99_ms")


def _load(
    players: int, actions: int, database_url: str | None, settings: dict[str, Any]
) -> dict[str, Any]:
    return asyncio.run(run_load(players, actions, database_url, **settings))


def compare_returning(
    specs: list[str], rounds: int, database_url: str | None, players: int
) -> list[str]:
    """``bench.reconnect``'s storm of ``players`` on each revision, side by side."""
    rows = []
    with _exported(specs) as runs:
        storm = functools.partial(_storm, players, database_url)
        for label, each in _side_by_side(runs, rounds, storm, format_reconnect).items():
            playing = statistics.median(r["all_playing_s"] for r in each)
            cpu = statistics.median(r["cpu_us"] for r in each)
            rows.append(f"| {label} | {players:,} | {playing:.2f} s | {cpu:,.0f} us |")
    header = "| change | returning players | all playing after | server CPU per player |"
    return [header, "|---|---|---|---|", *rows]


def _storm(players: int, database_url: str | None, settings: dict[str, Any]) -> dict[str, Any]:
    report = asyncio.run(
        run_reconnect(players, 100, database_url=database_url, source=settings["source"])
    )
    if report["all_playing_s"] is None:
        raise RuntimeError(f"not every player was playing: {format_reconnect(report)}")
    return report


def _main(argv: Sequence[str] | None) -> int:
    parser = Parser(prog="python -m bench.compare", description=__doc__)
    parser.add_argument("specs", nargs="+", help="LABEL=REVISION[:LOOP]")
    parser.add_argument("--rounds", type=at_least(1), default=3)
    parser.add_argument("--database-url", type=database_url, default=None)
    parser.add_argument("--players", type=at_least(1), default=100)
    parser.add_argument("--actions", type=at_least(1), default=100)
    parser.add_argument("--solo-actions", type=at_least(1), default=1000)
    parser.add_argument("--returning", type=at_least(1), default=None, metavar="PLAYERS")
    args = parser.parse_args(argv)
    if args.returning is not None:
        table = compare_returning(args.specs, args.rounds, args.database_url, args.returning)
    else:
        configs = [(args.players, args.actions), (1, args.solo_actions)]
        table = compare(args.specs, args.rounds, args.database_url, configs)
    print("\n".join(table))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return run_main("python -m bench.compare", _main, argv)


if __name__ == "__main__":
    sys.exit(main())
