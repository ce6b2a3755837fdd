"""The cases PROTOCOL.md once left open, answered as it now says, over real WebSockets.

A second hello and register while signed in (section 3), acting on a game the
connection has not opened (section 4), an id reused for another request
(section 5), a client without subprotocol scorpion.v1 (section 1), the stats
rows (section 4), integers beyond 2^53-1 and extension values (section 1).
"""

from __future__ import annotations

import random
from typing import Any

import msgpack
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed
from websockets.typing import Subprotocol

from engine.solver.easy import DRAW_LIMIT, shipped_easy_deals
from protocol import LEVELS, encode
from protocol.constants import MAX_DEAL, MAX_SAFE_INT
from tests.server.conftest import Running

HELLO = {"type": "hello", "id": 1, "protocol": 1, "client": "test/1", "locale": "en"}


async def test_a_second_hello_may_repeat_the_player_but_not_change_it(server: Running) -> None:
    ada = await server.player("ada")
    bob = await server.player("bob")
    game = (await ada.request("new_game", level="hard", deal=1))["game"]
    again = await ada.hello(ada.token, locale="fi")
    assert again["type"] == "welcome" and again["player"] == ada.player
    for token in (bob.token, None):
        refused = await ada.hello(token)
        assert refused["code"] == "already_signed_in", refused
    assert (await ada.request("move", game=game, v=0, card="7C", to=5))["type"] == "ack"
    rule = await ada.request("move", game=game, v=1, card="TH")
    assert rule["code"] == "no_destination" and rule["message"] != "TH has nowhere to go."
    anonymous = await server.connect()
    assert (await anonymous.hello())["player"] is None
    assert (await anonymous.hello())["player"] is None  # still no player: hello again
    assert (await anonymous.hello(bob.token))["player"] == bob.player


async def test_register_while_signed_in_is_refused_and_creates_no_player(
    server: Running,
) -> None:
    cleo = await server.player("cleo")
    refused = await cleo.request("register", name="cleo2")
    assert refused["code"] == "already_signed_in"
    assert (await cleo.request("games"))["type"] == "games"
    fresh = await server.player("cleo2")  # the name was not taken by the refused register
    assert fresh.player is not None and fresh.player["name"] == "cleo2"


async def test_acting_on_a_game_not_open_here_is_refused(server: Running) -> None:
    dan = await server.player("dan")
    game = (await dan.request("new_game", level="hard", deal=1))["game"]
    other = await server.connect()
    await other.hello(dan.token)
    actions: list[tuple[str, dict[str, Any]]] = [
        ("move", {"v": 0, "card": "7C", "to": 5}),
        ("deal", {"v": 0}),
        ("undo", {"v": 0}),
        ("restart", {"v": 0}),
        ("hint", {}),
        ("pause", {}),
        ("resume", {}),
        ("resign", {}),
    ]
    for type_, fields in actions:
        refused = await other.request(type_, game=game, **fields)
        assert refused["code"] == "not_open", (type_, refused)
    assert (await other.request("close_game", game=game))["type"] == "ack"
    assert (await other.request("replay", game=game))["replay"] is None
    opened = await other.request("open_game", game=game)
    assert opened["v"] == 0 and opened["view"]["moves"] == opened["view"]["hints"] == 0
    assert (await other.request("move", game=game, v=0, card="7C", to=5))["type"] == "ack"
    nobody = await other.request("hint", game=10**9)
    assert nobody["code"] == "not_found"  # not_open never tells that a game exists


