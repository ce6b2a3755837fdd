"""The easy level's winnable deals: grown in the background, kept, and fresh for each player."""

from __future__ import annotations

import asyncio
import dataclasses

from engine.solver.easy import WinnableDeals, shipped_easy_deals, verify_deal
from server.app import ScorpionServer, migrate
from server.config import Settings
from tests.server.client import TIMEOUT, Client


async def prepared(settings: Settings) -> Settings:
    if not settings.is_sqlite:
        await migrate(settings)
    return settings


async def test_the_pool_grows_is_kept_and_holds_only_winnable_deals(settings: Settings) -> None:
    await prepared(settings)
    shipped = shipped_easy_deals()
    grow = dataclasses.replace(settings, easy_pool=len(shipped) + 3)
    first = ScorpionServer(grow, easy_deals=WinnableDeals(shipped))
    await first.start()
    try:
        assert first.finder is not None and first.store is not None
        await asyncio.wait_for(first.finder.wait(), TIMEOUT)
        found = await first.store.easy_deals("easy")
    finally:
        await first.stop()
    assert len(found) == 3 and not set(found) & set(shipped)
    assert all(verify_deal(deal) for deal in found)
    again = ScorpionServer(grow, easy_deals=WinnableDeals(shipped))
    await again.start()
    try:
        assert again.finder is not None and again.finder.found == 0  # already full
        assert again.service is not None
        assert set(found) <= set(again.service.easy_deals._numbers)
    finally:
        await again.stop()


async def test_new_easy_games_avoid_the_players_past_deals(settings: Settings) -> None:
    await prepared(settings)
    two = shipped_easy_deals()[:2]
    server = ScorpionServer(settings, easy_deals=WinnableDeals(two))
    await server.start()
    client = await Client.connect(f"ws://127.0.0.1:{server.port}/")
    try:
        await client.register("eve")
        deals = []
        for _ in range(2):
            start = await client.request("new_game", level="easy")
            assert (
                start["type"] == "game" and start["view"]["deal"] is None
            )  # hidden while unfinished
            assert server.service is not None
            live = server.service.cached(start["game"])
            assert live is not None
            deals.append(live.record.deal)
        assert sorted(deals) == sorted(two)  # the second game is the other deal
        third = await client.request("new_game", level="easy")
        assert third["type"] == "game"  # all dealt: one found now, for this game alone
        assert server.service is not None
        cached = server.service.cached(third["game"])
        assert cached is not None and cached.record.deal not in two
    finally:
        await client.close()
        await server.stop()


async def test_a_dealt_deal_leaves_the_pool_and_the_finder_fills_it_again(
    settings: Settings,
) -> None:
    await prepared(settings)
    server = ScorpionServer(dataclasses.replace(settings, easy_pool=2))  # pools start empty
    await server.start()
    client = await Client.connect(f"ws://127.0.0.1:{server.port}/")
    try:
        assert server.finder is not None and server.store is not None
        assert server.service is not None
        await asyncio.wait_for(server.finder.wait(), TIMEOUT)
        pooled = set(await server.store.easy_deals("easy"))
        assert len(pooled) == 2
        await client.register("ida")
        start = await client.request("new_game", level="easy")
        live = server.service.cached(start["game"])
        assert live is not None and live.record.deal in pooled
        assert live.record.deal not in await server.store.easy_deals("easy")  # on every node
        await asyncio.wait_for(server.finder.wait(), TIMEOUT)
        refilled = await server.store.easy_deals("easy")
        assert len(refilled) == 2 and live.record.deal not in refilled
        assert server.service.pools.count("easy") == 2
    finally:
        await client.close()
        await server.stop()
