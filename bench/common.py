"""What every benchmark module shares: checked arguments and settings, and ``main``.

A bad flag or ``BENCH_*`` value is refused with one line naming it (exit 2)
before anything is measured, rather than ending minutes later in a traceback.
``run_main`` gives each module's command line the exit statuses documented at the
top of docs/benchmarks.md: 0 done; 1 a failure said in one line (a file or
revision that is not there, an output that cannot be written); 2 a bad flag or
value; 130 Ctrl-C or SIGTERM (the benchmark's servers and files removed first);
141 the reader of the output left (``| head``).
"""

from __future__ import annotations

import argparse
import errno
import math
import os
import signal
import sys
from collections.abc import Callable, Mapping, Sequence
from types import FrameType
from typing import TypeVar

from sqlalchemy.exc import ArgumentError

from engine.cli import OneLineParser
from server.store.database import async_url


def percentile(values: Sequence[float], share: float) -> float:
    """The nearest-rank percentile: the smallest value with ``share`` of them at or below it.

    Of 2 values the 99th percentile is the larger (a rank rounded down would give the
    smaller, a 99th percentile below the median). ``values`` need not be sorted; at
    least one, and 0 < share <= 1.
    """
    ordered = sorted(values)
    return ordered[max(1, math.ceil(len(ordered) * share)) - 1]


T = TypeVar("T")


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
    return _setting(environ, name, default, lambda text: _integer(text, least))


def env_float(environ: Mapping[str, str], name: str, default: float, least: float = 0) -> float:
    """``environ[name]`` as a finite number of at least ``least``, else ``default``."""
    return _setting(environ, name, default, lambda text: _number(text, least))


def _setting(environ: Mapping[str, str], name: str, default: T, read: Callable[[str], T]) -> T:
    """``read(environ[name])``, else ``default``; a value ``read`` refuses (ValueError)
    is a ``SettingError`` naming the variable."""
    text = environ.get(name)
    if text is None:
        return default
    try:
        return read(text)
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


def port(text: str) -> int:
    """An argparse type: a TCP port, 1 to 65535."""
    try:
        value = _integer(text, 1)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if value > 65535:
        raise argparse.ArgumentTypeError(f"must be at most 65535: {text!r}")
    return value


def database_url(text: str) -> str:
    """An argparse type: an SQLite or PostgreSQL URL, as ``scorpion-server`` takes."""
    try:
        async_url(text)
    except (ArgumentError, ValueError):
        raise argparse.ArgumentTypeError(
            f"not a sqlite+aiosqlite:// or postgresql+asyncpg:// URL: {text!r}"
        ) from None
    return text


Parser = OneLineParser
"""The benchmarks' argparse: a malformed command line is one line (exit status 2)."""


class BenchError(Exception):
    """A failure the benchmark says in one line (exit 1): a missing file, an unknown revision."""


# Errors of writing the output rather than of what was measured.
_OUTPUT_ERRORS = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO, errno.EBADF}


def _terminate(_signum: int, _frame: FrameType | None) -> None:
    raise KeyboardInterrupt  # as Ctrl-C: the same clean-up (servers stopped, files removed)


def run_main(
    prog: str, main: Callable[[Sequence[str] | None], int], argv: Sequence[str] | None = None
) -> int:
    """Run a benchmark's ``main(argv)`` with the documented exit statuses, never a traceback.

    SIGTERM is handled as Ctrl-C, so what the benchmark started and made is removed
    either way before it ends with 130.
    """
    if sys.stdout is None:  # started with it closed (`>&-`): every benchmark writes there
        print(f"{prog}: cannot write the output: standard output is closed", file=sys.stderr)
        return 1
    previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        try:
            code = main(argv)
        except SystemExit as exc:  # --help printed, or argparse refused a flag (2)
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        sys.stdout.flush()
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `python -m bench.profile ... | head`: the reader left; end quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except BenchError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        if exc.errno not in _OUTPUT_ERRORS:
            print(f"{prog}: {exc.strerror or exc}", file=sys.stderr)
            return 1
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # nothing left to flush
        print(f"{prog}: cannot write the output: {exc.strerror or exc}", file=sys.stderr)
        return 1
    finally:
        signal.signal(signal.SIGTERM, previous)
    return code
