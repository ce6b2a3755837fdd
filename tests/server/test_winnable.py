"""Winnable deals on every level: dealt from pools the solver has won, kept apart in the stats."""

from __future__ import annotations

import asyncio
import dataclasses
import random
from collections.abc import AsyncIterator

import pytest

import server.winnable_pools
from engine.levels import LEVEL_NAMES, get_level
from engine.solver.easy import verify_deal
from server.app import ScorpionServer, migrate
from server.config import Settings
from server.winnable_pools import WinnableDealFinder, WinnablePools
from tests.server.client import TIMEOUT, Client
from tests.server.hint_player import play_by_hints

HARD_WON = [5, 33, 37]  # deals 1..40 the solver wins under hard rules (checked below)


async def serve(settings: Settings, pools: WinnablePools) -> ScorpionServer:
    if not settings.is_sqlite:
        await migrate(settings)
    server = ScorpionServer(dataclasses.replace(settings, hint_budget_ms=1000), pools=pools)
    await server.start()
    return server


@pytest.fixture
async def hard_pool(settings: Settings) -> AsyncIterator[ScorpionServer]:
    pools = WinnablePools()
    for deal in HARD_WON:
        pools.add("hard", deal)
    server = await serve(settings, pools)
    yield server
    await server.stop()


def test_the_hard_deals_used_here_are_won() -> None:
    assert all(verify_deal(deal, get_level("hard"), 1000) for deal in HARD_WON)


async def test_a_winnable_game_is_dealt_from_the_pool_and_hides_its_deal(
    hard_pool: ScorpionServer,
) -> None:
    ann = await Client.connect(f"ws://127.0.0.1:{hard_pool.port}/")
    try:
        await ann.register("ann")
        start = await ann.request("new_game", level="hard", winnable=True)
        assert start["type"] == "game" and start["view"]["deal"] is None
        assert hard_pool.service is not None
        live = hard_pool.service.cached(start["game"])
        assert live is not None and live.record.winnable and live.record.deal in HARD_WON
        [summary] = (await ann.request("games"))["games"]
        assert summary["winnable"] is True and summary["deal"] is None
        chosen = await ann.request("new_game", level="hard", winnable=True, deal=5)
        assert chosen["code"] == "forbidden"
        empty = await ann.request("new_game", level="three-blind-mice", winnable=True)
        assert empty["type"] == "game"  # its pool had no deal: one was found at once
        found = hard_pool.service.cached(empty["game"])
        assert found is not None and found.record.winnable
        assert verify_deal(found.record.deal, get_level("three-blind-mice"), 1000)
        assert hard_pool.store is not None
        assert await hard_pool.store.easy_deals("three-blind-mice") == []  # its game's alone
        seen = {live.record.deal}
        for _ in range(2):
            again = await ann.request("new_game", level="hard", winnable=True)
            cached = hard_pool.service.cached(again["game"])
            assert cached is not None
            seen.add(cached.record.deal)
        assert len(seen) == 3  # deals the player has not had first
    finally:
        await ann.close()


async def test_a_pool_deal_is_dealt_once_so_a_shown_number_names_no_other_game(
    hard_pool: ScorpionServer,
) -> None:
    """PROTOCOL.md section 7: a game's number is shown once it ends, so a deal once dealt is
    never dealt again. Before, one player could start winnable games until they had every
    deal of the pool, give each up to see its number, and then match another player's
    face-up cards against those deals: their face-down cards followed."""
    eve = await Client.connect(f"ws://127.0.0.1:{hard_pool.port}/")
    bo = await Client.connect(f"ws://127.0.0.1:{hard_pool.port}/")
    assert hard_pool.service is not None
    try:
        await eve.register("eve")
        shown = set()
        for _ in range(len(HARD_WON) + 1):  # the last abandons the one before
            start = await eve.request("new_game", level="hard", winnable=True)
            assert start["type"] == "game", start
        for summary in (await eve.request("games", status="lost"))["games"]:
            shown.add(summary["deal"])
        assert shown == set(HARD_WON)  # the whole pool, each number shown
        await bo.register("bo")
        theirs = await bo.request("new_game", level="hard", winnable=True)
        assert theirs["type"] == "game", theirs  # the pool spent: one found for them now
        live = hard_pool.service.cached(theirs["game"])
        assert live is not None and live.record.deal not in shown
        assert hard_pool.service.pools.count("hard") == 0
    finally:
        await eve.close()
        await bo.close()


async def test_winnable_statistics_are_a_row_of_their_own(hard_pool: ScorpionServer) -> None:
    bo = await Client.connect(f"ws://127.0.0.1:{hard_pool.port}/")
    try:
        await bo.register("bo")
        random_game = (await bo.request("new_game", level="hard", deal=1))["game"]
        await bo.request("resign", game=random_game)
        assert hard_pool.service is not None
        played = await play_by_hints(bo, hard_pool.service, "hard", winnable=True)
        assert played.won, played.fault
        rows = (await bo.request("stats", level="hard"))["stats"]
        assert [(r["winnable"], r["wins"], r["losses"], r["current_streak"]) for r in rows] == [
            (False, 0, 1, 0),
            (True, 1, 0, 1),
        ]
        everything = (await bo.request("stats"))["stats"]
        assert [(r["level"], r["winnable"]) for r in everything if r["level"] == "hard"] == [
            ("hard", False),
            ("hard", True),
        ]
        assert sum(r["winnable"] for r in everything) == 1
    finally:
        await bo.close()


async def test_the_finder_grows_every_short_pool_with_won_deals(settings: Settings) -> None:
    server = await serve(settings, WinnablePools())
    try:
        assert server.store is not None and server.solver is not None
        targets = {"hard": 2, "three-blind-mice": 1}
        finder = WinnableDealFinder(server.store, server.solver, WinnablePools(), targets)
        finder.start()
        await asyncio.wait_for(finder.wait(), TIMEOUT * 3)
        for level, count in targets.items():
            found = await server.store.easy_deals(level)
            assert len(found) == count
            assert all(verify_deal(deal, get_level(level), 1000) for deal in found)
        kept = WinnablePools()
        again = WinnableDealFinder(server.store, server.solver, kept, targets)
        await again.load()
        assert kept.count("hard") == 2 and kept.count("three-blind-mice") == 1
        assert kept.count("medium") == kept.count("easy")  # the same rules, one pool
    finally:
        await server.stop()


async def test_the_target_counts_what_other_nodes_found(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(server.winnable_pools, "REFRESH_S", 0.0)  # count them before each try
    node = await serve(settings, WinnablePools())
    try:
        assert node.store is not None and node.solver is not None
        targets = {"hard": 2}
        other = WinnableDealFinder(node.store, node.solver, WinnablePools(), targets)
        await other.load()  # started before the first node found anything
        first = WinnableDealFinder(node.store, node.solver, WinnablePools(), targets)
        first.start()
        await asyncio.wait_for(first.wait(), TIMEOUT * 3)
        other.start()
        await asyncio.wait_for(other.wait(), TIMEOUT)
        assert (first.found, other.found) == (2, 0)
        assert len(await node.store.easy_deals("hard")) == 2
    finally:
        await node.stop()


def test_every_level_has_a_pool() -> None:
    pools = WinnablePools()
    assert {pools.count(level) >= 0 for level in LEVEL_NAMES} == {True}
    assert pools.draw("relaxed", random.Random(1)) is None
