"""Say it at the deal: a deal that cannot be won is announced before the first move.

``lost_position`` tells "lost from the deal" from "lost after your moves";
deal verdicts are kept in the database and never searched twice.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator
from typing import Any

import pytest

from server.config import Settings
from tests.server.client import Client
from tests.server.conftest import Running

LOST_DEAL, WON_DEAL = 1, 5  # hard: deal 1 is proved lost at once, deal 5 won (until dealt)


@pytest.fixture
async def checking(settings: Settings) -> AsyncIterator[Running]:
    running = Running(dataclasses.replace(settings, lost_budget_ms=1000))
    await running.start()
    yield running
    await running.stop()


async def lost_pushes(client: Client, running: Running, game: int) -> list[dict[str, Any]]:
    """Every lost_position push once the game's checks are done."""
    assert running.server.service is not None
    live = running.server.service.cached(game)
    assert live is not None
    for _ in range(200):
        if not live.checking:
            break
        await asyncio.sleep(0.02)
    await asyncio.sleep(0.05)
    return [
        {"v": push["v"], **event}
        for push in client.drain()
        for event in push.get("events", [])
        if event["type"] == "lost_position"
    ]


async def test_a_lost_deal_is_said_at_the_deal(checking: Running) -> None:
    kim = await checking.player("kim")
    game = (await kim.request("new_game", level="hard", deal=LOST_DEAL))["game"]
    assert await lost_pushes(kim, checking, game) == [
        {"v": 0, "type": "lost_position", "from_deal": True}
    ]
    assert checking.server.store is not None
    assert await checking.server.store.deal_verdict("hard", LOST_DEAL) == "lost"


async def test_a_won_deal_lost_by_a_move_says_so(checking: Running) -> None:
    lev = await checking.player("lev")
    game = (await lev.request("new_game", level="hard", deal=WON_DEAL))["game"]
    assert await lost_pushes(lev, checking, game) == []
    assert (await lev.request("deal", game=game, v=0))["type"] == "ack"  # loses this deal
    assert await lost_pushes(lev, checking, game) == [
        {"v": 1, "type": "lost_position", "from_deal": False}
    ]
    assert checking.server.store is not None
    assert await checking.server.store.deal_verdict("hard", WON_DEAL) == "won"


async def test_open_game_checks_a_game_loaded_from_the_store(checking: Running) -> None:
    mo = await checking.player("mo")
    token = mo.token
    game = (await mo.request("new_game", level="hard", deal=LOST_DEAL))["game"]
    await lost_pushes(mo, checking, game)
    await checking.restart()
    again = await checking.connect()
    await again.hello(token)
    await again.request("open_game", game=game)
    assert await lost_pushes(again, checking, game) == [
        {"v": 0, "type": "lost_position", "from_deal": True}
    ]
    assert checking.server.service is not None
    assert checking.server.service.solver.lost_searches == 0  # the kept verdict answered


async def test_the_deal_verdict_is_searched_once_per_database(checking: Running) -> None:
    ned = await checking.player("ned")
    for _ in range(2):
        game = (await ned.request("new_game", level="hard", deal=LOST_DEAL))["game"]
        await lost_pushes(ned, checking, game)
    assert checking.server.service is not None
    assert checking.server.service.solver.lost_searches == 1


async def test_a_connection_that_opens_a_game_proved_lost_is_told_so_too(
    checking: Running,
) -> None:
    """A page reloaded after the announcement: the check is not run again, its verdict is
    said again to the connection that opens the game; not once the game has moved on."""
    kim = await checking.player("kim")
    game = (await kim.request("new_game", level="hard", deal=LOST_DEAL))["game"]
    assert len(await lost_pushes(kim, checking, game)) == 1
    again = await checking.connect()
    await again.hello(kim.token)
    assert (await again.request("open_game", game=game))["v"] == 0
    assert await lost_pushes(again, checking, game) == [
        {"v": 0, "type": "lost_position", "from_deal": True}
    ]
    assert await lost_pushes(kim, checking, game) == []  # said to the one that opened it
    assert (await kim.request("deal", game=game, v=0))["type"] == "ack"
    await lost_pushes(kim, checking, game)
    third = await checking.connect()
    await third.hello(kim.token)
    assert (await third.request("open_game", game=game))["v"] == 1
    pushes = await lost_pushes(third, checking, game)
    assert all(push["v"] == 1 for push in pushes), pushes  # never the old version's


async def test_a_verdict_found_after_a_hint_is_said_of_the_hints_version(
    checking: Running,
) -> None:
    """A player who asks a hint at once after each move (the hint lands before the move's
    check is done) was never told the position was lost: the verdict was dropped as of a
    version gone, though the hint left the position as it was."""
    assert checking.server.service is not None
    checks = checking.server.service.lost_checks
    real, release = checks.check, asyncio.Event()

    async def slow(live: Any) -> bool | None:
        verdict = await real(live)
        await release.wait()
        return verdict

    checks.check = slow  # type: ignore[method-assign]
    kim = await checking.player("kim")
    game = (await kim.request("new_game", level="hard", deal=LOST_DEAL))["game"]
    assert (await kim.request("hint", game=game))["v"] == 1
    release.set()
    assert await lost_pushes(kim, checking, game) == [
        {"v": 1, "type": "lost_position", "from_deal": True}
    ]
    # a deal, its undo and the deal again while the deal's check is held: the position is
    # the one checked again, and its recheck finds the same verdict, said once
    release.clear()
    assert (await kim.request("deal", game=game, v=1))["v"] == 2
    assert (await kim.request("undo", game=game, v=2))["v"] == 3
    assert (await kim.request("deal", game=game, v=3))["v"] == 4
    release.set()
    assert await lost_pushes(kim, checking, game) == [
        {"v": 4, "type": "lost_position", "from_deal": True}
    ]


async def test_a_hint_in_a_lost_position_is_followed_by_the_verdict_of_its_version(
    checking: Running,
) -> None:
    """A hint is recorded (the version grows) and leaves the position as it was, but the
    verdict stayed with the version before: clients clear it at each version, so the
    banner went at the first hint, and a second hint's words, or a page opened after it,
    were not told the deal could not be won."""
    kim = await checking.player("kim")
    game = (await kim.request("new_game", level="hard", deal=LOST_DEAL))["game"]
    assert len(await lost_pushes(kim, checking, game)) == 1
    for v in (1, 2):
        assert (await kim.request("hint", game=game))["v"] == v
        assert await lost_pushes(kim, checking, game) == [
            {"v": v, "type": "lost_position", "from_deal": True}
        ]
    again = await checking.connect()
    await again.hello(kim.token)
    assert (await again.request("open_game", game=game))["v"] == 2
    assert await lost_pushes(again, checking, game) == [
        {"v": 2, "type": "lost_position", "from_deal": True}
    ]
    assert checking.server.service is not None
    assert checking.server.service.solver.lost_searches == 1  # said again, not searched
