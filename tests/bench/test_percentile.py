"""The benchmarks' 99th percentile is the nearest rank, never a rank too low."""

from __future__ import annotations

import pytest

from bench.common import percentile
from bench.delivery import _figures


@pytest.mark.parametrize(
    ("count", "share", "rank"),
    [
        (1, 0.99, 1),
        (2, 0.99, 2),
        (2, 0.5, 1),
        (3, 0.5, 2),
        (99, 0.99, 99),
        (100, 0.99, 99),
        (101, 0.99, 100),
        (200, 0.99, 198),
        (201, 0.99, 199),
        (20, 0.95, 19),
        (7, 1.0, 7),
    ],
)
def test_nearest_rank(count: int, share: float, rank: int) -> None:
    values = [float(n) for n in range(count, 0, -1)]  # unsorted: the helper sorts
    assert percentile(values, share) == rank


def test_the_99th_percentile_of_two_is_not_below_the_median() -> None:
    figures = _figures([0.002, 0.001])
    assert figures["p99_ms"] == 2.0 and figures["p99_ms"] >= figures["p50_ms"]
