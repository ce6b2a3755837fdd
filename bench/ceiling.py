"""``make bench``'s server figures, each beside the ceiling measured in the same run.

- ``load_section``: for 100 players and for one player in lock-step, on each
  store, ``LOAD_ROUNDS`` rounds of the echo (``bench.echo``) and the full
  server alternately (``bench.load``); the medians, their ratio in actions per
  second and in CPU time per operation.
- ``growth_section``: one player's action in a fresh game against one in a
  game ``LONG_GAME`` actions long, alternately.
- ``idle_section``: memory per 1,000 idle connections, server and bare
  ``websockets`` server (``bench.idle``).
- ``write_profile``: docs/profile.md, py-spy's samples of the server at 100
  players and at one (``bench.profile``), when py-spy is installed.

The machine is shared: figures are medians of alternating rounds, and the load
average before and after is printed with them.
"""

from __future__ import annotations

import asyncio
import datetime
import os
import resource
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.idle import format_idle, run_idle
from bench.load import format_load, pinned, run_load
from bench.profile import format_profile, read_profile

__all__ = ["growth_section", "idle_section", "load_section", "write_profile"]

LOAD_ROUNDS = 3
SOLO_ACTIONS = 2000  # one player in lock-step: enough actions for a second of CPU
LONG_GAME = 5000
PROFILE_PAGE = Path(__file__).resolve().parents[1] / "docs" / "profile.md"


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")


def _load() -> str:
    return ", ".join(f"{x:.2f}" for x in os.getloadavg())


def _median_report(reports: list[dict[str, Any]]) -> dict[str, Any]:
    """Each figure's median over the rounds (the rounds' range of actions/s beside it)."""
    figures = ("actions_per_s", "cpu_us", "system_us", "median_ms", "p99_ms")
    median = dict(reports[0]) | {key: statistics.median(r[key] for r in reports) for key in figures}
    rates = [r["actions_per_s"] for r in reports]
    median["range"] = (min(rates), max(rates))
    return median


