"""Notifications from other nodes missed (the change listener reconnected): what is read.

``GameService.remote_reset`` used to read every game in memory again, finished ones
included, and a read the store could not answer was tried again every second: during
an outage a node with 646 games cached asked the database 640 times a second.
"""

from __future__ import annotations

import asyncio
import time
from datetime import timedelta
from typing import Any

import pytest

from server.live import CATCH_UP_WAIT_S
from server.store import StoreUnavailable
from tests.server.conftest import Running


@pytest.mark.parametrize("settings", ["sqlite"], indirect=True)
async def test_a_reset_reads_only_open_unfinished_games_and_backs_off_in_an_outage(
    server: Running, monkeypatch: pytest.MonkeyPatch
) -> None:
    service, store = server.server.service, server.server.store
    assert service is not None and store is not None
    ada = await server.player("ada")
    finished = []
    for deal in (1, 2, 3):
        game = (await ada.request("new_game", level="hard", deal=deal))["game"]
        assert (await ada.request("resign", game=game))["type"] == "ack"
        finished.append(game)
    bob = await server.player("bob")  # one unfinished game a player: a new one loses it
    closed = (await bob.request("new_game", level="hard", deal=4))["game"]
    assert (await bob.request("close_game", game=closed))["type"] == "ack"
    playing = (await ada.request("new_game", level="hard", deal=5))["game"]
    assert all(service.cached(game) is not None for game in (*finished, closed, playing))

    asked: list[tuple[int, float]] = []
    loop = asyncio.get_running_loop()

    async def down(game_id: int, *args: Any, **kwargs: Any) -> Any:
        asked.append((game_id, loop.time()))
        raise StoreUnavailable("down")

    monkeypatch.setattr(store, "load_game", down)
    start = loop.time()
    service.remote_reset()
    await asyncio.sleep(3.2)
    assert {game for game, _ in asked} == {playing}, asked  # the finished and closed: none
    assert 2 <= len(asked) <= 3, asked  # at once, within 1 s, then within 2 s more
    gaps = [b - a for (_, a), (_, b) in zip([(0, start), *asked], asked, strict=False)]
    assert gaps[0] < 0.5 and all(gap >= 0.45 for gap in gaps[1:]), gaps
    assert service.cached(closed) is not None  # checked against the log when opened

    monkeypatch.undo()  # the store is back: the game plays on, and the closed one opens
    assert (await ada.request("deal", game=playing, v=0))["type"] == "ack"
    reopened = await bob.request("open_game", game=closed)
    assert reopened["type"] == "game" and reopened["v"] == 0


