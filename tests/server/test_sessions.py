"""Sessions: rotating and revoking tokens, signing out everywhere, expiry, a failed hello."""

from __future__ import annotations

import asyncio
import secrets
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from protocol.constants import MAX_TOKEN_CHARS, MIN_OWN_TOKEN_CHARS
from server.sessions import SignedIn
from server.store import StoreUnavailable, hash_token
from tests.server.client import TIMEOUT
from tests.server.conftest import Running, Start


def test_signed_in_finds_the_sessions_of_a_tokens_hash() -> None:
    signed_in: SignedIn[object] = SignedIn()
    laptop, phone, tablet, other = object(), object(), object(), object()
    signed_in.enter(laptop, 1, "one")
    signed_in.enter(phone, 1, "one")
    signed_in.enter(tablet, 1, "two")
    signed_in.enter(other, 2, "one")  # never: another player's token is not that one
    assert signed_in.of_token(1, hash_token("one")) == [laptop, phone]
    assert signed_in.of_token(1, hash_token("three")) == []
    signed_in.replace_token(laptop, "three")
    assert signed_in.of_token(1, hash_token("one")) == [phone]
    signed_in.leave(phone, 1)
    assert sorted(signed_in.sessions(), key=lambda row: row[2]) == [
        (other, 2, "one"),
        (laptop, 1, "three"),
        (tablet, 1, "two"),
    ]


async def test_a_rotated_token_replaces_the_old_one(server: Running) -> None:
    ada = await server.player("ada")
    old = ada.token
    rotated = await ada.request("rotate_token")
    assert rotated["type"] == "token" and rotated["token"] != old
    stale = await server.connect()
    assert (await stale.hello(old))["code"] == "unauthenticated"
    fresh = await server.connect()
    welcome = await fresh.hello(rotated["token"])
    assert welcome["type"] == "welcome" and welcome["player"]["name"] == "ada"
    again = await ada.request("rotate_token")  # the connection now holds the new one
    assert again["type"] == "token"


async def test_a_rotation_to_the_clients_own_token_survives_a_lost_reply(
    server: Running,
) -> None:
    """Without ``token`` a reply lost on the way lost the player: the old token was
    revoked and the new one nowhere. With the client's own, kept before it asks, either
    token says where things stand, and the request sent again changes nothing."""
    ada = await server.player("ada")
    old, new = ada.token, secrets.token_urlsafe(32)
    assert old is not None
    rotated = await ada.request("rotate_token", token=new)
    assert rotated == {"type": "token", "re": rotated["re"], "token": new}
    await ada.close()  # as if the reply had been lost with the connection
    stale = await server.connect()
    assert (await stale.hello(old))["code"] == "unauthenticated"  # so it happened
    again = await server.connect()
    welcome = await again.hello(new)
    assert welcome["type"] == "welcome" and welcome["player"]["name"] == "ada"
    resent = await again.request("rotate_token", token=new)  # the resend, after reconnecting
    assert resent == {"type": "token", "re": resent["re"], "token": new}
    later = await server.connect()
    assert (await later.hello(new))["type"] == "welcome"  # nothing changed


async def test_a_rotation_not_made_leaves_the_old_token_and_may_be_sent_again(
    server: Running,
) -> None:
    """The other way round: the old token still works, so the rotation did not happen,
    and the same request made on it now replaces it."""
    bea = await server.player("bea")
    old, new = bea.token, secrets.token_urlsafe(32)
    assert old is not None
    again = await server.connect()
    assert (await again.hello(old))["type"] == "welcome"
    assert (await again.request("rotate_token", token=new))["token"] == new
    stale = await server.connect()
    assert (await stale.hello(old))["code"] == "unauthenticated"


@pytest.mark.parametrize(
    "token",
    ["x" * (MIN_OWN_TOKEN_CHARS - 1), "x" * (MAX_TOKEN_CHARS + 1), "é" * 43, "a+b/" * 11, 43],
)
async def test_a_token_a_client_cannot_have_made_is_refused(server: Running, token: object) -> None:
    cid = await server.player("cid")
    refused = await cid.request("rotate_token", token=token)
    assert refused["code"] == "bad_request" and "token" in refused["message"], refused
    assert (await cid.request("games"))["type"] == "games"  # still signed in, on the old one
    assert (await (await server.connect()).hello(cid.token))["type"] == "welcome"


