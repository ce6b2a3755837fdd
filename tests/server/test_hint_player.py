"""Following the hints wins every deal the solver has won, and never meets a position twice.

Through the real server and protocol: easy deals (all solver-won), played on
medium (the same rules, where a deal may be chosen), and on every other level
solver-won deals dealt by ``new_game`` with ``winnable`` from the level's
pool. A few of each here; ``make bench`` plays 200 easy deals and 100 of each
other level and writes the figures to docs/benchmarks.md.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator

import pytest

from engine.levels import get_level
from engine.solver.easy import shipped_easy_deals, verify_deal
from server.app import ScorpionServer, migrate
from server.config import Settings
from server.winnable_pools import WinnablePools
from tests.server.client import Client
from tests.server.hint_player import play_by_hints

# Deals where hints used to go round in circles (a king shuttled between two
# empty columns with the stock still to come), then the first of the list.
SHUTTLED = [5597831026779422, 22828781687268, 103480578315347, 3389810691367649]
EASY = SHUTTLED + shipped_easy_deals()[:8]
# Small deal numbers the solver wins quickly under each level's rules (checked below).
WON = {
    "hard": [5, 33, 37, 49],
    "classic": [5, 33, 37, 49],
    "relaxed": [16, 200, 183],  # 65, 63 and 74 hints (the shortened lines)
    "three-blind-mice": [3, 4, 13, 15],
}


@pytest.fixture
async def hinting(settings: Settings) -> AsyncIterator[ScorpionServer]:
    if not settings.is_sqlite:
        await migrate(settings)
    pools = WinnablePools()
    for level, deals in WON.items():
        for deal in deals:
            pools.add(level, deal)
    server = ScorpionServer(dataclasses.replace(settings, hint_budget_ms=1000), pools=pools)
    await server.start()
    yield server
    await server.stop()


async def player(server: ScorpionServer, name: str) -> Client:
    client = await Client.connect(f"ws://127.0.0.1:{server.port}/")
    await client.register(name)
    return client


def test_the_pools_deals_are_won_by_the_solver() -> None:
    for level, deals in WON.items():
        assert all(verify_deal(deal, get_level(level), 2000) for deal in deals), level


async def test_following_hints_wins_easy_deals_without_repeating(hinting: ScorpionServer) -> None:
    assert hinting.service is not None
    client = await player(hinting, "hal")
    try:
        faults = {}
        for deal in EASY:
            played = await play_by_hints(client, hinting.service, "medium", deal=deal)
            if played.fault:
                faults[deal] = played.fault
        assert faults == {}
    finally:
        await client.close()


@pytest.mark.parametrize("level", list(WON))
async def test_following_hints_wins_winnable_deals_of_every_level(
    hinting: ScorpionServer, level: str
) -> None:
    assert hinting.service is not None
    client = await player(hinting, "ida")
    try:
        faults = {}
        for _ in WON[level]:
            played = await play_by_hints(client, hinting.service, level, winnable=True)
            if played.fault:
                faults[played.deal] = played.fault
        assert faults == {}
    finally:
        await client.close()
