"""The hint-player benchmark: solver-won deals of every level played by following hints only.

Runs a server in this process (SQLite in a temporary directory, two solver
workers, the default hint budget) and one client over real WebSockets on
loopback. Easy deals come from the shipped list (played on medium, the same
rules, where a deal may be chosen); every other level's deals are solver-won
deals found the way the server's pools find them (``verify_deal`` with the
pools' 300 ms, here on deal numbers 1, 2, 3, ... in a process pool) and dealt
by ``new_game`` with ``winnable: true``. Each game is played by asking for a
hint and doing what it says (``tests.server.hint_player``). Reports, per
level: games won, games in which a position repeated, hints per game (median
and most) and the time per hint as the client sees it (p50, p99).

    python -m bench.hints [--easy 200] [--games 100] [--levels hard,classic,...]
"""

from __future__ import annotations

import asyncio
import dataclasses
import statistics
import sys
import tempfile
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from bench.common import Parser, at_least, percentile, run_main
from engine.levels import LEVEL_NAMES, get_level
from engine.solver.easy import shipped_easy_deals, verify_deal
from server.app import ScorpionServer
from server.config import Settings
from server.winnable_pools import FIND_BUDGET_MS, WinnablePools
from tests.server.client import Client
from tests.server.hint_player import HintGame, play_by_hints

LEVELS = ("hard", "classic", "relaxed", "three-blind-mice")
SEARCH_LIMIT = 20_000  # deal numbers tried per level at most


def _won(level: str, deal: int) -> int | None:
    return deal if verify_deal(deal, get_level(level), FIND_BUDGET_MS) else None


def find_won(level: str, count: int, workers: int = 2) -> list[int]:
    """The first ``count`` deal numbers the solver wins under ``level`` (as the pools check)."""
    found: list[int] = []
    with ProcessPoolExecutor(workers) as pool:
        start = 1
        while len(found) < count and start <= SEARCH_LIMIT:
            chunk = range(start, start + 50 * workers)
            found += [deal for deal in pool.map(_won, [level] * len(chunk), chunk) if deal]
            start += len(chunk)
    return found[:count]


def summarize(level: str, games: list[HintGame]) -> dict[str, Any]:
    times = [ms for game in games for ms in game.hint_ms]
    hints = [game.hints for game in games]
    return {
        "level": level,
        "games": len(games),
        "won": sum(game.won for game in games),
        "repeated": sum(game.repeated is not None for game in games),
        "none": sum(game.none is not None for game in games),
        "hints_median": statistics.median(hints) if hints else 0,
        "hints_max": max(hints, default=0),
        "hint_p50_ms": percentile(times, 0.5) if times else 0.0,
        "hint_p99_ms": percentile(times, 0.99) if times else 0.0,
        "faults": [f"{game.deal}: {game.fault}" for game in games if game.fault][:5],
    }


async def run_hints(easy: int, games: int, levels: list[str]) -> list[dict[str, Any]]:
    pools = WinnablePools()
    won = {level: find_won(level, games) for level in levels}
    for level, deals in won.items():
        for deal in deals:
            pools.add(level, deal)
    with tempfile.TemporaryDirectory() as data:
        settings = dataclasses.replace(
            Settings(),
            port=0,
            data_dir=data,
            workers=2,
            easy_pool=0,
            winnable_pool=0,
            rate_hints="off",  # one client asking as fast as it is answered
            rate_actions="off",
        )
        server = ScorpionServer(settings, pools=pools)
        await server.start()
        try:
            assert server.service is not None
            client = await Client.connect(f"ws://127.0.0.1:{server.port}/")
            await client.register("bench")
            results = []
            played = [
                await play_by_hints(client, server.service, "medium", deal=deal)
                for deal in shipped_easy_deals()[:easy]
            ]
            results.append(summarize("easy", played))
            for level in levels:
                played = [
                    await play_by_hints(client, server.service, level, winnable=True)
                    for _ in won[level]
                ]
                results.append(summarize(level, played))
            await client.close()
        finally:
            await server.stop()
    return results


def format_hints(results: list[dict[str, Any]]) -> list[str]:
    lines = [
        "| level | games | won | position repeated | hint none | hints per game"
        " (median, most) | time per hint p50 | p99 |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in results:
        lines.append(
            f"| {row['level']} | {row['games']} | {row['won']} | {row['repeated']} "
            f"| {row['none']} | {row['hints_median']:g}, {row['hints_max']} "
            f"| {row['hint_p50_ms']:.1f} ms | {row['hint_p99_ms']:.1f} ms |"
        )
    for row in results:
        lines += [f"- {row['level']}: {fault}" for fault in row["faults"]]
    return lines


def _main(argv: Sequence[str] | None) -> int:
    parser = Parser(prog="python -m bench.hints", description=__doc__)
    parser.add_argument("--easy", type=at_least(0), default=200)
    parser.add_argument("--games", type=at_least(0), default=100)
    parser.add_argument("--levels", default=",".join(LEVELS), help="comma-separated")
    args = parser.parse_args(argv)
    unknown = [level for level in args.levels.split(",") if level not in LEVEL_NAMES]
    if unknown:
        parser.error(f"--levels: unknown level {unknown[0]!r} (levels: {', '.join(LEVEL_NAMES)})")
    results = asyncio.run(run_hints(args.easy, args.games, args.levels.split(",")))
    print("\n".join(format_hints(results)))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return run_main("python -m bench.hints", _main, argv)


if __name__ == "__main__":
    sys.exit(main())