async def test_a_token_in_use_is_refused_and_nothing_changes(server: Running) -> None:
    """Another device's token (or one the client made twice) is refused: the rotation is
    rolled back whole, and the old token still works."""
    dan = await server.player("dan")
    eve = await server.player("eve")
    assert eve.token is not None and dan.token is not None
    taken = secrets.token_urlsafe(32)  # eve's device's own
    store = server.server.store
    assert store is not None and eve.player is not None
    assert await store.rotate_token(eve.token, taken) == taken
    refused = await dan.request("rotate_token", token=taken)
    assert refused["code"] == "bad_request" and "in use" in refused["message"], refused
    assert (await dan.request("games"))["type"] == "games"
    assert (await (await server.connect()).hello(dan.token))["type"] == "welcome"
    eves = await (await server.connect()).hello(taken)
    assert eves["player"]["name"] == "eve"


async def test_a_leaked_token_rotated_away_cannot_be_taken_up_by_another_player(
    server: Running,
) -> None:
    """A revoked token's row went, and a client chooses its own new token: whoever knew
    the leaked token rotated their own to it once its owner had rotated it away, and the
    owner's other device, still holding it, then signed in as them. A token ever given
    out is never taken again: not after a rotation, not after signing out everywhere,
    not by its own player either."""
    ada = await server.player("ada")
    mal = await server.player("mal")
    leaked = ada.token
    assert leaked is not None
    assert (await ada.request("rotate_token"))["type"] == "token"  # the owner's answer
    taken = await mal.request("rotate_token", token=leaked)
    assert taken["code"] == "bad_request" and "in use" in taken["message"], taken
    phone = await server.connect()  # the owner's other device, with the leaked token
    assert (await phone.hello(leaked))["code"] == "unauthenticated"

    bea = await server.player("bea")
    gone = bea.token
    assert (await bea.request("sign_out", everywhere=True))["revoked"] == 1
    assert (await mal.request("rotate_token", token=gone))["code"] == "bad_request"
    assert (await (await server.connect()).hello(gone))["code"] == "unauthenticated"

    own = await ada.request("rotate_token")  # back to its own old token: no more either
    again = await server.connect()
    assert (await again.hello(own["token"]))["type"] == "welcome"
    assert (await again.request("rotate_token", token=leaked))["code"] == "bad_request"
    assert (await (await server.connect()).hello(mal.token))["player"]["name"] == "mal"


async def test_sign_out_signs_this_connection_out_and_leaves_the_token_to_other_devices(
    server: Running,
) -> None:
    """A player's devices share one token (it is entered on each): signing out on one
    must not lock the others, or the player, out for good."""
    bea = await server.player("bea")
    phone = await server.connect()
    assert (await phone.hello(bea.token))["type"] == "welcome"
    game = (await bea.request("new_game", level="hard", deal=1))["game"]
    out = await bea.request("sign_out")
    assert out == {"type": "signed_out", "re": out["re"], "revoked": 0}
    assert (await bea.request("games"))["code"] == "unauthenticated"
    assert (await bea.request("move", game=game, v=0, card="7C", to=5))["code"] == (
        "unauthenticated"
    )
    assert (await phone.request("games"))["type"] == "games"  # the other device plays on
    later = await server.connect()
    assert (await later.hello(bea.token))["type"] == "welcome"  # and it signs in again


async def test_sign_out_everywhere_signs_out_every_device(server: Running) -> None:
    cid = await server.player("cid")
    store = server.server.store
    assert store is not None and cid.player is not None
    second_token = await store.issue_token(cid.player["id"])
    phone = await server.connect()
    assert (await phone.hello(second_token))["type"] == "welcome"
    assert (await phone.request("games"))["type"] == "games"
    out = await cid.request("sign_out", everywhere=True)
    assert out["revoked"] == 2
    assert (await phone.request("games"))["code"] == "unauthenticated"
    for token in (cid.token, second_token):
        retry = await server.connect()
        assert (await retry.hello(token))["code"] == "unauthenticated"


