"""Solver work off the event loop: hints and lost-position checks in worker processes.

A search may take its whole budget of CPU; run on the event loop it would
stall every other player, and in a thread it would still hold the GIL. So
``SolverPool`` sends a copy of the position and the (frozen, picklable)
rules to a ``ProcessPoolExecutor`` and awaits the answer. ``pending`` counts
searches in flight so optional work (the lost-position check) can be
skipped when the workers are busy. Hints come from the engine's planner,
``engine.solver.plan.advise``; if the pool breaks, they fall back to its
choice without a search (``budget_ms=0``), computed in-process (it is cheap).

Lost-position checks remember their proofs. A check asks the solver for its
verdict on the position; a definitive one (``lost``: no sequence of actions
wins; ``won``: a win was found) is a fact about the position, so it is kept
(``LOST_VERDICTS`` positions, least recently used dropped first) and the same
position checked again, in any game, is answered at once, without a trip to
a worker. Undo and restart return to positions already checked, so a player
who tries a move and takes it back costs one search, not one per action. An
``unknown`` verdict (the budget ran out) is not kept: that position is
searched again next time.

``on_run(kind, seconds)``, if set, hears how long each trip to a worker took
("hint", "lost" or "winnable"), the wait for a free worker included (metrics).

Workers die with their server. Each one, as it starts, watches the server's
process (``_watch_server``: a pidfd on Linux, polling elsewhere) and exits the
moment it is gone, so a server killed with SIGKILL, which cannot shut its pool
down, leaves no solver process behind. Workers never see SIGTERM or SIGINT
(``_start_forkserver``): a service manager stops a server by signalling every
process it started (systemd's SIGTERM to the unit's cgroup, a terminal's SIGINT
to its process group), and a worker that died of it broke the pool while the
server was still shutting down, so a clean stop logged a failed pool. The
server shuts its pool down, or leaves it by exiting.
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import multiprocessing.forkserver
import multiprocessing.resource_tracker
import os
import random
import select
import signal
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Final, TypeVar

from engine.levels import Rules
from engine.solver import native
from engine.solver.easy import DRAW_LIMIT, verify_deal
from engine.solver.plan import Advice, advise
from engine.solver.search import solve
from engine.state import State

__all__ = ["LOST_VERDICTS", "SolverPool"]

LOST_VERDICTS: Final = 10_000
"""How many positions' definitive lost-check verdicts a pool remembers."""

log = logging.getLogger(__name__)
T = TypeVar("T")


