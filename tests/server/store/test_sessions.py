"""Token expiry and rotation in the store."""

from __future__ import annotations

import asyncio
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from server.store import Player, Store, players


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
        assert await store.rotate_token(token, max_age=day) is None  # not made a fresh one
        assert await store.player_for_token(token) == player  # nor revoked
        rotated = await store.rotate_token(token)
        assert rotated is not None and await store.player_for_token(rotated, day) == player
        signed_in = await store.sign_in(rotated, day)  # an expiry counts from the rotation
        assert signed_in is not None and signed_in.issued == now[0]
        now[0] += timedelta(hours=23)
        assert await store.rotate_token(rotated, max_age=day) is not None
    finally:
        await store.close()


async def test_a_rotation_outlasts_another_writer_on_sqlite(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write transaction that reads first holds SQLite's write lock from its start.

    Begun deferred, its read took a snapshot, and another connection's commit before
    its first write made that write fail at once ("database is locked": the snapshot
    is stale, so SQLite does not wait), and the player was told ``unavailable``. The
    solver's pool of deals writes in the background, so this happened to most
    rotations while the pools filled.
    """
    path = tmp_path / "store.db"
    store = Store.connect(f"sqlite+aiosqlite:///{path}")
    try:
        await store.upgrade()
        player, token = await store.create_player("eve")
        fetch = players.fetch_player_by_token
        others: list[str] = []

        async def read_then_let_another_write(*args: Any, **kwargs: Any) -> Player | None:
            found = await fetch(*args, **kwargs)
            other = sqlite3.connect(path, timeout=0, isolation_level=None)
            try:
                other.execute(
                    "INSERT INTO easy_deals (level, deal, found_at)"
                    " VALUES ('hard', 7, '2026-01-01')"
                )
                others.append("committed")
            except sqlite3.OperationalError as exc:
                others.append(str(exc))  # the rotation holds the lock: it waits its turn
            finally:
                other.close()
            return found

        monkeypatch.setattr(players, "fetch_player_by_token", read_then_let_another_write)
        rotated = await store.rotate_token(token)
        monkeypatch.undo()
        assert others == ["database is locked"]
        assert rotated is not None and await store.player_for_token(rotated) == player
        assert await store.player_for_token(token) is None
    finally:
        await store.close()


async def test_signing_out_everywhere_during_a_rotation_leaves_no_token(database_url: str) -> None:
    """Revoking every token of a player while a rotation of one of them is under way:
    whichever commits first, no token of the player is left. On PostgreSQL the
    revocation's delete did not see the rotation's new token (not yet committed), the
    rotation's delete found the old one gone too late to matter, and the new token
    outlived "sign out everywhere" (2 to 4 of 12 in one tester's runs)."""
    store = Store.connect(database_url)
    try:
        await store.upgrade()
        left = []
        for round_ in range(20):
            player, token = await store.create_player(f"eve{round_}")
            await asyncio.gather(store.rotate_token(token), store.revoke_tokens(player.id))
            left += [round_] * await store.revoke_tokens(player.id)  # what outlived it
        assert left == []
    finally:
        await store.close()