async def test_a_failed_hello_leaves_the_connection_signed_out(server: Running) -> None:
    dan = await server.player("dan")
    assert (await dan.request("games"))["type"] == "games"
    refused = await dan.hello("not-a-token-of-anyone")
    assert refused["code"] == "unauthenticated"
    assert (await dan.request("games"))["code"] == "unauthenticated"
    assert (await dan.hello(dan.token))["type"] == "welcome"  # its own token still works


async def test_rotating_a_token_signs_out_the_other_connections_on_it(server: Running) -> None:
    """The old token stops working at once: a connection signed in with it is signed
    out with the rotation (its games closed), not left playing until it closes."""
    ada = await server.player("ada")
    store = server.server.store
    assert store is not None and ada.player is not None
    game = (await ada.request("new_game", level="hard", deal=1))["game"]
    phone = await server.connect()
    assert (await phone.hello(ada.token))["type"] == "welcome"
    assert (await phone.request("open_game", game=game))["type"] == "game"
    tablet = await server.connect()  # the same player on a token of its own
    assert (await tablet.hello(await store.issue_token(ada.player["id"])))["type"] == "welcome"
    assert (await ada.request("rotate_token"))["type"] == "token"
    refused = await phone.request("move", game=game, v=0, card="7C", to=5)
    assert refused["code"] == "unauthenticated", refused
    assert (await phone.request("rotate_token"))["code"] == "unauthenticated"
    assert (await tablet.request("games"))["type"] == "games"
    assert (await ada.request("move", game=game, v=0, card="7C", to=5))["type"] == "ack"
    assert [m for m in phone.drain() if m["type"] == "events" and m["v"] >= 1] == []


async def test_rotating_a_token_revoked_unseen_signs_the_connection_out(server: Running) -> None:
    """A token revoked where this node did not see it (here: by the store alone): the
    answer is ``unauthenticated`` ("the request needs a player"), and the connection is
    signed out with it, not left playing on a token that no longer works."""
    ada = await server.player("ada")
    store = server.server.store
    assert store is not None and ada.token is not None
    assert await store.revoke_token(ada.token)
    refused = await ada.request("rotate_token")
    assert refused["code"] == "unauthenticated" and "signed out" in refused["message"]
    assert (await ada.request("games"))["code"] == "unauthenticated"


