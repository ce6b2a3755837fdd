"""Sum up a py-spy sample file (collapsed stacks) into the server's top costs.

``bench.load`` with ``SCORPION_BENCH_PYSPY=FILE`` records the server process
with ``py-spy record --format raw``: one line per distinct stack, frames
joined by ``;``, then the number of samples. This reads such a file and
prints, for the event loop's thread (the stacks through ``server/__main__``)
without its idle time (waiting in ``select``), the functions that hold the
most samples: inclusive (the function and what it called) and by itself;
each with its share of the busy samples. Samples of other threads (aiosqlite's
connection thread) are counted apart.

    python -m bench.profile FILE [--top 15]
"""

from __future__ import annotations

import re
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from bench.common import BenchError, Parser, at_least, run_main

__all__ = ["Profile", "read_profile"]

_IDLE = ("select (selectors.py", "EpollSelector.select", "Selector.select")
_LINE = re.compile(r" \((.*?):\d+\)$")


def _function(frame: str) -> str:
    """``name (path/file.py:line)`` without the line: one entry per function."""
    return _LINE.sub(lambda m: f" ({m.group(1)})", frame)


@dataclass
class Profile:
    busy: int = 0  # event loop samples not waiting in select
    idle: int = 0
    other_threads: int = 0
    inclusive: Counter[str] = field(default_factory=Counter)
    own: Counter[str] = field(default_factory=Counter)


def read_profile(text: str) -> Profile:
    profile = Profile()
    for line in text.splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        samples = int(count)
        frames = [_function(frame) for frame in stack.split(";")]
        if not any("server/__main__.py" in frame for frame in frames):
            profile.other_threads += samples
            continue
        if frames[-1].startswith(_IDLE):
            profile.idle += samples
            continue
        profile.busy += samples
        profile.own[frames[-1]] += samples
        for frame in set(frames):
            profile.inclusive[frame] += samples
    return profile


def format_profile(profile: Profile, top: int = 15) -> list[str]:
    busy = max(profile.busy, 1)
    total = profile.busy + profile.idle
    lines = [
        f"event loop thread: {profile.busy:,} busy samples, {profile.idle:,} idle"
        f" ({profile.busy / max(total, 1):.0%} busy); other threads: {profile.other_threads:,}",
        "",
        "| inclusive share | function | | own share | function |",
        "|---|---|---|---|---|",
    ]
    skip = ("<module>", "_run_module_as_main", "_run_code", "main (", "run (", "Runner.run")
    inclusive = [
        (name, n)
        for name, n in profile.inclusive.most_common()
        if not name.startswith(skip) and "base_events.py" not in name
    ][:top]
    own = profile.own.most_common(top)
    for (i_name, i_n), (o_name, o_n) in zip(inclusive, own, strict=False):
        lines.append(f"| {i_n / busy:.0%} | `{i_name}` | | {o_n / busy:.0%} | `{o_name}` |")
    return lines


def _main(argv: Sequence[str] | None) -> int:
    parser = Parser(prog="python -m bench.profile", description=__doc__)
    parser.add_argument("file", type=Path)
    parser.add_argument("--top", type=at_least(1), default=15)
    args = parser.parse_args(argv)
    try:
        text = args.file.read_text(encoding="utf-8")
    except OSError as exc:
        raise BenchError(f"cannot read {args.file}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise BenchError(f"{args.file} is not a py-spy raw sample file (not text)") from None
    print("\n".join(format_profile(read_profile(text), args.top)))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return run_main("python -m bench.profile", _main, argv)


if __name__ == "__main__":
    sys.exit(main())