class SolverPool:
    """A process pool running the engine's solver advice."""

    def __init__(self, workers: int, hint_budget_ms: int, lost_budget_ms: int) -> None:
        context = multiprocessing.get_context("forkserver")
        _start_forkserver()
        self._pool = ProcessPoolExecutor(
            max_workers=max(1, workers),
            mp_context=context,
            initializer=_watch_server,
            initargs=(os.getpid(),),
        )
        self.workers = max(1, workers)
        self.hint_budget_ms = hint_budget_ms
        self.lost_budget_ms = lost_budget_ms
        self.pending = 0
        self.broken = False  # the pool failed; hints fall back to the heuristic
        self.lost_searches = 0  # lost-position checks sent to a worker
        self.lost_remembered = 0  # ... and answered from a verdict kept before
        self._verdicts: OrderedDict[tuple[Rules, bytes], bool] = OrderedDict()
        self.on_run: Callable[[str, float], None] | None = None
        log.info("solver: %d worker(s), %s", self.workers, native.describe())

    @property
    def busy(self) -> bool:
        return self.pending >= self.workers

    async def advise(
        self, state: State, rules: Rules, seen: frozenset[bytes], known_lost: frozenset[bytes]
    ) -> Advice:
        """The hint for ``state`` (``engine.solver.plan.advise``), searched in a worker.

        If the pool fails, the same choice without a search, in-process (cheap).
        """
        advice = await self._in_worker(
            _advise, state.copy(), rules, seen, known_lost, self.hint_budget_ms
        )
        if advice is None:
            return _advise(state.copy(), rules, seen, known_lost, 0)
        return advice

    def known_lost(self, rules: Rules, key: bytes) -> bool:
        """Whether the position with ``key`` is remembered as proved lost."""
        return self._verdicts.get((rules, key)) is True

    def remember_lost(self, rules: Rules, keys: Iterable[bytes]) -> None:
        """Keep positions proved lost elsewhere (a hint's search) among the verdicts."""
        for key in keys:
            self._remember((rules, key), True)

    def _remember(self, key: tuple[Rules, bytes], lost: bool) -> None:
        self._verdicts[key] = lost
        self._verdicts.move_to_end(key)
        while len(self._verdicts) > LOST_VERDICTS:
            self._verdicts.popitem(last=False)

    async def lost(self, state: State, rules: Rules) -> bool:
        """Whether the solver proves ``state`` lost within the budget (or did before)."""
        return await self.verdict(state, rules) == "lost"

    async def verdict(self, state: State, rules: Rules) -> str:
        """``won``, ``lost`` (proved, now or before) or ``unknown``, with the lost budget."""
        key = (rules, state.key())
        known = self._verdicts.get(key)
        if known is not None:
            self._verdicts.move_to_end(key)
            self.lost_remembered += 1
            return "lost" if known else "won"
        self.lost_searches += 1
        verdict = await self._in_worker(_lost_verdict, state.copy(), rules, self.lost_budget_ms)
        if verdict is None:
            return "unknown"  # the pool failed: no check this time
        if verdict != "unknown":  # a proof either way: the position's, for good
            self._remember(key, verdict == "lost")
        return verdict

    async def find_winnable(self, rules: Rules, seed: int, budget_ms: int) -> int | None:
        """A random deal number (from ``seed``) the solver wins under ``rules``, or None."""
        return await self._in_worker(_find_winnable, rules, seed, budget_ms)

    async def _in_worker(self, work: Callable[..., T], *args: Any) -> T | None:
        """``work(*args)`` in a worker process; None (and ``broken`` set) if the pool failed."""
        loop = asyncio.get_running_loop()
        self.pending += 1
        started = time.monotonic()
        try:
            return await loop.run_in_executor(self._pool, work, *args)
        except (BrokenProcessPool, OSError):
            self.broken = True
            log.exception("solver pool failed running %s", work.__name__)
            return None
        finally:
            self.pending -= 1
            if self.on_run is not None:
                self.on_run(_KINDS.get(work.__name__, work.__name__), time.monotonic() - started)

    async def close(self) -> None:
        """Cancel the searches not started and wait, off the event loop, for the
        running ones (each ends within its budget) and the pool's own thread.

        Left running, that thread could close its wake-up pipe at the moment the
        interpreter exits and writes to it: a traceback after "stopped" (a race in
        ``concurrent.futures`` at exit)."""
        await asyncio.to_thread(self._pool.shutdown, wait=True, cancel_futures=True)


_KINDS: Final = {"_advise": "hint", "_lost_verdict": "lost", "_find_winnable": "winnable"}


def _advise(
    state: State, rules: Rules, seen: frozenset[bytes], lost: frozenset[bytes], budget_ms: float
) -> Advice:
    """In a worker: the planner's hint for ``state``."""
    return advise(state, rules, seen=seen, lost=lost, budget_ms=budget_ms)


def _lost_verdict(state: State, rules: Rules, budget_ms: int) -> str:
    """In a worker: the solver's verdict on ``state``: "won", "lost" or "unknown"."""
    return solve(state, rules, budget_ms=budget_ms).result


def _find_winnable(rules: Rules, seed: int, budget_ms: int) -> int | None:
    """In a worker: one attempt at a winnable deal under ``rules``."""
    number = random.Random(seed).randrange(1, DRAW_LIMIT)
    return number if verify_deal(number, rules, budget_ms) else None


_LEFT_TO_THE_SERVER: Final = frozenset({signal.SIGTERM, signal.SIGINT})


def _start_forkserver() -> None:
    """Start the process the workers fork from with ``_LEFT_TO_THE_SERVER`` blocked.

    A blocked signal stays blocked across fork and exec, so the forkserver and every
    worker forked from it never see those signals, from their first instruction on:
    as the standard library starts its resource tracker. (Ignoring them in a worker's
    initializer left a window between its fork and that call.) In the server, they
    are blocked only while the forkserver starts: one sent meanwhile waits, not lost.
    """
    multiprocessing.resource_tracker.ensure_running()  # it sets the mask for its own start
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, _LEFT_TO_THE_SERVER)
    try:
        multiprocessing.forkserver.ensure_running()
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def _watch_server(pid: int) -> None:
    """In each worker, at start: exit as soon as the server process ``pid`` is gone."""
    try:
        handle: int | None = os.pidfd_open(pid)
    except ProcessLookupError:
        os._exit(0)  # the server died before this worker started
    except (AttributeError, OSError):
        handle = None  # no pidfd here: poll instead
    watcher = threading.Thread(
        target=_exit_with, args=(pid, handle), name="scorpion-server-watch", daemon=True
    )
    watcher.start()


def _exit_with(pid: int, handle: int | None) -> None:
    if handle is not None:
        select.select([handle], [], [])  # readable once the process has exited
    else:
        while _alive(pid):
            time.sleep(0.5)
    os._exit(0)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