async def test_an_expired_token_neither_plays_nor_rotates_where_it_signed_in_before(
    start: Start, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its expiry was checked only when a token signed in: a connection signed in before
    kept playing after it, and its ``rotate_token`` made the expired token a fresh one,
    so one connection kept open held the player past every expiry."""
    server = await start(token_ttl_days=1)
    ada = await server.player("ada")
    store = server.server.store
    assert store is not None and ada.token is not None
    later = datetime.now(UTC) + timedelta(days=1, minutes=1)
    monkeypatch.setattr(store, "_clock", lambda: later)
    fresh = await server.connect()
    assert (await fresh.hello(ada.token))["code"] == "unauthenticated"
    assert (await ada.request("new_game", level="hard"))["code"] == "unauthenticated"
    assert (await ada.request("rotate_token"))["code"] == "unauthenticated"
    assert (await ada.request("ping"))["type"] == "pong"  # signed out, the connection open
    assert await store.player_for_token(ada.token) is not None  # not made a fresh one


async def test_a_session_ends_when_its_token_expires(server: Running) -> None:
    """At its token's expiry, counted from when the token was issued (not from the
    connection's hello), a connection is signed out as by a revocation: its games close
    (no more events), and its next request that needs a player is ``unauthenticated``;
    the player's other token, issued later, keeps working."""
    loop = asyncio.get_running_loop()
    service = server.server.service
    assert service is not None
    service.token_max_age = timedelta(seconds=4)
    ada = await server.player("ada")
    expired_by = loop.time() + 4  # the token was issued before
    store = server.server.store
    assert store is not None and ada.player is not None and ada.token is not None
    game = (await ada.request("new_game", level="hard", deal=1))["game"]
    await asyncio.sleep(2.5)
    tablet = await server.connect()  # the same player on a token of its own, issued now
    assert (await tablet.hello(await store.issue_token(ada.player["id"])))["type"] == "welcome"
    assert (await tablet.request("open_game", game=game))["type"] == "game"
    phone = await server.connect()  # a late hello with the first token
    assert (await phone.hello(ada.token))["type"] == "welcome"
    assert (await phone.request("open_game", game=game))["type"] == "game"
    await asyncio.sleep(expired_by + 0.5 - loop.time())
    assert (await tablet.request("move", game=game, v=0, card="7C", to=5))["type"] == "ack"
    assert (await tablet.request("games"))["type"] == "games"
    assert (await ada.request("games"))["code"] == "unauthenticated"
    assert (await phone.request("games"))["code"] == "unauthenticated"
    assert [m for m in phone.drain() if m["type"] == "events" and m["v"] >= 1] == []
    assert [m for m in ada.drain() if m["type"] == "events" and m["v"] >= 1] == []
    again = await server.connect()
    assert (await again.hello(ada.token))["code"] == "unauthenticated"


async def test_a_rotation_the_store_accepts_as_the_token_expires_keeps_the_session(
    server: Running, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The expiry's timer fired while the store rotated the token: the store had revoked
    the old token and issued the new one, yet the answer was ``unauthenticated``, the
    connection signed out. A rotation the store accepted is answered with the new token,
    and the session lasts until that token's expiry."""
    service = server.server.service
    store = server.server.store
    assert service is not None and store is not None
    service.token_max_age = timedelta(seconds=2)
    ada = await server.player("ada")
    rotate = store.rotate_token

    async def slow_rotate(
        token: str, given: str | None = None, max_age: timedelta | None = None
    ) -> str | None:
        new = await rotate(token, given, max_age)
        await asyncio.sleep(1.3)  # the old token's expiry passes before the answer
        return new

    monkeypatch.setattr(store, "rotate_token", slow_rotate)
    await asyncio.sleep(1)
    rotated = await ada.request("rotate_token")
    assert rotated["type"] == "token"
    assert (await ada.request("games"))["type"] == "games"  # signed in with the new token
    assert ada.token is not None and await store.player_for_token(ada.token) is None
    assert await store.player_for_token(rotated["token"]) is not None


@pytest.mark.parametrize("revoke", ["everywhere", "rotate"])
async def test_a_revocation_whose_answer_was_lost_signs_out_its_connections(
    server: Running, monkeypatch: pytest.MonkeyPatch, revoke: str
) -> None:
    """The revocation committed, but its answer was lost (a timeout, a connection cut
    after the COMMIT): answered ``unavailable``, it happened all the same (PROTOCOL.md
    section 9), and the connections signed in with the revoked token are signed out,
    the requester's too, not left playing on a token that no longer works."""
    ada = await server.player("ada")
    store = server.server.store
    assert store is not None and ada.token is not None
    phone = await server.connect()
    assert (await phone.hello(ada.token))["type"] == "welcome"
    method = "revoke_tokens" if revoke == "everywhere" else "rotate_token"
    revocation = getattr(store, method)

    async def answer_lost(*args: Any, **kwargs: Any) -> Any:
        await revocation(*args, **kwargs)
        raise StoreUnavailable("the commit's answer was lost")

    monkeypatch.setattr(store, method, answer_lost)
    if revoke == "everywhere":
        reply = await ada.request("sign_out", everywhere=True)
    else:
        reply = await ada.request("rotate_token", token=secrets.token_urlsafe(32))
    assert reply["code"] == "unavailable", reply
    for client in (phone, ada):
        async with asyncio.timeout(TIMEOUT):
            while (await client.request("games"))["type"] == "games":
                await asyncio.sleep(0.01)
        assert (await client.request("games"))["code"] == "unauthenticated"
