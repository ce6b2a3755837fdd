"""The compiled search (``native.c``), loaded with ctypes when it has been built.

``native.c`` is a line-for-line translation of ``search`` and ``prune``: the
same moves in the same order, the same pruning rules, the same positions
treated as equal. On a node budget both give the same verdict, node count and
winning line (``tests/engine/solver/test_native.py``); the C one is about 20
times faster. It is a plain shared library (no Python headers needed), always
``_native.so`` beside this file, built by either of:

- ``make native`` in a checkout (every make target builds it when a C compiler
  is there): ``cc -O2 -shared -fPIC -o engine/solver/_native.so engine/solver/native.c``;
- ``setup.py`` when the package is installed or a wheel is built (``pip
  install .``, ``python -m build``, the editable install ``make`` does).

Without it, ``solve`` runs the pure-Python search; ``SCORPION_PURE_PYTHON=1``
asks for that even when the library is built. ``describe()`` says which one
runs (the server logs it at start, ``scorpion-engine --version`` prints it).
"""

from __future__ import annotations

import ctypes
import os
import warnings
from functools import cache
from pathlib import Path

from engine.state import State

__all__ = ["LIBRARY", "NativeLine", "available", "describe", "load", "native_search"]

LIBRARY = Path(__file__).with_name("_native.so")
REBUILD = "`make native` in a checkout; reinstall with a C compiler otherwise"

_RESULTS = {0: "lost", 1: "won", 2: "unknown"}
_KINGS_ONLY, _ANY_SUIT, _PRUNE = 1, 2, 4

NativeLine = list[tuple[tuple[int, int, int], int]]  # (src, index, dst), card picked


@cache
def _library() -> ctypes.CDLL | None:
    return load(LIBRARY)


def load(path: Path) -> ctypes.CDLL | None:
    """The library at ``path``; None (with a warning if it is there but unusable)."""
    if not path.exists():
        return None
    try:
        library = ctypes.CDLL(str(path))
    except OSError as error:  # another machine's build, a truncated file...
        warnings.warn(
            f"cannot load the compiled solver {path} ({error}); the solver runs in pure "
            f"Python until it is rebuilt ({REBUILD})",
            RuntimeWarning,
            stacklevel=2,
        )
        return None
    library.scorpion_solve.restype = ctypes.c_int
    library.scorpion_solve.argtypes = [
        ctypes.POINTER(ctypes.c_int),
        ctypes.c_int,
        ctypes.c_double,
        ctypes.c_int64,
        ctypes.c_int64,
        ctypes.POINTER(ctypes.c_int64),
        ctypes.POINTER(ctypes.POINTER(ctypes.c_int)),
        ctypes.POINTER(ctypes.c_int),
    ]
    library.scorpion_free.restype = None
    library.scorpion_free.argtypes = [ctypes.POINTER(ctypes.c_int)]
    return library


def available() -> bool:
    """Whether the compiled search is built and not switched off."""
    return os.environ.get("SCORPION_PURE_PYTHON", "") in ("", "0") and _library() is not None


def describe() -> str:
    """Which search ``solve`` runs, in words, with the reason when it is not the compiled one."""
    if os.environ.get("SCORPION_PURE_PYTHON", "") not in ("", "0"):
        return "pure-Python search (SCORPION_PURE_PYTHON is set)"
    if _library() is None:
        return f"pure-Python search (no compiled solver at {LIBRARY})"
    return "compiled search"


def _encode(state: State) -> list[int]:
    numbers = [len(state.cols)]
    for down, col in zip(state.down, state.cols, strict=True):
        numbers += (down, len(col), *col)
    for cards in (state.stock, state.reserve, state.found):
        numbers += (len(cards), *cards)
    return numbers


def native_search(
    state: State,
    *,
    kings_only: bool,
    any_suit: bool,
    prune: bool,
    budget_ms: float | None,
    max_nodes: int | None,
    max_positions: int,
) -> tuple[str, int, NativeLine]:
    """Run the compiled search: (result, nodes, the winning line when won)."""
    library = _library()
    if library is None:
        raise RuntimeError(f"the compiled solver is not built ({LIBRARY}); {REBUILD}")
    numbers = _encode(state)
    position = (ctypes.c_int * len(numbers))(*numbers)
    flags = (_KINGS_ONLY if kings_only else 0) | (_ANY_SUIT if any_suit else 0)
    flags |= _PRUNE if prune else 0
    nodes = ctypes.c_int64()
    line = ctypes.POINTER(ctypes.c_int)()
    length = ctypes.c_int()
    code = library.scorpion_solve(
        position,
        flags,
        -1.0 if budget_ms is None else max(budget_ms, 0) / 1000,
        -1 if max_nodes is None else max_nodes,
        max_positions,
        ctypes.byref(nodes),
        ctypes.byref(line),
        ctypes.byref(length),
    )
    if code == -1:
        raise MemoryError("the compiled solver ran out of memory")
    if code not in _RESULTS:
        raise ValueError(f"the compiled solver rejected the position (code {code})")
    moves: NativeLine = []
    if line:
        try:
            flat = line[: 4 * length.value]
            moves = [
                ((flat[i], flat[i + 1], flat[i + 2]), flat[i + 3]) for i in range(0, len(flat), 4)
            ]
        finally:
            library.scorpion_free(line)
    return _RESULTS[code], nodes.value, moves
