"""Whole games through the protocol: a win, shared streams, stale and retries, abandoning."""

from __future__ import annotations

from typing import Any

from engine.cards import card_str
from engine.deal import deal_layout
from engine.levels import get_level
from engine.replay import verify
from engine.solver.easy import shipped_easy_deals
from engine.solver.search import solve
from engine.state import State
from protocol import validate_message
from tests.server.client import Client
from tests.server.conftest import Running


def winning_line(level: str, deal: int) -> list[dict[str, Any]]:
    """The solver's winning actions for ``deal`` as request fields."""
    rules = get_level(level)
    verdict = solve(State.from_deal(deal_layout(rules.layout, deal)), rules, budget_ms=5000)
    assert verdict.result == "won"
    steps: list[dict[str, Any]] = []
    for action in verdict.actions:
        if action.type == "deal":
            steps.append({"type": "deal"})
        else:
            assert action.card is not None
            steps.append({"type": "move", "card": card_str(action.card), "to": action.to})
    return steps


async def play(client: Client, game: int, v: int, step: dict[str, Any]) -> dict[str, Any]:
    fields = {key: value for key, value in step.items() if key != "type"}
    return await client.request(step["type"], game=game, v=v, **fields)


async def test_a_whole_game_won_through_the_protocol(server: Running) -> None:
    deal = shipped_easy_deals()[0]  # easy = medium rules + solver-picked deals
    ada = await server.player("ada")
    start = await ada.request("new_game", level="medium", deal=deal)
    assert start["type"] == "game" and start["view"]["deal"] == deal
    game, v = start["game"], start["v"]
    for step in winning_line("medium", deal):
        reply = await play(ada, game, v, step)
        assert reply["type"] == "ack", reply
        v = reply["v"]
    pushes = await ada.events_until(v)
    won = [event for push in pushes for event in push.get("events", []) if event["type"] == "won"]
    assert len(won) == 1 and won[0]["stats"]["wins"] == 1
    assert won[0]["stats"]["level"] == "medium"
    stats = await ada.request("stats", level="medium")
    assert stats["stats"][0]["wins"] == 1 and stats["stats"][0]["games"] == 1
    over = await ada.request("deal", game=game, v=v)
    assert over["code"] == "game_over"
    replay = await ada.request("replay", game=game)
    code, checked = verify(replay["replay"])
    assert code == 0 and checked["won"] is True
    result = replay["result"]
    assert result["won"] is True
    for key in ("score", "moves", "undos", "hints", "suits_removed"):
        assert checked[key] == result[key], key
    for frame in ada.frames:
        validate_message(frame)


async def test_two_connections_see_the_same_events(server: Running) -> None:
    first = await server.player("bea")
    start = await first.request("new_game", level="hard", deal=1)
    game = start["game"]
    second = await server.connect()
    await second.hello(first.token)
    opened = await second.request("open_game", game=game)
    # The clock already runs for the first connection: the snapshot says so.
    assert opened["view"] == {
        **start["view"],
        "time_ms": opened["view"]["time_ms"],
        "running": True,
    }
    first.drain()
    v = 0
    steps: list[tuple[Client, dict[str, Any]]] = [
        (first, {"type": "move", "card": "7C", "to": 5}),
        (second, {"type": "hint"}),
        (first, {"type": "undo"}),
        (second, {"type": "deal"}),
        (first, {"type": "restart"}),
    ]
    for client, step in steps:
        if step["type"] == "hint":
            reply = await client.request("hint", game=game)
        else:
            reply = await play(client, game, v, step)
        assert reply["v"] == v + 1, reply
        v = reply["v"]
    one = [m for m in await first.events_until(v) if m["type"] == "events"]
    two = [m for m in await second.events_until(v) if m["type"] == "events"]
    not_clock = [m for m in one if m["events"][0]["type"] != "clock"]
    assert [m["v"] for m in not_clock] == [1, 2, 3, 4, 5]
    assert not_clock == [m for m in two if m["events"][0]["type"] != "clock"]