async def test_an_id_reused_for_another_request_is_refused(server: Running) -> None:
    eve = await server.player("eve")
    game = (await eve.request("new_game", level="hard", deal=1))["game"]
    first = await eve.request("move", id_="m1", game=game, v=0, card="7C", to=5)
    assert first == {"type": "ack", "re": "m1", "game": game, "v": 1}
    assert await eve.request("move", id_="m1", game=game, v=0, card="7c", to=5) == first
    for type_, fields in (
        ("move", {"card": "6S", "to": 5}),
        ("move", {"card": "7C"}),
        ("move", {"card": "7C", "to": 4}),
        ("deal", {}),
        ("undo", {}),
    ):
        refused = await eve.request(type_, id_="m1", game=game, v=0, **fields)
        assert refused["code"] == "id_reused", (type_, fields, refused)
    assert (await eve.request("open_game", game=game))["v"] == 1  # nothing applied
    stale = await eve.request("move", id_="m2", game=game, v=0, card="7C", to=5)
    assert stale["code"] == "stale"  # an id never used at v + 1 is not a retry


@pytest.mark.parametrize("offered", [[], ["scorpion.v2"]], ids=["none", "only v2"])
async def test_a_client_without_scorpion_v1_reads_unsupported_version(
    server: Running, offered: list[str]
) -> None:
    async with connect(
        server.url, subprotocols=[Subprotocol(each) for each in offered] or None
    ) as ws:
        assert ws.subprotocol is None  # the upgrade completed, with no subprotocol
        await ws.send(encode({**HELLO, "id": "h"}))
        reply = msgpack.unpackb(await ws.recv(), raw=False)
        assert (reply["code"], reply["re"], reply["supported"]) == (
            "unsupported_version",
            "h",
            [1],
        )
        with pytest.raises(ConnectionClosed):
            await ws.recv()
        assert ws.close_code == 1002


async def test_stats_has_a_row_for_every_level_in_the_level_tables_order(
    server: Running,
) -> None:
    fay = await server.player("fay")
    rows = (await fay.request("stats"))["stats"]
    assert [row["level"] for row in rows] == list(LEVELS)
    assert all((row["games"], row["best_score"]) == (0, None) for row in rows)
    game = (await fay.request("new_game", level="relaxed", deal=3))["game"]
    await fay.request("resign", game=game)
    rows = (await fay.request("stats"))["stats"]
    assert [row["level"] for row in rows] == list(LEVELS)
    assert [row["losses"] for row in rows] == [0, 0, 0, 0, 1, 0]
    only = (await fay.request("stats", level="easy"))["stats"]
    assert [row["level"] for row in only] == ["easy"]


async def test_integers_beyond_2_53_and_extension_values_are_bad_request(
    server: Running,
) -> None:
    gus = await server.player("gus")
    assert (await gus.request("ping", id_=MAX_SAFE_INT))["type"] == "pong"
    big = await gus.request("new_game", id_=7, level="hard", deal=MAX_SAFE_INT + 1)
    assert (big["code"], big["re"]) == ("bad_request", 7)
    await gus.send_raw(encode({"type": "ping", "id": 2**64 - 1}))
    unread = await gus.push()
    assert unread["code"] == "bad_request" and "re" not in unread
    ext = await gus.request("stats", id_=8, level=msgpack.ExtType(3, b"hard"))
    assert (ext["code"], ext["re"]) == ("bad_request", 8)
    assert "ext" not in ext["message"].lower().replace("extension", "")
    drawn = await gus.request("new_game", level="hard")
    assert drawn["view"]["deal"] is None  # drawn by the server: withheld until the end
    assert (await gus.request("resign", game=drawn["game"]))["type"] == "ack"
    ended = (await gus.request("games"))["games"][0]
    assert ended["game"] == drawn["game"] and 1 <= ended["deal"] <= MAX_SAFE_INT


def test_deal_numbers_are_drawn_within_the_safe_range() -> None:
    class Highest(random.Random):
        def randrange(self, start: int, stop: int | None = None, step: int = 1) -> int:
            assert stop is not None
            return stop - 1

    assert MAX_DEAL == MAX_SAFE_INT
    assert Highest().randrange(1, DRAW_LIMIT) == MAX_DEAL  # the largest draw is still valid
    assert max(shipped_easy_deals()) <= MAX_DEAL
