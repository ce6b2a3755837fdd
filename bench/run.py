"""``make bench``: run every benchmark and write the results into docs/benchmarks.md.

The section between the ``<!-- engine-bench -->`` markers is replaced with this
run's figures, the command that produced them and the machine they came from;
the rest of the page (how to read the numbers) is left as written.
"""

from __future__ import annotations

import datetime
import os
import platform
import re
import sys
from pathlib import Path

from engine.benchmark import format_report, run_benchmark

PAGE = Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md"
START, END = "<!-- engine-bench -->", "<!-- /engine-bench -->"


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


def replace_section(page: str, section: str) -> str:
    pattern = re.compile(re.escape(START) + ".*?" + re.escape(END), re.DOTALL)
    if pattern.search(page):
        return pattern.sub(lambda _match: section, page)
    return page.rstrip("\n") + "\n\n" + section + "\n"


def main() -> int:
    seconds = float(os.environ.get("BENCH_SECONDS", "5"))
    section = engine_section(seconds)
    print(section)
    page = PAGE.read_text(encoding="utf-8") if PAGE.exists() else "# Benchmarks\n"
    PAGE.write_text(replace_section(page, section), encoding="utf-8")
    print(f"written to {PAGE}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
