"""``make bench``: run every benchmark and write the results into docs/benchmarks.md.

The sections between the ``<!-- engine-bench -->`` and ``<!-- solver-bench -->``
markers are replaced with this run's figures, the command that produced them
and the machine they came from; the rest of the page (how to read the numbers)
is left as written.

Environment: ``BENCH_SECONDS`` (engine, per figure, default 5; 0 skips), ``BENCH_DEALS``
(solver, default ``1..1000``), ``BENCH_BUDGET_MS`` (solver, default 2000),
``BENCH_LEVELS`` (solver, comma-separated, default every level; ``none`` skips),
``BENCH_DEALS_<LEVEL>`` (solver, one level's range, e.g. ``BENCH_DEALS_RELAXED=1..200``;
the pure-Python search is compared with the compiled one on deals 1..200),
``BENCH_PLAYERS`` / ``BENCH_ACTIONS`` (server load against the echo ceiling,
game length, idle connections and the py-spy profile in docs/profile.md,
``bench.ceiling``; default 100 / 100; 0 players skips),
``BENCH_INSTRUCTIONS`` (the instructions per action and per returning player,
``bench.instructions``, which needs valgrind; 0 skips), ``BENCH_IDLE`` (idle
connections, default 2000), ``BENCH_HINT_EASY`` / ``BENCH_HINT_GAMES`` (the hint
player: easy deals, and solver-won deals per other level, default 200 / 100; 0 easy
skips), ``BENCH_STORED`` (stored games beside few, ``bench.stored``, default
1000000; 0 skips), ``BENCH_RECONNECT`` (players reconnecting at once after a
restart, ``bench.reconnect``, default 2000, after the same storm against the
echo ceiling; each store with the games' snapshots, then without, as after a
crash; 0 skips; on PostgreSQL as well when ``SCORPION_BENCH_DATABASE_URL``
is set),
``SCORPION_BENCH_DATABASE_URL`` (also load-test on that PostgreSQL
database, measure how fast an action reaches a device on another node,
``bench.delivery``, ``BENCH_DELIVERY=0`` skips, and one node against
``BENCH_NODES`` nodes, default 3, 0 skips, ``bench.nodes``; it must be empty or
hold only earlier benchmark data).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import os
import platform
import re
import sys
from collections.abc import Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from bench.ceiling import growth_section, idle_section, load_section, write_profile
from bench.common import Parser, SettingError, deal_range, env_float, env_int, run_main
from bench.delivery import format_delivery, run_delivery
from bench.hints import format_hints, run_hints
from bench.instructions import returning_table, table, valgrind_missing
from bench.nodes import format_nodes, run_nodes
from bench.reconnect import format_reconnect, run_reconnect
from bench.stored import run_stored
from engine.benchmark import format_report, run_benchmark
from engine.levels import LEVEL_NAMES, get_level
from engine.solver.bench import solve_bench

PAGE = Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md"
START, END = "<!-- engine-bench -->", "<!-- /engine-bench -->"
SOLVER_START, SOLVER_END = "<!-- solver-bench -->", "<!-- /solver-bench -->"
LOAD_START, LOAD_END = "<!-- load-bench -->", "<!-- /load-bench -->"
GROWTH_START, GROWTH_END = "<!-- growth-bench -->", "<!-- /growth-bench -->"
IDLE_START, IDLE_END = "<!-- idle-bench -->", "<!-- /idle-bench -->"
DELIVERY_START, DELIVERY_END = "<!-- delivery-bench -->", "<!-- /delivery-bench -->"
HINT_START, HINT_END = "<!-- hint-bench -->", "<!-- /hint-bench -->"
STORED_START, STORED_END = "<!-- stored-bench -->", "<!-- /stored-bench -->"
RECONNECT_START, RECONNECT_END = "<!-- reconnect-bench -->", "<!-- /reconnect-bench -->"
NODES_START, NODES_END = "<!-- nodes-bench -->", "<!-- /nodes-bench -->"
COUNT_START, COUNT_END = "<!-- instructions-bench -->", "<!-- /instructions-bench -->"
RETURNING_COUNTED = 100  # returning players counted at once (the count per player does not vary)
# Published won shares on random deals (lower bounds from bounded searches).
PUBLISHED = {
    "hard": "12.8% (bounded search, 1,000 deals); about 9-10% (hobby solver, book estimate)",
    "classic": "as hard (same rules)",
    "medium": "77.9% (bounded search, Wasp rules, 1,000 deals)",
    "easy": "as medium (same rules)",
}


def machine() -> str:
    return (
        f"{platform.python_implementation()} {platform.python_version()}, "
        f"{platform.machine()}, {os.cpu_count()} cores, {platform.system()}"
    )


def engine_section(seconds: float) -> str:
    report = run_benchmark(seconds=seconds)
    when = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    return "\n".join(
        [
            START,
            f"Measured {when} on {machine()} with `make bench`",
            f"(`python -m bench.run`, which calls `scorpion-engine bench --seconds {seconds:g}`):",
            "",
            "```",
            format_report(report),
            "```",
            "",
            "| figure | median | goal | ratio to goal |",
            "|---|---|---|---|",
            f"| unchecked apply+undo pairs/s | {report['unchecked_pairs_per_s']:,} | 300,000 "
            f"| {report['unchecked_pairs_per_s'] / 300_000:.1f}x |",
            f"| checked actions/s | {report['checked_actions_per_s']:,} | 50,000 "
            f"| {report['checked_actions_per_s'] / 50_000:.1f}x |",
            END,
        ]
    )


def _bench_level(
    level: str, deals: str, budget_ms: float, native: bool | None = None
) -> dict[str, Any]:
    return solve_bench(get_level(level), deal_range(deals), budget_ms, native)


def _deals_name(level: str) -> str:
    return "BENCH_DEALS_" + level.replace("-", "_").upper()


def _deals_for(level: str, default: str) -> str:
    """``BENCH_DEALS_<LEVEL>`` (e.g. BENCH_DEALS_RELAXED=1..200) overrides the range."""
    return os.environ.get(_deals_name(level), default)


def solver_section(deals: str, budget_ms: float, levels: list[str]) -> str:
    when = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    ranges = [_deals_for(level, deals) for level in levels]
    lines = [
        SOLVER_START,
        f"Measured {when} on {machine()} with `make bench`, which runs",
        f"`scorpion-engine solve-bench --level L --deals A..B --budget-ms {budget_ms:g}`",
        "for each level (levels side by side, one process and one core each; the",
        "compiled search, `engine/solver/native.c`):",
        "",
        "| level | deals | won | lost | unknown | decided | won share | median | p95 | max "
        "| positions/s | published won share |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    load_before = os.getloadavg()[0]
    with ProcessPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        reports = list(pool.map(_bench_level, levels, ranges, [budget_ms] * len(levels)))
    load_after = os.getloadavg()[0]
    for level, r in zip(levels, reports, strict=True):
        print(f"{level}: {r}", file=sys.stderr)
        lines.append(
            f"| {level} | {r['deals']} | {r['won']} | {r['lost']} | {r['unknown']} "
            f"| {r['decided_pct']}% | {r['won_pct']}% | {r['median_ms']:g} ms | {r['p95_ms']} ms "
            f"| {r['max_ms']} ms | {r['nodes_per_s']:,} | {PUBLISHED.get(level, 'none found')} |"
        )
    lines += [
        "",
        f"Load average (1 minute) when the levels started: {load_before:.1f}, when they "
        f"ended: {load_after:.1f}, on {os.cpu_count()} cores (a shared machine: a load above",
        "the core count means the levels had less than a core each and the times are longer).",
        "Undecided deals: "
        + "; ".join(f"{r['level']} {_listed(r['unknown_deals'])}" for r in reports)
        + ".",
        "",
        *search_comparison(COMPARED_DEALS, budget_ms),
        SOLVER_END,
    ]
    return "\n".join(lines)


def _listed(numbers: list[int], most: int = 30) -> str:
    if not numbers:
        return "none"
    shown = ", ".join(map(str, numbers[:most]))
    return shown + (f" and {len(numbers) - most} more" if len(numbers) > most else "")


COMPARED_LEVELS = ("hard", "medium", "three-blind-mice")
COMPARED_DEALS = "1..200"


def search_comparison(deals: str, budget_ms: float) -> list[str]:
    """The pure-Python search against the compiled one: the same deals, both at once."""
    lines = [
        f"The same search in pure Python and compiled, on deals {deals} at {budget_ms:g} ms",
        "each, the two running at the same time (one process and one core each;",
        "`SCORPION_PURE_PYTHON=1` selects pure Python):",
        "",
        "| level | pure Python: decided | positions/s | compiled: decided | positions/s "
        "| speed ratio |",
        "|---|---|---|---|---|---|",
    ]
    for level in COMPARED_LEVELS:
        with ProcessPoolExecutor(max_workers=2) as pool:
            python, native = pool.map(
                _bench_level, [level] * 2, [deals] * 2, [budget_ms] * 2, [False, True]
            )
        print(f"{level}: {python}\n{level}: {native}", file=sys.stderr)
        ratio = native["nodes_per_s"] / max(python["nodes_per_s"], 1)
        lines.append(
            f"| {level} | {python['decided_pct']}% | {python['nodes_per_s']:,} "
            f"| {native['decided_pct']}% | {native['nodes_per_s']:,} | {ratio:.1f}x |"
        )
    return lines


def delivery_section(database_url: str, actions: int = 300) -> str:
    when = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    report = asyncio.run(run_delivery(database_url, actions))
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    lines = [
        DELIVERY_START,
        f"Measured {when} on {machine()} (load average {load} at the end) with `make bench`,",
        f"which runs `python -m bench.delivery --actions {actions}`: two server processes on",
        "one PostgreSQL database, one player acting on node 1 (a move or an undo every 20 ms,",
        "in lock-step), a second device watching on node 1 and a third on node 2:",
        "",
        *format_delivery(report),
        DELIVERY_END,
    ]
    return "\n".join(lines)


def nodes_section(database_url: str, nodes: int, players: int = 100, actions: int = 100) -> str:
    when = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    before = _load()
    medians = run_nodes(database_url, nodes, players, actions, rounds=3)
    lines = [
        NODES_START,
        f"Measured {when} on {machine()} with `make bench` (load average {before} before,",
        f"{_load()} after), which runs `python -m bench.nodes --nodes {nodes} --players {players}",
        f"--actions {actions}`: 1 node and {nodes} nodes on one PostgreSQL database, 3 rounds",
        "alternately, medians; nothing pinned:",
        "",
        *format_nodes(medians, os.cpu_count() or 1),
        NODES_END,
    ]
    return "\n".join(lines)


def _load() -> str:
    return ", ".join(f"{x:.2f}" for x in os.getloadavg())


def stored_section(many: int, few: int = 100, actions: int = 2000) -> str:
    when = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    before = _load()
    lines = asyncio.run(run_stored(many, few, 5, 3, 1, actions))
    return "\n".join(
        [
            STORED_START,
            f"Measured {when} on {machine()} with `make bench` (load average {before} before,",
            f"{_load()} after), which runs `python -m bench.stored --many {many} --few {few}",
            f"--players 1 --actions {actions}`: SQLite files holding {many:,} and {few:,} stored",
            "games (5 actions each, one in ten unfinished), 3 rounds of `bench.load` on each",
            "alternately, medians:",
            "",
            *lines,
            STORED_END,
        ]
    )


CRASH_LOG = 149
"""The unfinished games' length in ``make bench``'s storm after a crash: the snapshot of
the 100th action, and 49 actions logged after it, the most there are after a crash
(``service.SNAPSHOT_EVERY``)."""


def reconnect_section(players: int, database_url: str | None = None) -> str:
    when = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    before = _load()
    reports = [asyncio.run(run_reconnect(players, 100, target="echo"))]
    # After a restart; and the worst a crash leaves: 99 actions after the last snapshot.
    storms = [(100, False), (CRASH_LOG, True)]
    for log, crash in storms:
        reports.append(asyncio.run(run_reconnect(players, log, crash=crash)))
    stores = f"SQLite, as after a restart and with `--crash --log {CRASH_LOG}`"
    if database_url:
        for log, crash in storms:
            storm = run_reconnect(players, log, database_url=database_url, crash=crash)
            reports.append(asyncio.run(storm))
        stores = f"{stores}; then PostgreSQL with `--database-url`, the same two ways"
    return "\n".join(
        [
            RECONNECT_START,
            f"Measured {when} on {machine()} with `make bench` (load average {before} before,",
            f"{_load()} after), which runs `python -m bench.reconnect --players {players}`",
            f"with `--target echo` (the ceiling), then the server ({stores}; the clients on",
            "one core, the server on the other):",
            "",
            "```",
            *(format_reconnect(report) for report in reports),
            "```",
            RECONNECT_END,
        ]
    )


def instructions_section(database_url: str | None) -> str:
    """Instructions per action (``bench.instructions``), or why they were not counted."""
    when = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    missing = valgrind_missing()
    if missing:
        return "\n".join([COUNT_START, f"Not counted {when} on {machine()}: {missing}.", COUNT_END])
    targets: list[tuple[str, str | None, str | None]] = [("server, SQLite", None, None)]
    stores = "SQLite"
    if database_url:
        targets.append(("server, PostgreSQL", None, database_url))
        stores = "SQLite, then PostgreSQL with `--database-url`"
    lines = table([1, 100], targets)
    returning = returning_table(RETURNING_COUNTED, targets)
    return "\n".join(
        [
            COUNT_START,
            f"Counted {when} on {machine()} with `make bench`, which runs",
            f"`python -m bench.instructions --players 1,100` ({stores}; 300 timed actions",
            "in lock-step at one player, 30 each at 100):",
            "",
            *lines,
            "",
            f"and `python -m bench.instructions --returning {RETURNING_COUNTED}` (a returning "
            "player, as in",
            f"`bench.reconnect`: {RETURNING_COUNTED} players with unfinished games of 100 "
            "actions at once, counted",
            "from the first connection to the last player playing; the echo, per client of",
            "the same storm against `bench.echo`):",
            "",
            *returning,
            COUNT_END,
        ]
    )


def hint_section(easy: int, games: int) -> str:
    when = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    results = asyncio.run(
        run_hints(easy, games, ["hard", "classic", "relaxed", "three-blind-mice"])
    )
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    return "\n".join(
        [
            HINT_START,
            f"Measured {when} on {machine()} (load average {load} at the end) with `make bench`,",
            f"which runs `python -m bench.hints --easy {easy} --games {games}`: the first {easy}"
            " shipped easy",
            f"deals and, per other level, the first {games} deal numbers the solver wins with",
            "300 ms (as the winnable pools check), each played through the server by",
            "following its hints only (default hint budget, 300 ms; two solver workers):",
            "",
            *format_hints(results),
            HINT_END,
        ]
    )


def _put(page: str, section: str, start: str = START, end: str = END) -> str:
    """Print ``section`` and put it into ``page`` between its markers."""
    print(section)
    return replace_section(page, section, start, end)


def replace_section(page: str, section: str, start: str = START, end: str = END) -> str:
    pattern = re.compile(re.escape(start) + ".*?" + re.escape(end), re.DOTALL)
    if pattern.search(page):
        return pattern.sub(lambda _match: section, page)
    return page.rstrip("\n") + "\n\n" + section + "\n"


def settings(environ: Mapping[str, str]) -> dict[str, Any]:
    """Every ``BENCH_*`` value this run reads, checked before any section runs.

    Raises ``SettingError`` naming the first variable that holds a value it cannot use.
    """
    chosen = environ.get("BENCH_LEVELS", ",".join(LEVEL_NAMES))
    levels = [] if chosen == "none" else chosen.split(",")
    unknown = [level for level in levels if level not in LEVEL_NAMES]
    if unknown:
        raise SettingError(
            f"BENCH_LEVELS: unknown level {unknown[0]!r} (levels: {', '.join(LEVEL_NAMES)}; "
            "or none)"
        )
    deals = environ.get("BENCH_DEALS", "1..1000")
    for name, text in [("BENCH_DEALS", deals)] + [
        (_deals_name(level), environ[_deals_name(level)])
        for level in levels
        if _deals_name(level) in environ
    ]:
        try:
            deal_range(text)
        except ValueError as exc:
            raise SettingError(f"{name}: {exc}") from None
    return {
        "seconds": env_float(environ, "BENCH_SECONDS", 5),
        "levels": levels,
        "deals": deals,
        "budget": env_float(environ, "BENCH_BUDGET_MS", 2000, least=1),
        "players": env_int(environ, "BENCH_PLAYERS", 100),
        "actions": env_int(environ, "BENCH_ACTIONS", 100, least=1),
        "idle": env_int(environ, "BENCH_IDLE", 2000, least=1),
        "instructions": env_int(environ, "BENCH_INSTRUCTIONS", 1),
        "stored": env_int(environ, "BENCH_STORED", 1_000_000),
        "reconnect": env_int(environ, "BENCH_RECONNECT", 2000),
        "delivery": env_int(environ, "BENCH_DELIVERY", 1),
        "nodes": env_int(environ, "BENCH_NODES", 3),
        "easy": env_int(environ, "BENCH_HINT_EASY", 200),
        "games": env_int(environ, "BENCH_HINT_GAMES", 100),
        "database_url": environ.get("SCORPION_BENCH_DATABASE_URL"),
    }


def _parser() -> Parser:
    return Parser(
        prog="python -m bench.run",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Exit status: 0 written; 1 a failure said in one line; 2 a bad flag or BENCH_* "
        "value (one line naming it, before anything runs); 130 Ctrl-C or SIGTERM.",
    )


def _main(argv: Sequence[str] | None) -> int:
    _parser().parse_args(argv)  # no flags: --help says what runs and what it reads
    try:
        s = settings(os.environ)
    except SettingError as exc:
        print(f"python -m bench.run: {exc}", file=sys.stderr)
        return 2
    database_url = s["database_url"]
    page = PAGE.read_text(encoding="utf-8") if PAGE.exists() else "# Benchmarks\n"
    if s["seconds"] > 0:
        page = _put(page, engine_section(s["seconds"]))
    if s["levels"]:
        page = _put(
            page, solver_section(s["deals"], s["budget"], s["levels"]), SOLVER_START, SOLVER_END
        )
    players, actions = s["players"], s["actions"]
    if players:
        page = _put(
            page,
            load_section(players, actions, database_url, machine(), (LOAD_START, LOAD_END)),
            LOAD_START,
            LOAD_END,
        )
        page = _put(
            page, growth_section(machine(), (GROWTH_START, GROWTH_END)), GROWTH_START, GROWTH_END
        )
        page = _put(
            page, idle_section(s["idle"], machine(), (IDLE_START, IDLE_END)), IDLE_START, IDLE_END
        )
        write_profile(players, actions, machine())
    if s["instructions"]:  # BENCH_PLAYERS=0: this alone
        page = _put(page, instructions_section(database_url), COUNT_START, COUNT_END)
    if s["stored"]:
        page = _put(page, stored_section(s["stored"]), STORED_START, STORED_END)
    if s["reconnect"]:
        page = _put(
            page,
            reconnect_section(s["reconnect"], database_url),
            RECONNECT_START,
            RECONNECT_END,
        )
    if database_url:
        if s["delivery"]:
            page = _put(page, delivery_section(database_url), DELIVERY_START, DELIVERY_END)
        if s["nodes"]:
            page = _put(page, nodes_section(database_url, s["nodes"]), NODES_START, NODES_END)
    else:
        print(
            "delivery latency across nodes skipped: set SCORPION_BENCH_DATABASE_URL",
            file=sys.stderr,
        )
    if s["easy"]:
        page = _put(page, hint_section(s["easy"], s["games"]), HINT_START, HINT_END)
    PAGE.write_text(page, encoding="utf-8")
    print(f"written to {PAGE}", file=sys.stderr)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return run_main("python -m bench.run", _main, argv)


if __name__ == "__main__":
    sys.exit(main())
