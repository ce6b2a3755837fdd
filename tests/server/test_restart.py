"""A restarted server (same database) continues every game where it stopped."""

from __future__ import annotations

import asyncio
import dataclasses
from collections import Counter
from typing import Any

import pytest

from server.live import LiveGame
from server.service import LOADS_AT_ONCE
from tests.server.client import Client
from tests.server.conftest import Running


async def test_shutdown_closes_connections_with_1001(server: Running) -> None:
    bystander = await Client.connect(server.url)  # not closed by the fixture first
    await bystander.hello()
    await server.restart()
    await bystander.ws.wait_closed()
    assert bystander.ws.close_code == 1001
    await bystander.close()


async def test_restart_mid_game_keeps_state_and_undo(server: Running) -> None:
    jo = await server.player("jo")
    token = jo.token
    start = await jo.request("new_game", level="hard", deal=1)
    game = start["game"]
    assert (await jo.request("move", game=game, v=0, card="7C", to=5))["v"] == 1
    assert (await jo.request("hint", game=game))["v"] == 2
    assert (await jo.request("deal", id_="d1", game=game, v=2))["v"] == 3
    before = (await jo.request("open_game", game=game))["view"]
    await server.restart()
    again = await server.connect()
    welcome = await again.hello(token)
    assert [g["game"] for g in welcome["games"]] == [game]
    assert welcome["games"][0]["v"] == 3
    opened = await again.request("open_game", game=game)
    assert opened["v"] == 3
    after = opened["view"]
    assert after["time_ms"] >= before["time_ms"] - 1000
    assert (before["running"], after["running"]) == (True, False)  # a fresh server's snapshot
    masked = {"time_ms": 0, "score": 0, "running": False}
    assert {**after, **masked} == {**before, **masked}
    caught = await again.request("open_game", game=game, since=1)
    assert [batch["v"] for batch in caught["events"]] == [2, 3]
    retried_first = await again.request("deal", id_="d1", game=game, v=2)
    assert retried_first == {"type": "ack", "re": "d1", "game": game, "v": 3}
    undone = await again.request("undo", game=game, v=3)
    assert undone["v"] == 4
    view = (await again.request("open_game", game=game))["view"]
    assert view["stock"] == 3 and view["undo_depth"] == 1
    retried = await again.request("deal", id_=99, game=game, v=3)
    assert retried["code"] == "stale" and retried["v"] == 4


async def test_players_returning_at_once_load_their_games_a_few_per_turn(
    server: Running, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Loads take turns with the sockets: however many come back, at most
    LOADS_AT_ONCE games are read and replayed in one turn of the event loop."""
    server.settings = dataclasses.replace(server.settings, rate_registrations="off")
    await server.restart()
    tokens = []
    for n in range(24):
        player = await server.player(f"back{n}")
        start = await player.request("new_game", level="hard", deal=1)
        await player.request("move", game=start["game"], v=0, card="7C", to=5)
        tokens.append(player.token)
    await server.restart()
    turns = 0
    loop = asyncio.get_running_loop()

    def count() -> None:  # runs once per turn of the loop
        nonlocal turns
        turns += 1
        loop.call_soon(count)

    loaded_in: list[int] = []
    rebuild = LiveGame.rebuild.__func__  # type: ignore[attr-defined]

    def counted(cls: type[LiveGame], *args: Any) -> LiveGame:
        loaded_in.append(turns)
        return rebuild(cls, *args)  # type: ignore[no-any-return]

    clients = [await server.connect() for _ in tokens]
    welcomes = await asyncio.gather(*(c.hello(t) for c, t in zip(clients, tokens, strict=True)))
    monkeypatch.setattr(LiveGame, "rebuild", classmethod(counted))
    loop.call_soon(count)
    opened = await asyncio.gather(
        *(
            c.request("open_game", game=w["games"][0]["game"])
            for c, w in zip(clients, welcomes, strict=True)
        )
    )
    assert [o["v"] for o in opened] == [1] * len(tokens)
    assert len(loaded_in) == len(tokens)
    assert max(Counter(loaded_in).values()) <= LOADS_AT_ONCE


async def test_a_game_loaded_for_opening_is_read_once(
    server: Running, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Opening a game not in memory reads it once; on a shared store, opening one held in
    memory asks the log for what other nodes may have added (a lost notification)."""
    jo = await server.player("jo")
    start = await jo.request("new_game", level="hard", deal=1)
    await jo.request("move", game=start["game"], v=0, card="7C", to=5)
    token = jo.token
    await server.restart()
    store = server.server.store
    assert store is not None
    reads = 0

    def counting(read: Any) -> Any:
        async def counted(*args: Any) -> Any:
            nonlocal reads
            reads += 1
            return await read(*args)

        return counted

    monkeypatch.setattr(store, "load_game", counting(store.load_game))
    monkeypatch.setattr(store, "restore_game", counting(store.restore_game))
    again = await server.connect()
    await again.hello(token)
    assert (await again.request("open_game", game=start["game"]))["v"] == 1
    assert reads == 1
    assert (await again.request("open_game", game=start["game"]))["v"] == 1
    assert reads == (2 if store.shared else 1)


async def test_a_returning_player_opens_a_listed_game_without_a_read_of_its_owner(
    server: Running, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The welcome's unfinished games are the player's (an owner never changes), so
    opening one reads the game, not its owner; another connection, signed in as
    someone else after that player, is answered as for any foreign game."""
    jo = await server.player("jo")
    game = (await jo.request("new_game", level="hard", deal=1))["game"]
    token = jo.token
    await server.restart()
    store = server.server.store
    assert store is not None
    owners: list[int] = []
    game_owner = store.game_owner

    async def counted(game_id: int) -> int | None:
        owners.append(game_id)
        return await game_owner(game_id)

    monkeypatch.setattr(store, "game_owner", counted)
    again = await server.connect()
    await again.hello(token)
    assert (await again.request("open_game", game=game))["v"] == 0
    assert owners == []
    await again.request("close_game", game=game)
    await again.request("sign_out")
    await again.register("kim")
    refused = await again.request("open_game", game=game)
    assert refused["code"] == "not_found"
    assert owners == [game]
