"""Following the hints wins every deal the solver has won, and never meets a position twice.

Through the real server and protocol: easy deals (all solver-won), played on
medium (the same rules, where a deal may be chosen). ``make
bench`` plays many more and writes the figures to docs/benchmarks.md.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator

import pytest

from engine.solver.easy import shipped_easy_deals
from server.config import Settings
from tests.server.conftest import Running
from tests.server.hint_player import play_by_hints

# Deals where hints used to go round in circles (a king shuttled between two
# empty columns with the stock still to come), then the first of the list.
SHUTTLED = [5597831026779422, 22828781687268, 103480578315347, 3389810691367649]
EASY = SHUTTLED + shipped_easy_deals()[:8]


@pytest.fixture
async def hinting(settings: Settings) -> AsyncIterator[Running]:
    running = Running(dataclasses.replace(settings, hint_budget_ms=1000))
    await running.start()
    yield running
    await running.stop()


async def test_following_hints_wins_easy_deals_without_repeating(hinting: Running) -> None:
    assert hinting.server.service is not None
    client = await hinting.player("hal")
    faults = {}
    for deal in EASY:
        played = await play_by_hints(client, hinting.server.service, "medium", deal=deal)
        if played.fault:
            faults[deal] = played.fault
    assert faults == {}
