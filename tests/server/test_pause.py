"""A pause pauses: nothing that changes the game or its clock is taken while it is paused."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from server.store import StoreUnavailable
from tests.server.client import TIMEOUT, Client
from tests.server.conftest import Running


async def test_a_paused_game_refuses_every_action_until_resume(server: Running) -> None:
    pia = await server.player("pia")
    start = await pia.request("new_game", level="hard", deal=1)
    game, v = start["game"], start["v"]
    assert (await pia.request("move", game=game, v=v, card="7C", to=5))["type"] == "ack"
    v += 1
    assert (await pia.request("pause", game=game))["type"] == "ack"
    refused = [
        await pia.request("move", game=game, v=v, card="4S", to=6),
        await pia.request("deal", game=game, v=v),
        await pia.request("undo", game=game, v=v),
        await pia.request("restart", game=game, v=v),
        await pia.request("hint", game=game),
    ]
    for reply in refused:
        assert reply["type"] == "error" and reply["code"] == "paused", reply
    opened = await pia.request("open_game", game=game)
    assert opened["v"] == v and opened["view"]["moves"] == 1 and opened["view"]["hints"] == 0
    assert (await pia.request("resume", game=game))["type"] == "ack"
    assert (await pia.request("undo", game=game, v=v))["type"] == "ack"


async def test_a_retry_of_an_action_applied_before_the_pause_still_gets_its_ack(
    server: Running,
) -> None:
    ray = await server.player("ray")
    start = await ray.request("new_game", level="hard", deal=1)
    game = start["game"]
    first = await ray.request("move", id_="m1", game=game, v=0, card="7C", to=5)
    assert first["type"] == "ack"
    await ray.request("pause", game=game)
    again = await ray.request("move", id_="m1", game=game, v=0, card="7C", to=5)
    assert again == first


async def test_resigning_a_paused_game_is_allowed(server: Running) -> None:
    sam = await server.player("sam")
    game = (await sam.request("new_game", level="hard", deal=1))["game"]
    await sam.request("pause", game=game)
    assert (await sam.request("resign", game=game))["type"] == "ack"
    assert server.server.store is not None
    record = await server.server.store.get_game(game)
    assert record is not None and record.status != "active"
    assert not record.paused, "an ended game is not paused: its row says so too"


async def test_the_play_time_reached_is_stored_with_the_pause_itself(
    server: Running, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not in a save after the ack: a crash right after it would keep the game paused
    with the time of its last action."""
    pia = await server.player("pia")
    start = await pia.request("new_game", level="hard", deal=1)
    game = start["game"]
    assert (await pia.request("move", game=game, v=0, card="7C", to=5))["type"] == "ack"
    await asyncio.sleep(0.3)
    store = server.server.store
    assert store is not None

    async def lost(*_: Any) -> bool:  # the process dies before any later save lands
        return False

    monkeypatch.setattr(store, "save_play_time", lost)
    assert (await pia.request("pause", game=game))["type"] == "ack"
    view = (await pia.request("open_game", game=game))["view"]
    record = await store.get_game(game)
    assert record is not None and record.paused
    assert view["running"] is False and view["time_ms"] >= 300
    assert (record.time_ms, record.score) == (view["time_ms"], view["score"])


async def test_after_a_pause_and_a_resume_the_list_gives_the_running_clock(
    server: Running,
) -> None:
    """The pause moves the row's ``updated_at`` on: the copy held here must know it, or
    the list takes the row for another node's newer change and gives its stored time."""
    pia = await server.player("pia")
    game = (await pia.request("new_game", level="hard", deal=1))["game"]
    assert (await pia.request("move", game=game, v=0, card="7C", to=5))["type"] == "ack"
    assert (await pia.request("pause", game=game))["type"] == "ack"
    assert (await pia.request("resume", game=game))["type"] == "ack"
    store = server.server.store
    assert store is not None
    stored = await store.get_game(game)
    assert stored is not None and not stored.paused
    for _ in range(200):  # until the clock has run well past the time the pause stored
        view = (await pia.request("open_game", game=game))["view"]
        if view["time_ms"] > stored.time_ms + 200:
            break
        await asyncio.sleep(0.05)
    assert view["running"] is True and view["time_ms"] > stored.time_ms + 200
    listed = await pia.request("games")
    (summary,) = [entry for entry in listed["games"] if entry["game"] == game]
    assert summary["time_ms"] >= view["time_ms"], (summary, view)
    other = await server.connect()
    welcome = await other.hello(pia.token)
    (greeted,) = [entry for entry in welcome["games"] if entry["game"] == game]
    assert greeted["time_ms"] >= summary["time_ms"], (greeted, summary)


def answer_lost(server: Running, monkeypatch: pytest.MonkeyPatch) -> None:
    """The store's pauses and resumes commit, but their answer is lost (a timeout, a
    connection cut after the COMMIT): the request is answered ``unavailable``."""
    store = server.server.store
    assert store is not None
    set_paused = store.set_paused

    async def lost(*args: Any, **kwargs: Any) -> Any:
        await set_paused(*args, **kwargs)
        raise StoreUnavailable("the commit's answer was lost")

    monkeypatch.setattr(store, "set_paused", lost)


async def last_clock(client: Client, *, paused: bool) -> dict[str, Any]:
    """The last ``clock`` event pushed to ``client``, once it says ``paused`` so."""
    async with asyncio.timeout(TIMEOUT):
        while True:
            clocks: list[dict[str, Any]] = [
                event
                for m in client.frames
                if m["type"] == "events"
                for event in m["events"]
                if event["type"] == "clock"
            ]
            if clocks and clocks[-1]["paused"] is paused:
                return clocks[-1]
            await asyncio.sleep(0.01)


@pytest.mark.parametrize("request_type", ["pause", "resume"])
async def test_a_pause_or_resume_whose_answer_was_lost_reaches_the_watchers(
    server: Running, monkeypatch: pytest.MonkeyPatch, request_type: str
) -> None:
    """Answered ``unavailable``, it may still have committed (PROTOCOL.md section 9):
    if it did, every device with the game open is told, as of any commit, not only
    those of a node that hears of it from another."""
    kim = await server.player("kim")
    game = (await kim.request("new_game", level="hard", deal=1))["game"]
    tablet = await server.connect()
    assert (await tablet.hello(kim.token))["type"] == "welcome"
    assert (await tablet.request("open_game", game=game))["type"] == "game"
    if request_type == "resume":
        assert (await kim.request("pause", game=game))["type"] == "ack"
        await last_clock(tablet, paused=True)
    answer_lost(server, monkeypatch)
    reply = await kim.request(request_type, game=game)
    assert reply["code"] == "unavailable", reply
    paused = request_type == "pause"
    for device in (kim, tablet):
        clock = await last_clock(device, paused=paused)
        assert clock["running"] is not paused, clock
    monkeypatch.undo()
    opened = await tablet.request("open_game", game=game)
    assert opened["view"]["paused"] is paused
