"""``scorpion-engine solve-bench``: how many deals of a range the solver decides, and how fast."""

from __future__ import annotations

import statistics
import time
from typing import Any

from engine.deal import deal_layout
from engine.levels import Rules
from engine.solver import native as compiled
from engine.solver.search import solve
from engine.state import State

__all__ = ["format_solve_bench", "percentile", "solve_bench"]


def percentile(values: list[int], fraction: float) -> int:
    """The nearest-rank percentile of ``values`` (0 < fraction <= 1)."""
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * fraction // 1))  # ceiling, at least the first
    return ordered[int(rank) - 1]


def solve_bench(
    rules: Rules, deals: range, budget_ms: float, native: bool | None = None
) -> dict[str, Any]:
    """Solve every deal of ``deals`` with ``budget_ms`` each; counts and timings.

    ``native`` as for ``solve``: the compiled search when built, unless False.
    """
    use_native = compiled.available() if native is None else native
    counts = {"won": 0, "lost": 0, "unknown": 0}
    times: list[int] = []
    nodes = 0
    searching = (
        0.0  # seconds, measured here: the verdicts' whole milliseconds round a fast search to 0
    )
    undecided = []
    for number in deals:
        state = State.from_deal(deal_layout(rules.layout, number))
        started = time.perf_counter()
        verdict = solve(state, rules, budget_ms, native=use_native)
        searching += time.perf_counter() - started
        counts[verdict.result] += 1
        times.append(verdict.ms)
        nodes += verdict.nodes
        if verdict.result == "unknown":
            undecided.append(number)
    total = len(times)
    return {
        "level": rules.name,
        "search": "compiled" if use_native else "pure Python",
        "deals": f"{deals.start}..{deals.stop - 1}",
        "budget_ms": budget_ms,
        **counts,
        "decided_pct": round(100 * (counts["won"] + counts["lost"]) / total, 2),
        "won_pct": round(100 * counts["won"] / total, 2),
        "median_ms": statistics.median(times),
        "p95_ms": percentile(times, 0.95),
        "max_ms": max(times),
        "nodes_per_s": round(nodes / searching) if searching > 0 else 0,
        "unknown_deals": undecided,
    }


def format_solve_bench(report: dict[str, Any]) -> str:
    return (
        f"{report['level']} deals {report['deals']}, {report['budget_ms']:g} ms each: "
        f"won {report['won']}, lost {report['lost']}, unknown {report['unknown']} "
        f"(decided {report['decided_pct']}%, won {report['won_pct']}%); "
        f"median {report['median_ms']} ms, p95 {report['p95_ms']} ms, max {report['max_ms']} ms; "
        f"{report['nodes_per_s']:,} positions/s ({report['search']} search)"
    )
