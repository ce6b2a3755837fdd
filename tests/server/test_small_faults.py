"""Four small faults of a finished or odd game: each message and figure says what is true."""

from __future__ import annotations

import asyncio

from engine.game import Game
from engine.levels import LEVELS
from tests.server.conftest import Running


async def test_a_resigned_game_is_not_called_won(server: Running) -> None:
    una = await server.player("una")
    game = (await una.request("new_game", level="hard", deal=1))["game"]
    await una.request("resign", game=game)
    reply = await una.request("move", game=game, v=1, card="7C", to=5)
    assert reply["code"] == "game_over"
    assert "won" not in reply["message"] and "resigned" in reply["message"]


async def test_an_abandoned_game_is_not_called_won(server: Running) -> None:
    vic = await server.player("vic")
    game = (await vic.request("new_game", level="hard", deal=1))["game"]
    await vic.request("new_game", level="hard", deal=2)
    reply = await vic.request("hint", game=game)
    assert reply["code"] == "game_over"
    assert "won" not in reply["message"] and "abandoned" in reply["message"]


async def test_dealing_on_three_blind_mice_says_there_is_no_stock(server: Running) -> None:
    wes = await server.player("wes")
    game = (await wes.request("new_game", level="three-blind-mice", deal=1))["game"]
    reply = await wes.request("deal", game=game, v=0)
    assert reply["code"] == "stock_empty"
    assert "already" not in reply["message"] and "no stock" in reply["message"]
    hard = (await wes.request("new_game", level="hard", deal=1))["game"]
    await wes.request("deal", game=hard, v=0)
    again = await wes.request("deal", game=hard, v=1)
    assert again["code"] == "stock_empty" and "already" in again["message"]


async def test_a_lost_easy_games_view_shows_its_deal(server: Running) -> None:
    xia = await server.player("xia")
    start = await xia.request("new_game", level="easy")
    game = start["game"]
    assert start["view"]["deal"] is None
    await xia.request("resign", game=game)
    view = (await xia.request("open_game", game=game))["view"]
    [summary] = (await xia.request("games"))["games"]
    replay = await xia.request("replay", game=game)
    assert view["deal"] is not None
    assert view["deal"] == summary["deal"] == replay["replay"]["deal"]


async def test_a_lost_games_play_time_is_one_figure_everywhere(server: Running) -> None:
    yan = await server.player("yan")
    game = (await yan.request("new_game", level="hard", deal=1))["game"]
    await asyncio.sleep(0.03)
    await yan.request("resign", game=game)
    await asyncio.sleep(0.03)
    clocks = [
        event["time_ms"]
        for push in yan.drain()
        for event in push.get("events", [])
        if event["type"] == "clock" and not event["running"]
    ]
    view = (await yan.request("open_game", game=game))["view"]
    [summary] = (await yan.request("games"))["games"]
    result = (await yan.request("replay", game=game))["result"]
    assert clocks == [result["time_ms"]]
    assert view["time_ms"] == summary["time_ms"] == result["time_ms"] >= 30


def test_the_engine_words_stock_empty_by_level() -> None:
    mice = Game(LEVELS["three-blind-mice"], 1)
    try:
        mice.deal(0)
    except Exception as exc:
        assert "no stock" in str(exc)
    else:
        raise AssertionError("three-blind-mice has no stock to deal")
