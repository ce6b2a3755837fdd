"""How many games one connection keeps open (PROTOCOL.md section 4 and 10).

A player has at most one unfinished game (R17); every other game it opens is
finished and never changes again. A connection that opened more than
``OPEN_GAMES_LIMIT`` games kept them all in the server's memory: the cache
evicts no game a connection has open. Past the limit the server now closes
the finished game the connection opened first, never the unfinished one.
"""

from __future__ import annotations

import pytest

from protocol import OPEN_GAMES_LIMIT
from server import service as service_module
from server.service import GameService
from tests.server.conftest import Running, Start


def the_service(server: Running) -> GameService:
    service = server.server.service
    assert service is not None
    return service


async def test_a_connection_keeps_at_most_the_limit_of_games_open(server: Running) -> None:
    player = await server.player("opener")
    games = []
    for deal in range(1, OPEN_GAMES_LIMIT + 6):  # each new game abandons the one before (R17)
        reply = await player.request("new_game", level="hard", deal=deal)
        assert reply["type"] == "game", reply
        games.append(reply["game"])
    service = the_service(server)
    assert player.player is not None
    [session] = service.signed_in.of_player(player.player["id"])
    assert service.hub.games_of(session.outbox) == games[-OPEN_GAMES_LIMIT:]  # oldest went

    # A second connection opens every one of them, the unfinished game first.
    other = await server.connect()
    await other.hello(player.token)
    assert (await other.request("open_game", game=games[-1]))["type"] == "game"
    for game in games[:-1]:
        assert (await other.request("open_game", game=game))["type"] == "game"
    for each in service.signed_in.of_player(player.player["id"]):
        assert len(service.hub.games_of(each.outbox)) == OPEN_GAMES_LIMIT
    # Its unfinished game was opened first, yet stays open: it can still be played.
    hint = await other.request("hint", game=games[-1])
    assert hint["type"] == "hint", hint
    # A finished game it closed answers as a game not open.
    refused = await other.request("resign", game=games[1])
    assert refused["type"] == "error" and refused["code"] == "not_open", refused
    reopened = await other.request("open_game", game=games[1])
    assert reopened["type"] == "game" and reopened["view"]["status"] == "lost"


async def test_an_unfinished_game_out_of_the_cache_for_a_moment_stays_open(
    server: Running, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A game dropped from memory to be reloaded (``_forget``: its memory and the store
    disagreed) is still open on its connections; past the limit only a game known to be
    finished is closed, not one whose state is not in memory just then."""
    monkeypatch.setattr(service_module, "OPEN_GAMES_LIMIT", 2)
    service = the_service(server)
    player = await server.player("keeper")
    games = [
        (await player.request("new_game", level="hard", deal=deal))["game"] for deal in (1, 2, 3)
    ]
    other = await server.connect()
    await other.hello(player.token)
    assert (await other.request("open_game", game=games[-1]))["type"] == "game"  # unfinished
    live = service.cached(games[-1])
    assert live is not None and not live.finished
    service._forget(live)  # as a failed catch-up does, until the game is loaded again
    for game in games[:-1]:
        assert (await other.request("open_game", game=game))["type"] == "game"
    assert player.player is not None
    opened = [
        service.hub.games_of(s.outbox) for s in service.signed_in.of_player(player.player["id"])
    ]
    assert [games[-1], games[1]] in opened, opened  # was [1, 2]: the unfinished one closed


async def test_open_games_stay_beyond_the_cache_size_until_a_game_is_loaded_again(
    start: Start,
) -> None:
    """deploy.md, ``scorpion_games_in_memory``: a game open on a connection is never
    dropped, and a game closed is dropped once another is loaded or started."""
    server = await start(cache_size=1, rate_registrations="off")
    service = the_service(server)
    players, games = [], []
    for deal in range(1, 4):
        player = await server.player(f"p{deal}")
        games.append((await player.request("new_game", level="hard", deal=deal))["game"])
        players.append(player)
    assert service.games_in_memory() == 3
    for player, game in zip(players, games, strict=True):
        assert (await player.request("close_game", game=game))["type"] == "ack"
    assert service.games_in_memory() == 3
    late = await server.player("late")
    started = (await late.request("new_game", level="hard", deal=9))["game"]
    assert service.games_in_memory() == 1 and service.cached(started) is not None
