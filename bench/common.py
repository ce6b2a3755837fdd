"""What every benchmark module shares: checked arguments and settings.

A bad flag or ``BENCH_*`` value is refused with one line naming it (exit 2)
before anything is measured, rather than ending minutes later in a traceback.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable, Mapping, Sequence


def percentile(values: Sequence[float], share: float) -> float:
    """The nearest-rank percentile: the smallest value with ``share`` of them at or below it.

    Of 2 values the 99th percentile is the larger (a rank rounded down would give the
    smaller, a 99th percentile below the median). ``values`` need not be sorted; at
    least one, and 0 < share <= 1.
    """
    ordered = sorted(values)
    return ordered[max(1, math.ceil(len(ordered) * share)) - 1]


class SettingError(ValueError):
    """A ``BENCH_*`` environment variable holds a value the benchmarks cannot use."""


def _integer(text: str, least: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise ValueError(f"not a whole number: {text!r}") from None
    if value < least:
        raise ValueError(f"must be at least {least}: {text!r}")
    return value


def _number(text: str, least: float) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"not a number: {text!r}") from None
    if not value >= least or value == float("inf"):  # also refuses nan
        raise ValueError(f"must be a finite number of at least {least:g}: {text!r}")
    return value


def env_int(environ: Mapping[str, str], name: str, default: int, least: int = 0) -> int:
    """``environ[name]`` as a whole number of at least ``least``, else ``default``."""
    text = environ.get(name)
    if text is None:
        return default
    try:
        return _integer(text, least)
    except ValueError as exc:
        raise SettingError(f"{name}: {exc}") from None


def env_float(environ: Mapping[str, str], name: str, default: float, least: float = 0) -> float:
    """``environ[name]`` as a finite number of at least ``least``, else ``default``."""
    text = environ.get(name)
    if text is None:
        return default
    try:
        return _number(text, least)
    except ValueError as exc:
        raise SettingError(f"{name}: {exc}") from None


def deal_range(text: str) -> range:
    """``A..B``, deal numbers A to B inclusive (1 <= A <= B)."""
    first, dots, last = text.partition("..")
    try:
        start, stop = _integer(first, 1), _integer(last, 1)
    except ValueError:
        start = stop = 0
    if not dots or not 1 <= start <= stop:
        raise ValueError(f"not a deal range A..B with 1 <= A <= B: {text!r}")
    return range(start, stop + 1)


def at_least(least: int) -> Callable[[str], int]:
    """An argparse type: a whole number of at least ``least`` (else a one-line refusal)."""

    def parse(text: str) -> int:
        try:
            return _integer(text, least)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    parse.__name__ = f"whole number of at least {least}"
    return parse
