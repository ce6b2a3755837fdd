"""Token expiry and rotation in the store."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from server.store import Store


async def test_tokens_expire_after_their_age(database_url: str) -> None:
    now = [datetime(2026, 1, 1, tzinfo=UTC)]
    store = Store.connect(database_url, clock=lambda: now[0])
    try:
        await store.upgrade()
        player, token = await store.create_player("eve")
        day = timedelta(days=1)
        assert await store.player_for_token(token, day) == player
        now[0] += timedelta(hours=23)
        assert await store.player_for_token(token, day) == player
        now[0] += timedelta(hours=2)
        assert await store.player_for_token(token, day) is None
        assert await store.player_for_token(token) == player  # no expiry set
        rotated = await store.rotate_token(token)
        assert rotated is not None and await store.player_for_token(rotated, day) == player
    finally:
        await store.close()