async def test_stale_and_retries(server: Running) -> None:
    cleo = await server.player("cleo")
    game = (await cleo.request("new_game", level="hard", deal=1))["game"]
    ack = await cleo.request("move", id_="m1", game=game, v=0, card="7C", to=5)
    assert ack == {"type": "ack", "re": "m1", "game": game, "v": 1}
    again = await cleo.request("move", id_="m1", game=game, v=0, card="7C", to=5)
    assert again == ack
    stale = await cleo.request("move", id_="m2", game=game, v=0, card="7C", to=5)
    assert stale["code"] == "stale" and stale["v"] == 1
    other = await server.connect()
    await other.hello(cleo.token)
    unopened = await other.request("move", id_="m1", game=game, v=0, card="7C", to=5)
    assert unopened["code"] == "not_open"
    await other.request("open_game", game=game, since=0)
    retried = await other.request("move", id_="m1", game=game, v=0, card="7c", to=5)
    assert retried == ack
    view = (await other.request("open_game", game=game))["view"]
    assert view["moves"] == 1 and view["undo_depth"] == 1
    caught = await other.request("open_game", game=game, since=0)
    assert caught["type"] == "catch_up" and [b["v"] for b in caught["events"]] == [1]
    assert caught["events"][0]["events"][0] == {
        "type": "moved",
        "card": "7C",
        "from": 7,
        "to": 5,
        "count": 7,
    }
    ahead = await other.request("open_game", game=game, since=5)
    assert ahead["type"] == "game"


async def test_two_devices_of_one_player_number_their_requests_apart(server: Running) -> None:
    """PROTOCOL.md sections 2 and 5: a request id is new within the game across all the
    player's connections (a retry is recognised on any of them), so each device numbers
    from its own random start or prefix; ids that two devices both count from 1 can
    meet, and then the one behind reads ``id_reused`` where it would read ``stale``."""
    phone = await server.player("fay")
    game = (await phone.request("new_game", level="hard", deal=1))["game"]
    laptop = await server.connect()
    await laptop.hello(phone.token)
    await laptop.request("open_game", game=game)
    # Numbered apart: the device that is behind reads stale, a resend its ack anywhere.
    played = await phone.request("move", id_="p7q-1", game=game, v=0, card="7C", to=5)
    assert played == {"type": "ack", "re": "p7q-1", "game": game, "v": 1}
    behind = await laptop.request("deal", id_="x2m-1", game=game, v=0)
    assert (behind["code"], behind["v"]) == ("stale", 1)
    resent = await laptop.request("move", id_="p7q-1", game=game, v=0, card="7C", to=5)
    assert resent == {**played, "re": "p7q-1"}
    # Both counting from 1: the device behind repeats the id that made version 2.
    assert (await phone.request("undo", id_=1, game=game, v=1))["v"] == 2
    met = await laptop.request("deal", id_=1, game=game, v=1)
    assert met["code"] == "id_reused"
    assert (await laptop.request("open_game", game=game))["v"] == 2  # nothing applied


async def test_abandoning_loses_on_its_own_level_only(server: Running) -> None:
    dan = await server.player("dan")
    first = await dan.request("new_game", level="hard", deal=3)
    watcher = await server.connect()
    await watcher.hello(dan.token)
    await watcher.request("open_game", game=first["game"])
    second = await dan.request("new_game", level="classic", deal=4)
    assert second["lost"] == first["game"]
    lost = [m for m in await watcher.events_until(1) if m["type"] == "events"]
    assert lost[-1]["v"] == 1 and lost[-1]["events"] == [
        {"type": "game_lost", "reason": "abandoned", "deal": 3}
    ]
    hard = (await dan.request("stats", level="hard"))["stats"][0]
    classic = (await dan.request("stats", level="classic"))["stats"][0]
    assert (hard["games"], hard["losses"], hard["wins"]) == (1, 1, 0)
    assert (classic["games"], classic["losses"]) == (0, 0)
    games = (await dan.request("games"))["games"]
    assert [(g["game"], g["status"]) for g in games] == [
        (second["game"], "active"),
        (first["game"], "lost"),
    ]
    over = await dan.request("move", game=first["game"], v=1, card="7C", to=5)
    assert over["code"] == "game_over"
    resigned = await dan.request("resign", game=second["game"])
    assert resigned["type"] == "ack" and resigned["v"] == 1
    again = await dan.request("resign", game=second["game"])
    assert again["code"] == "game_over"
    assert (await dan.request("stats", level="classic"))["stats"][0]["losses"] == 1
    replay = await dan.request("replay", game=second["game"])
    assert replay["result"]["won"] is False and replay["replay"]["deal"] == 4


async def test_easy_games_hide_their_deal(server: Running) -> None:
    eve = await server.player("eve")
    refused = await eve.request("new_game", level="easy", deal=5)
    assert refused["code"] == "forbidden"
    start = await eve.request("new_game", level="easy")
    assert start["view"]["deal"] is None
    listed = (await eve.request("games"))["games"]
    assert listed[0]["deal"] is None
    assert (await eve.request("replay", game=start["game"]))["replay"] is None
    welcome = await eve.hello(eve.token)
    assert welcome["games"][0]["deal"] is None
