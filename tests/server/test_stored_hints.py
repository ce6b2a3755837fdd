"""A hint's suggestion is stored with its action: history, restarts and replays give it back."""

from __future__ import annotations

import dataclasses

import pytest

from engine.cards import parse_card
from engine.game import Game
from engine.hints import suggest
from engine.levels import LEVELS
from engine.replay import verify
from server.config import Settings
from tests.server.conftest import Running

DEAL = 3  # on medium the solver's first step here is not the heuristic's


def test_the_chosen_deal_tells_the_solver_from_the_heuristic() -> None:
    heuristic = suggest(Game(LEVELS["medium"], DEAL).state, LEVELS["medium"])
    assert heuristic.card != parse_card("4H")  # 4H: the solver's first step (below)


async def test_a_hint_reads_back_the_same_after_a_restart(settings: Settings) -> None:
    server = Running(dataclasses.replace(settings, hint_budget_ms=2000))
    await server.start()
    try:
        zoe = await server.player("zoe")
        token = zoe.token
        game = (await zoe.request("new_game", level="medium", deal=DEAL))["game"]
        hint = await zoe.request("hint", game=game)
        assert hint["v"] == 1 and (hint["card"], hint["to"]) == ("4H", 6)
        given = {"type": "hint", "action": "move", "card": "4H", "to": 6}
        await server.restart()
        again = await server.connect()
        await again.hello(token)
        caught = await again.request("open_game", game=game, since=0)
        [batch] = caught["events"]
        assert batch["events"][0] == given
        await again.request("resign", game=game)
        replay = (await again.request("replay", game=game))["replay"]
        assert replay["actions"][0]["suggested"] == {"action": "move", "card": "4H", "to": 6}
    finally:
        await server.stop()


# How migration 0003 leaves a hint stored before it: no suggestion.
_UNKEPT = "UPDATE game_actions SET hint_action = NULL, hint_card = NULL, hint_to = NULL,"
_UNKEPT += " hint_reason = NULL WHERE seq = 1"


@pytest.mark.parametrize("finished_first", [False, True], ids=["active", "finished"])
async def test_a_hint_stored_without_its_suggestion_is_exported_without_one(
    server: Running, finished_first: bool
) -> None:
    ida = await server.player("ida")
    game = (await ida.request("new_game", level="medium", deal=DEAL))["game"]
    for _ in range(2):
        assert (await ida.request("hint", game=game))["type"] == "hint"
    if finished_first:
        await ida.request("resign", game=game)
    token = ida.token
    await server.restart_after(_UNKEPT)
    ida = await server.connect()
    await ida.hello(token)
    caught = await ida.request("open_game", game=game, since=0)
    assert [batch["events"][0]["type"] for batch in caught["events"][:2]] == ["hint", "hint"]
    if not finished_first:
        await ida.request("resign", game=game)
    replay = (await ida.request("replay", game=game))["replay"]
    first, second = replay["actions"]
    assert first == {"type": "hint", "t": first["t"]}  # not the heuristic's, as if kept
    assert "suggested" in second
    assert verify(replay)[1]["hints"] == 2
