"""``bench.instructions`` counts under a fixed hash seed, and several seeds give a median."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

from bench.instructions import _callgrind, _under_seeds

ROOT = Path(__file__).resolve().parents[2]
HASH = "import sys; print(sys.flags.hash_randomization, hash('scorpion'))"


def _run_before_valgrind(seed: int) -> str:
    """What a Python started by the count's wrapper, up to valgrind itself, prints."""
    with _callgrind(seed) as (wrapper, _):
        prefix = wrapper[: wrapper.index("valgrind")]
    done = subprocess.run([*prefix, sys.executable, "-c", HASH], capture_output=True, text=True)
    return done.stdout


def test_a_counted_server_runs_under_the_seed_asked_for() -> None:
    assert _run_before_valgrind(0).split()[0] == "0"  # no randomisation at all
    assert _run_before_valgrind(7) == _run_before_valgrind(7)
    assert _run_before_valgrind(7) != _run_before_valgrind(8)


def test_several_seeds_give_the_median_and_the_range() -> None:
    counted = {1: 900.0, 2: 1000.0, 3: 950.0}
    seen: list[int] = []

    async def run(seed: int) -> dict[str, Any]:
        seen.append(seed)
        return {"instructions": counted[seed]}

    assert _under_seeds([1, 2, 3], run) == (
        950.0,
        " (900 to 1,000)",
        [{"instructions": 900.0}, {"instructions": 1000.0}, {"instructions": 950.0}],
    )
    assert seen == [1, 2, 3]
    assert _under_seeds([2], run)[:2] == (1000.0, "")


def test_a_bad_seed_is_refused_before_anything_runs() -> None:
    for bad in ("x", "1,,2", "-1", "4294967296"):
        done = subprocess.run(
            [sys.executable, "-m", "bench.instructions", "--seeds", bad],
            capture_output=True,
            text=True,
            cwd=ROOT,
        )
        assert done.returncode == 2, bad
        assert "--seeds" in done.stderr and "Traceback" not in done.stderr, done.stderr