def _alternate(runs: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Each named ``run_load`` keyword set for LOAD_ROUNDS rounds, order rotating: medians."""
    reports: dict[str, list[dict[str, Any]]] = {name: [] for name in runs}
    names = list(runs)
    for round_ in range(LOAD_ROUNDS):
        for name in names[round_ % len(names) :] + names[: round_ % len(names)]:
            report = asyncio.run(run_load(**runs[name]))
            print(f"{name}: {format_load(report)}", file=sys.stderr)
            reports[name].append(report)
    return {name: _median_report(each) for name, each in reports.items()}


def _load_row(echo: dict[str, Any], server: dict[str, Any]) -> str:
    ratio = server["actions_per_s"] / echo["actions_per_s"]
    cpu_ratio = server["cpu_us"] / echo["cpu_us"]
    low, high = server["range"]
    return (
        f"| {server['players']} | {server['store']} | {server['actions_per_s']:,.0f} "
        f"({low:,}..{high:,}) | {echo['actions_per_s']:,.0f} | {ratio:.2f} "
        f"| {server['cpu_us']:,.0f} us ({server['system_us']:,.0f} kernel) "
        f"| {echo['cpu_us']:,.1f} us | {cpu_ratio:.1f}x "
        f"| {server['median_ms']:.2f} / {server['p99_ms']:.2f} ms "
        f"| {echo['median_ms']:.2f} / {echo['p99_ms']:.2f} ms |"
    )


def load_section(
    players: int, actions: int, database_url: str | None, machine: str, marks: tuple[str, str]
) -> str:
    before = _load()
    rows = []
    for url in [None, database_url] if database_url else [None]:
        for count, each in ((players, actions), (1, SOLO_ACTIONS)):
            common = {"players": count, "actions": each, "database_url": url}
            medians = _alternate(
                {"echo": common | {"target": "echo"}, "server": common | {"target": "server"}}
            )
            rows.append(_load_row(medians["echo"], medians["server"]))
    pin = "server on core 0, clients on core 1" if pinned() else "not pinned"
    return "\n".join(
        [
            marks[0],
            f"Measured {_now()} on {machine} with `make bench` (load average {before}",
            f"before, {_load()} after; {pin}), which runs, for each row, {LOAD_ROUNDS} rounds of",
            "`python -m bench.load --target echo --players P --actions A` and",
            "`python -m bench.load --players P --actions A` alternately (A = "
            f"{actions} for {players} players, {SOLO_ACTIONS} for 1), medians:",
            "",
            "| players | store | server actions/s (range) | echo round trips/s | ratio "
            "| server CPU per action | echo CPU per round trip | CPU ratio "
            "| server p50 / p99 | echo p50 / p99 |",
            "|---|---|---|---|---|---|---|---|---|---|",
            *rows,
            marks[1],
        ]
    )


def growth_section(machine: str, marks: tuple[str, str]) -> str:
    before = _load()
    common: dict[str, Any] = {"players": 1, "actions": SOLO_ACTIONS, "database_url": None}
    medians = _alternate({"fresh": common, "long": common | {"played": LONG_GAME}})
    fresh, long = medians["fresh"], medians["long"]
    rows = [
        f"| {name} | {r['actions_per_s']:,.0f} | {r['cpu_us']:,.0f} us "
        f"| {r['median_ms']:.2f} / {r['p99_ms']:.2f} ms |"
        for name, r in (
            ("fresh game (0 actions before)", fresh),
            (f"{LONG_GAME:,} actions before", long),
        )
    ]
    return "\n".join(
        [
            marks[0],
            f"Measured {_now()} on {machine} with `make bench` (load average {before} before,",
            f"{_load()} after), which runs {LOAD_ROUNDS} rounds of `python -m bench.load",
            f"--players 1 --actions {SOLO_ACTIONS}` with `--played 0` and `--played {LONG_GAME}`",
            "alternately (SQLite), medians:",
            "",
            "| game | actions/s | server CPU per action | p50 / p99 |",
            "|---|---|---|---|",
            *rows,
            "",
            f"CPU per action in the long game: {long['cpu_us'] / fresh['cpu_us']:.2f}x"
            " the fresh one's.",
            marks[1],
        ]
    )


def idle_section(connections: int, machine: str, marks: tuple[str, str]) -> str:
    before = _load()
    echo = asyncio.run(run_idle("echo", connections))
    server = asyncio.run(run_idle("server", connections))
    ratio = server["mib_per_1000"] / echo["mib_per_1000"]
    return "\n".join(
        [
            marks[0],
            f"Measured {_now()} on {machine} with `make bench` (load average {before}), which runs",
            f"`python -m bench.idle --connections {connections}` (descriptor limit here: "
            f"{_nofile()}):",
            "",
            "```",
            format_idle(echo),
            format_idle(server),
            f"server: {ratio:.2f}x the bare websockets server's memory per 1,000 connections",
            "```",
            marks[1],
        ]
    )


def _nofile() -> str:
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    return f"{soft:,}"


def write_profile(players: int, actions: int, machine: str) -> None:
    """docs/profile.md: where the server's time goes at ``players`` and at one player."""
    spy = Path(sys.executable).with_name("py-spy")
    if not spy.exists():
        print(
            "profile skipped: py-spy is not installed (pip install -e '.[bench]')", file=sys.stderr
        )
        return
    sections = []
    for count, each in ((players, actions * 2), (1, SOLO_ACTIONS)):
        with tempfile.TemporaryDirectory() as folder:
            output = Path(folder) / "samples.txt"
            os.environ["SCORPION_BENCH_PYSPY"] = str(output)
            try:
                report = asyncio.run(run_load(count, each, None, loop="asyncio"))
            finally:
                del os.environ["SCORPION_BENCH_PYSPY"]
            profile = read_profile(output.read_text())
        sections += [
            f"## {count} player{'s' if count > 1 else ''}, SQLite",
            "",
            f"`{format_load(report)}` (sampled, so slower than unsampled runs)",
            "",
            *format_profile(profile),
            "",
        ]
    page = [
        "# Where the server's time goes",
        "",
        f"Generated {_now()} on {machine} (load average {_load()}) by `make bench`",
        "(`bench.ceiling.write_profile`): py-spy samples the server process 250 times a",
        "second during the timed part of `python -m bench.load` (`SCORPION_BENCH_PYSPY=FILE`),",
        "and `python -m bench.profile FILE` sums the samples of the event loop's thread up.",
        "The server runs on asyncio's own loop here (`--event-loop asyncio`): uvloop's loop",
        "is C code that py-spy sees as one frame, idle or not.",
        "Inclusive: the function and everything it called; own: the function's own code.",
        "Shares are of the loop's busy samples (idle time in `select` left out). Small",
        "functions that allocate may carry the garbage collector's time.",
        "",
        *sections,
    ]
    PROFILE_PAGE.write_text("\n".join(page), encoding="utf-8")
    print(f"written to {PROFILE_PAGE}", file=sys.stderr)
