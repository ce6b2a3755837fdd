"""A finished game's replay verifies to the server's result, however the game ended.

Timed scoring (R24) takes 30 points for every full 30 seconds of play, so a game
resigned or abandoned after sitting idle scores less than at its last action: the
replay carries the play time the game ended at (``end_t``) and ``verify`` gives the
score there as ``score_at_end`` (its ``score`` is at the last action's ``t``).
"""

from __future__ import annotations

from typing import Any

import pytest

from engine.replay import verify
from engine.solver.easy import shipped_easy_deals
from tests.server.client import Client
from tests.server.conftest import Running
from tests.server.test_play import play, winning_line

IDLE_MS = 35_000  # more than one full 30 seconds: costs 30 points under timed scoring


def sit_idle(server: Running, game: int, ms: int = IDLE_MS) -> None:
    """Let ``ms`` of play time pass on ``game``'s clock at once."""
    service = server.server.service
    assert service is not None
    service._games[game].clock.base_ms += ms


async def replay_of(client: Client, game: int) -> tuple[dict[str, Any], dict[str, Any]]:
    reply = await client.request("replay", game=game)
    assert reply["type"] == "replay" and reply["replay"] is not None, reply
    return reply["replay"], reply["result"]


def assert_verifies_to(document: dict[str, Any], result: dict[str, Any]) -> None:
    code, checked = verify(document)
    assert code == 0, checked
    for key in ("won", "moves", "undos", "hints", "suits_removed"):
        assert checked[key] == result[key], (key, checked, result)
    assert checked["score_at_end"] == result["score"], (checked, result)  # at end_t


async def start_and_move(server: Running, client: Client, level: str) -> int:
    """A game with two moves of 10 timed points each, then idle for ``IDLE_MS``."""
    game = int((await client.request("new_game", level=level, deal=1))["game"])
    assert (await client.request("move", game=game, v=0, card="7C", to=5))["type"] == "ack"
    assert (await client.request("deal", game=game, v=1))["type"] == "ack"
    sit_idle(server, game)
    return game


@pytest.mark.parametrize("level", ["hard", "classic"])
async def test_a_game_resigned_after_sitting_idle_verifies_to_its_result(
    server: Running, level: str
) -> None:
    ada = await server.player("ada")
    game = await start_and_move(server, ada, level)
    assert (await ada.request("resign", game=game))["type"] == "ack"
    document, result = await replay_of(ada, game)
    assert result["time_ms"] >= IDLE_MS
    assert document["end_t"] == result["time_ms"]
    if level == "hard":  # two moves, less 30 for every full 30 seconds, never below 0
        assert result["score"] == max(0, 20 - 30 * (result["time_ms"] // 30_000))
    assert_verifies_to(document, result)


@pytest.mark.parametrize("level", ["hard", "classic"])
async def test_a_game_abandoned_after_sitting_idle_verifies_to_its_result(
    server: Running, level: str
) -> None:
    bea = await server.player("bea")
    game = await start_and_move(server, bea, level)
    assert (await bea.request("new_game", level=level, deal=2))["type"] == "game"
    document, result = await replay_of(bea, game)
    assert document["end_t"] == result["time_ms"] and not result["won"]
    assert_verifies_to(document, result)


async def test_a_game_resigned_on_another_connection_after_a_restart_verifies(
    server: Running,
) -> None:
    """The time banked when the last connection left, and read back after a restart."""
    cleo = await server.player("cleo")
    game = await start_and_move(server, cleo, "hard")
    token = cleo.token
    await cleo.close()
    await server.restart()
    again = await server.connect()
    await again.hello(token)
    await again.request("open_game", game=game)
    sit_idle(server, game)
    assert (await again.request("resign", game=game))["type"] == "ack"
    document, result = await replay_of(again, game)
    assert result["time_ms"] >= 2 * IDLE_MS
    assert_verifies_to(document, result)


async def test_a_game_won_after_sitting_idle_verifies_to_its_result(server: Running) -> None:
    deal = shipped_easy_deals()[0]
    dora = await server.player("dora")
    game = (await dora.request("new_game", level="medium", deal=deal))["game"]
    v = 0
    for step in winning_line("medium", deal):
        sit_idle(server, game, 1_000)
        reply = await play(dora, game, v, step)
        assert reply["type"] == "ack", reply
        v = reply["v"]
    document, result = await replay_of(dora, game)
    assert result["won"] and document["end_t"] == result["time_ms"]
    assert document["end_t"] == document["actions"][-1]["t"]
    assert_verifies_to(document, result)


async def test_every_page_of_a_replay_carries_the_end_time(server: Running) -> None:
    eve = await server.player("eve")
    game = await start_and_move(server, eve, "hard")
    assert (await eve.request("resign", game=game))["type"] == "ack"
    first = await eve.request("replay", game=game)
    later = await eve.request("replay", game=game, **{"from": 1})
    assert first["replay"]["end_t"] == later["replay"]["end_t"] == first["result"]["time_ms"]
    assert [a["type"] for a in later["replay"]["actions"]] == ["deal"]
