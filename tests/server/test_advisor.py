"""``HintAdvisor``: a line once found is followed without searching; known losses are avoided."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any

import pytest

import server.workers
from engine.game import Game
from engine.levels import LEVELS
from engine.solver import solve
from engine.solver.plan import Advice, candidates, shorten
from server.advisor import HintAdvisor
from server.live import LiveGame
from server.store import GameRecord, GameStatus
from server.workers import SolverPool
from tests.server.conftest import Running

MEDIUM, HARD = LEVELS["medium"], LEVELS["hard"]


def live_game(level: str, deal: int) -> LiveGame:
    now = datetime.now(UTC)
    record = GameRecord(
        1, 1, level, deal, GameStatus.ACTIVE, 0, 0, 0, 0, 0, 0, 0, now, now, None, None
    )
    return LiveGame(record, Game(LEVELS[level], deal), [])


@pytest.fixture
def pool() -> Iterator[SolverPool]:
    pool = SolverPool(1, hint_budget_ms=2000, lost_budget_ms=10)
    pool._pool.shutdown()  # its searches run in a thread instead
    pool._pool = ThreadPoolExecutor(max_workers=1)  # type: ignore[assignment]
    yield pool
    pool._pool.shutdown()


async def follow(advisor: HintAdvisor, live: LiveGame) -> int:
    """Play ``live`` by the advisor's hints until won; the number of hints."""
    t = 0
    while not live.game.won:
        hinted = await advisor.hint(live)
        t += 1
        live.game.hint(t, hinted)
        if hinted.action == "deal":
            live.game.deal(t)
        else:
            assert hinted.action == "move" and hinted.card is not None
            live.game.move(hinted.card, hinted.to, t)
    return live.game.hints


async def test_a_found_line_is_followed_to_the_win_without_another_search(pool: SolverPool) -> None:
    advisor = HintAdvisor(pool)
    live = live_game("hard", 5)
    hints = await follow(advisor, live)
    assert advisor.planned == hints - 1  # one search, at the first hint
    seen = advisor.memory(live).seen(live.game)
    moves = sum(action.type in ("move", "deal") for action in live.game.actions)
    assert len(seen) == moves + 1  # every position once: the deal and one per move


async def test_the_line_followed_is_the_shortened_one(pool: SolverPool) -> None:
    # Relaxed deal 22: the solver's own line is 486 actions, shortened 122.
    advisor = HintAdvisor(pool)
    live = live_game("relaxed", 22)
    state, rules = live.game.state.copy(), LEVELS["relaxed"]
    raw = solve(state.copy(), rules, budget_ms=2000).actions
    hints = await follow(advisor, live)
    assert hints == len(shorten(state, rules, raw)) < len(raw) // 2
    assert advisor.planned == hints - 1


async def test_after_an_undo_the_hint_avoids_the_move_into_a_known_loss(
    pool: SolverPool, monkeypatch: pytest.MonkeyPatch
) -> None:
    searched: Callable[..., Advice] = server.workers._advise

    def unsearched(*args: Any) -> Advice:
        return searched(*args[:-1], 0)  # as if the budget ran out

    monkeypatch.setattr(server.workers, "_advise", unsearched)
    advisor = HintAdvisor(pool)
    live = live_game("medium", 3)
    state = live.game.state
    options = candidates(state, MEDIUM)
    first = await advisor.hint(live)
    assert first == options[0][0]
    pool.remember_lost(MEDIUM, [options[0][1].key()])  # the lost-position check proved it
    assert await advisor.hint(live) == options[1][0]


async def test_a_position_known_lost_still_hints_a_move_at_once(
    pool: SolverPool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """R20: a hint names a move while there is one; that the position is lost is said
    apart (``lost_position``). Nothing is searched for it."""

    async def no_search(*args: Any) -> Advice:
        raise AssertionError("a known lost position was searched")

    monkeypatch.setattr(pool, "advise", no_search)
    advisor = HintAdvisor(pool)
    live = live_game("hard", 2)
    state = live.game.state
    pool.remember_lost(HARD, [state.key()])
    hinted = await advisor.hint(live)
    assert hinted == candidates(state, HARD)[0][0] and hinted.action == "move"


def stuck_game() -> LiveGame:
    """Hard deal 185 after the stock and 9S onto 10S: no useful move is left (R16)."""
    live = live_game("hard", 185)
    live.game.deal(0)
    live.game.move("9S", 6, 0)
    assert live.game.stuck
    return live


async def test_a_stuck_position_hints_stuck_though_it_is_known_lost(pool: SolverPool) -> None:
    """A stuck position is lost too; the hint says the more telling ``stuck`` (PROTOCOL.md)."""
    advisor = HintAdvisor(pool)
    live = stuck_game()
    pool.remember_lost(HARD, [live.game.state.key()])
    hinted = await advisor.hint(live)
    assert (hinted.action, hinted.reason) == ("none", "stuck")


async def test_every_hint_in_a_stuck_position_says_stuck(server: Running) -> None:
    """The first hint's search proves the position lost; the next hints still say stuck."""
    ada = await server.player("ada")
    game = (await ada.request("new_game", level="hard", deal=185))["game"]
    assert (await ada.request("deal", game=game, v=0))["type"] == "ack"
    assert (await ada.request("move", game=game, v=1, card="9S", to=6))["type"] == "ack"
    for _ in range(3):
        hint = await ada.request("hint", game=game)
        assert (hint["action"], hint["reason"]) == ("none", "stuck"), hint
