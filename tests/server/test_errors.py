"""Every rejection arrives with its code; bad frames get bad_request and never stop others."""

from __future__ import annotations

import asyncio

import msgpack

from protocol import ABUSE_LIMIT, MAX_FRAME_BYTES, encode
from tests.server.client import Client
from tests.server.conftest import Running


async def code_of(peer: Client, type_: str, **fields: object) -> str:
    reply = await peer.request(type_, **fields)
    assert reply["type"] == "error", reply
    return str(reply["code"])


async def test_rule_codes(server: Running) -> None:
    fay = await server.player("fay")
    game = (await fay.request("new_game", level="hard", deal=1))["game"]
    # deal 1 on hard: tops 8D QS 6C 3D 8C TC 6S; 7S lies under JH 3D in column 4.
    assert await code_of(fay, "undo", game=game, v=0) == "nothing_to_undo"
    assert await code_of(fay, "move", game=game, v=0, card="KD") == "not_face_up"
    assert await code_of(fay, "move", game=game, v=0, card="8D", to=9) == "bad_column"
    assert await code_of(fay, "move", game=game, v=0, card="8C", to=5) == "same_column"
    assert await code_of(fay, "move", game=game, v=0, card="8D", to=5) == "not_one_lower"
    assert await code_of(fay, "move", game=game, v=0, card="7S", to=1) == "same_suit_required"
    assert await code_of(fay, "move", game=game, v=0, card="TH") == "no_destination"
    assert (await fay.request("move", game=game, v=0, card="7C", to=5))["v"] == 1
    assert await code_of(fay, "move", game=game, v=1, card="8D", to=7) == "empty_column_kings_only"
    assert (await fay.request("deal", game=game, v=1))["v"] == 2
    assert await code_of(fay, "deal", game=game, v=2) == "stock_empty"
    assert (await fay.request("resign", game=game))["v"] == 3
    assert await code_of(fay, "undo", game=game, v=3) == "game_over"
    assert await code_of(fay, "hint", game=game) == "game_over"


async def test_rule_messages_follow_the_locale(server: Running) -> None:
    gus = await server.player("gus")
    game = (await gus.request("new_game", level="hard", deal=1))["game"]
    english = await gus.request("undo", game=game, v=0)
    await gus.hello(gus.token, locale="fi")
    await gus.request("open_game", game=game)
    finnish = await gus.request("undo", game=game, v=0)
    assert finnish["code"] == english["code"] == "nothing_to_undo"
    assert finnish["message"] != english["message"]


async def test_protocol_codes(server: Running) -> None:
    anon = await server.connect()
    assert await code_of(anon, "ping") == "hello_required"
    assert await code_of(anon, "hello", protocol=2, client="x", locale="en") == (
        "unsupported_version"
    )
    assert await code_of(anon, "hello", protocol=1, client="x", locale="en", token="nope") == (
        "unauthenticated"
    )
    await anon.hello()
    assert (await anon.request("ping"))["type"] == "pong"
    assert await code_of(anon, "new_game", level="hard") == "unauthenticated"
    hal = await server.player("hal")
    assert await code_of(anon, "register", name="HAL") == "duplicate_name"
    game = (await hal.request("new_game", level="hard", deal=1))["game"]
    ivy = await server.player("ivy")
    # Another player's game looks exactly like one that does not exist.
    assert await code_of(ivy, "open_game", game=game) == "not_found"
    assert await code_of(ivy, "move", game=game, v=0, card="7C") == "not_found"
    assert await code_of(ivy, "open_game", game=game + 1000) == "not_found"
    assert await code_of(hal, "move", game=game, v=7, card="7C") == "stale"
    assert await code_of(hal, "move", game=game, v=0, card="ZZ") == "bad_request"
    # ... whatever the game's state: a card that is none is the request's own fault
    assert await code_of(hal, "move", game=game, v=7, card="1H") == "bad_request"
    for padded in (" 7C", "7C ", "7C\n"):  # requests are read strictly: R2 spells no spaces
        assert await code_of(hal, "move", game=game, v=0, card=padded) == "bad_request"
    assert await code_of(ivy, "move", game=game, v=0, card="ZZ") == "bad_request"
    assert await code_of(hal, "move", game=game + 1000, v=0, card="ZZ") == "bad_request"
    assert await code_of(hal, "move", game=game, v=0, card="7C", colour=1) == "bad_request"
    assert await code_of(hal, "move", game=game, v=1.0, card="7C") == "bad_request"


BAD_FRAMES: list[bytes | str] = [
    "a text frame",
    b"\xc1",  # never used in msgpack
    msgpack.packb([1, 2, 3]),
    msgpack.packb({"type": "ping"}),
    msgpack.packb({"type": "fly", "id": 1}),
    msgpack.packb({"type": "ping", "id": 1}) + b"\x00",
    msgpack.packb({1: "ping", "id": 1}),
    msgpack.packb({"type": "ping", "id": 1.5}),
]


async def test_bad_frames_get_bad_request_while_others_are_served(server: Running) -> None:
    rude = await server.connect()
    await rude.hello()
    polite = await server.connect()
    await polite.hello()
    for frame in BAD_FRAMES:
        await rude.send_raw(frame)
        reply = await rude.push()
        assert reply["type"] == "error" and reply["code"] == "bad_request", (frame, reply)
        assert (await polite.request("ping"))["type"] == "pong"
    assert (await rude.request("ping"))["type"] == "pong"


async def test_an_action_whose_id_holds_nul_is_bad_request_on_every_store(
    server: Running,
) -> None:
    """On PostgreSQL (no NUL in text) such an action was answered ``internal``, and every
    retry of it too: the client could never learn whether it was applied."""
    gus = await server.player("gus")
    game = (await gus.request("new_game", level="hard", deal=1))["game"]
    frame = {"type": "move", "id": "a\x00b", "game": game, "v": 0, "card": "7C", "to": 5}
    for _ in range(2):
        await gus.send_raw(encode(frame))
        reply = await gus.push()
        while reply["type"] == "events":  # the clock's start
            reply = await gus.push()
        assert reply["type"] == "error" and reply["code"] == "bad_request", reply
    assert (await gus.request("move", game=game, v=0, card="7C", to=5))["v"] == 1


async def test_abuse_closes_with_1008(server: Running) -> None:
    rude = await server.connect()
    for _ in range(ABUSE_LIMIT + 1):
        await rude.send_raw("text")
    await asyncio.wait_for(rude.ws.wait_closed(), 5)
    assert rude.ws.close_code == 1008
    assert sum(1 for frame in rude.frames if frame.get("code") == "bad_request") == ABUSE_LIMIT + 1


async def test_oversize_frame_closes_with_1009(server: Running) -> None:
    big = await server.connect()
    await big.hello()
    await big.send_raw(encode({"type": "ping", "id": "x" * MAX_FRAME_BYTES}))
    await asyncio.wait_for(big.ws.wait_closed(), 5)
    assert big.ws.close_code == 1009
