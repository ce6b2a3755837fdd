"""The pools of winnable deals in the store: kept per level, each dealt once."""

from __future__ import annotations

import asyncio

from server.store import Store


async def test_a_pooled_deal_is_claimed_once(store: Store) -> None:
    assert await store.add_easy_deal("hard", 5)
    assert not await store.add_easy_deal("hard", 5)  # known already
    assert await store.add_easy_deal("classic", 5)  # another level's pool
    claims = await asyncio.gather(*(store.claim_easy_deal("hard", 5) for _ in range(4)))
    assert sorted(claims) == [False, False, False, True]  # of several at once, one
    assert await store.easy_deals("hard") == []
    assert await store.easy_deals("classic") == [5]
    assert not await store.claim_easy_deal("hard", 6)  # never pooled
