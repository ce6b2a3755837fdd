"""SolverPool's lost-position checks: definitive verdicts are remembered per position."""

from __future__ import annotations

import asyncio
import multiprocessing.forkserver
import os
import signal
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

import server.workers
from engine.game import Game
from engine.levels import Rules, get_level
from engine.state import State
from server.workers import SolverPool

HARD = get_level("hard")


@pytest.fixture
def pool(monkeypatch: pytest.MonkeyPatch) -> Iterator[SolverPool]:
    """A pool whose searches run in a thread and answer from ``verdicts`` (a list)."""
    pool = SolverPool(1, hint_budget_ms=10, lost_budget_ms=10)
    pool._pool.shutdown()  # its searches run in a thread instead
    pool._pool = ThreadPoolExecutor(max_workers=1)  # type: ignore[assignment]
    verdicts: list[str] = []

    def verdict(state: State, rules: Rules, budget_ms: int) -> str:
        return verdicts.pop(0)

    monkeypatch.setattr(server.workers, "_lost_verdict", verdict)
    pool.verdicts = verdicts  # type: ignore[attr-defined]
    yield pool
    pool._pool.shutdown()


async def test_a_proof_of_loss_is_remembered(pool: SolverPool) -> None:
    pool.verdicts += ["lost"]  # type: ignore[attr-defined]
    first, again = Game(HARD, 2), Game(HARD, 2)  # the same position in two games
    assert await pool.lost(first.state, HARD)
    assert await pool.lost(again.state, HARD)
    assert (pool.lost_searches, pool.lost_remembered) == (1, 1)


async def test_a_win_found_is_remembered_an_unknown_is_not(pool: SolverPool) -> None:
    pool.verdicts += ["won", "unknown", "unknown", "lost"]  # type: ignore[attr-defined]
    won, open_ = Game(HARD, 5).state, Game(HARD, 6).state
    assert not await pool.lost(won, HARD)
    assert not await pool.lost(won, HARD)
    assert not await pool.lost(open_, HARD)  # unknown: searched again next time
    assert not await pool.lost(open_, HARD)
    assert await pool.lost(open_, HARD)
    assert (pool.lost_searches, pool.lost_remembered) == (4, 1)


async def test_verdicts_are_per_rules_and_bounded(
    pool: SolverPool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(server.workers, "LOST_VERDICTS", 2)
    pool.verdicts += ["lost", "won", "won", "won", "lost"]  # type: ignore[attr-defined]
    state = Game(HARD, 2).state
    assert await pool.lost(state, HARD)
    assert not await pool.lost(state, get_level("medium"))  # other rules: its own search
    assert not await pool.lost(Game(HARD, 3).state, HARD)  # the hard verdict on 2 goes
    assert not await pool.lost(Game(HARD, 4).state, HARD)
    assert await pool.lost(state, HARD)  # searched again
    assert (pool.lost_searches, pool.lost_remembered) == (5, 0)


async def test_the_real_solver_proves_a_hard_deal_lost_once() -> None:
    pool = SolverPool(1, hint_budget_ms=300, lost_budget_ms=2000)
    try:
        assert await pool.lost(Game(HARD, 2).state, HARD)
        assert await pool.lost(Game(HARD, 2).state, HARD)
    finally:
        await pool.close()
    assert (pool.lost_searches, pool.lost_remembered) == (1, 1)


async def test_the_workers_outlast_the_signals_that_stop_their_server() -> None:
    """A service manager stops a server by signalling every process it started (systemd's
    SIGTERM to the unit's cgroup, a terminal's SIGINT to its process group): the pool is
    the server's to shut down, so its worker and the forkserver it forks from go on,
    given those signals, and so does the search in flight; a worker forked after them
    works too (before, the worker died, the pool broke and the server logged an error as
    it stopped)."""
    pool = SolverPool(1, hint_budget_ms=300, lost_budget_ms=2000)
    later = None
    try:
        assert await pool.lost(Game(HARD, 2).state, HARD)  # the worker is up
        (worker,) = pool._pool._processes.values()
        forkserver = multiprocessing.forkserver._forkserver._forkserver_pid  # type: ignore[attr-defined]
        searching = asyncio.ensure_future(pool.verdict(Game(HARD, 3).state, HARD))
        await asyncio.sleep(0.05)
        assert worker.pid is not None
        for pid in (worker.pid, forkserver):
            for signum in (signal.SIGTERM, signal.SIGINT):
                os.kill(pid, signum)
        await asyncio.sleep(0.05)
        assert await searching
        assert await pool.verdict(Game(HARD, 4).state, HARD)
        assert worker.is_alive() and not pool.broken
        later = SolverPool(1, hint_budget_ms=300, lost_budget_ms=2000)  # forks a new worker
        assert await later.verdict(Game(HARD, 5).state, HARD) and not later.broken
        (forked,) = later._pool._processes.values()
        assert forked.pid != worker.pid
        assert multiprocessing.forkserver._forkserver._forkserver_pid == forkserver  # type: ignore[attr-defined]
    finally:
        await pool.close()
        if later is not None:
            await later.close()