@pytest.mark.parametrize("settings", ["sqlite"], indirect=True)
async def test_notifications_in_an_outage_add_no_reads_beyond_one_a_second(
    server: Running, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each notification heard while the store could not be read started another
    retry, and each retry went on by itself: twenty notifications, twenty reads at
    once and twenty chains of retries that kept reading after the notifications
    stopped. Now a game reads at most once a second for them, with one retry."""
    service, store = server.server.service, server.server.store
    assert service is not None and store is not None
    ada = await server.player("ada")
    game = (await ada.request("new_game", level="hard", deal=5))["game"]
    asked: list[float] = []
    loop = asyncio.get_running_loop()

    async def down(game_id: int, *args: Any, **kwargs: Any) -> Any:
        asked.append(loop.time())
        raise StoreUnavailable("down")

    monkeypatch.setattr(store, "load_game", down)
    start = loop.time()
    for _ in range(20):  # another node commits every 0.1 s
        service.remote_changed([game])
        await asyncio.sleep(0.1)
    during = len(asked)
    assert 1 <= during <= 4, [round(t - start, 2) for t in asked]
    await asyncio.sleep(3.0)  # quiet: only the one retry goes on, 2 then 4 s apart at most
    after = len(asked) - during
    assert after <= 2, [round(t - start, 2) for t in asked]
    monkeypatch.undo()
    service.remote_changed([game])  # the store is back: the next notification reads it
    assert (await ada.request("deal", game=game, v=0))["type"] == "ack"


@pytest.mark.parametrize("settings", ["sqlite"], indirect=True)
async def test_a_notification_just_after_a_failed_read_is_read_within_a_second(
    server: Running, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The last move before the store came back was heard within a second of a failed
    read: it was left to the backoff's retry, due up to 30 s later, and a watcher on
    this node saw it that late."""
    service, store = server.server.service, server.server.store
    assert service is not None and store is not None
    ada = await server.player("ada")
    game = (await ada.request("new_game", level="hard", deal=5))["game"]
    loop = asyncio.get_running_loop()
    real = store.load_game
    up = False
    read_ok: list[float] = []

    async def flaky(game_id: int, *args: Any, **kwargs: Any) -> Any:
        if not up:
            raise StoreUnavailable("down")
        read_ok.append(loop.time())
        return await real(game_id, *args, **kwargs)

    monkeypatch.setattr(store, "load_game", flaky)
    for _ in range(40):  # four seconds of moves elsewhere: the backoff grows
        service.remote_changed([game])
        await asyncio.sleep(0.1)
    live = service.cached(game)
    assert live is not None
    async with asyncio.timeout(5):  # between a retry's start and its failure, none is due
        while live.retry_at is None:
            await asyncio.sleep(0.01)
    up = True
    heard = time.monotonic()
    service.remote_changed([game])  # the last move, heard just after a failed read
    # read at once, or at the retry due within a second of the failure (not the backoff's)
    assert live.syncing or (
        live.retry_at is not None and live.retry_at <= heard + CATCH_UP_WAIT_S
    ), (live.retry_at, heard)
    async with asyncio.timeout(10):  # and read then: 1.1 s on a machine not overloaded
        while not read_ok:
            await asyncio.sleep(0.01)


# -- tokens: revocations missed ----------------------------------------------------------


@pytest.mark.parametrize("settings", ["sqlite"], indirect=True)
async def test_a_reset_signs_out_the_connections_whose_token_was_revoked_unheard(
    server: Running, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Revocations told while the node was not listening are lost: after a reset the
    node reads which of its connections' tokens the store still has (one read, tried
    again while the store cannot answer) and signs out the others."""
    service, store = server.server.service, server.server.store
    assert service is not None and store is not None
    ada = await server.player("ada")
    assert ada.token is not None and ada.player is not None
    game = (await ada.request("new_game", level="hard", deal=5))["game"]
    phone = await server.connect()
    assert (await phone.hello(await store.issue_token(ada.player["id"])))["type"] == "welcome"
    bob = await server.player("bob")
    assert await store.revoke_token(ada.token)  # as another node would, unheard here
    real = store.known_tokens
    asked: list[set[str]] = []

    async def flaky(hashes: Any) -> set[str]:
        asked.append(set(hashes))
        if len(asked) == 1:
            raise StoreUnavailable("down")
        return await real(hashes)

    monkeypatch.setattr(store, "known_tokens", flaky)
    service.remote_reset()
    service.remote_reset()  # while the first check runs: no second one at once
    async with asyncio.timeout(5):
        while service._token_check is not None:
            await asyncio.sleep(0.05)
    # Every token here in one read; it failed, and was read again once, a while later.
    assert len(asked) == 2 and len(asked[0]) == 3 and asked[0] == asked[1], asked
    assert (await ada.request("games"))["code"] == "unauthenticated"
    assert service.hub.count(game) == 0
    assert (await phone.request("games"))["type"] == "games"
    assert (await bob.request("games"))["type"] == "games"


@pytest.mark.parametrize("settings", ["sqlite"], indirect=True)
async def test_a_reset_during_a_rotation_leaves_the_rotating_connection_signed_in(
    server: Running, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A check that reads the store after a rotation committed, before the rotating
    connection holds its new token, finds the old one revoked: that connection is
    its rotation's to settle, and it keeps playing on the new token."""
    service, store = server.server.service, server.server.store
    assert service is not None and store is not None
    ada = await server.player("ada")
    rotate = store.rotate_token

    async def rotate_then_reset(
        token: str, given: str | None = None, max_age: timedelta | None = None
    ) -> str | None:
        new = await rotate(token, given, max_age)
        service.remote_reset()
        checking = service._token_check
        assert checking is not None
        await checking
        return new

    monkeypatch.setattr(store, "rotate_token", rotate_then_reset)
    rotated = await ada.request("rotate_token")
    assert rotated["type"] == "token", rotated
    assert (await ada.request("games"))["type"] == "games"
    again = await server.connect()
    assert (await again.hello(rotated["token"]))["type"] == "welcome"
