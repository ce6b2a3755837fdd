"""SolverPool's lost-position checks: definitive verdicts are remembered per position."""

from __future__ import annotations

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
    pool.close()
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
        pool.close()
    assert (pool.lost_searches, pool.lost_remembered) == (1, 1)
