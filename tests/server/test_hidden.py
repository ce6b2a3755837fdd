"""No frame ever names a card that is face down or in the stock when it is sent.

Many random games, played by a client that only chooses among what it can
see (face-up cards, columns, deal, undo, restart, hint); after every request
the frames received since the last check are decoded and every string in
them is compared with the server's true position of that moment.
"""

from __future__ import annotations

import random
from typing import Any

from engine.cards import card_str
from protocol import validate_message
from server.live import strings_in
from tests.server.client import Client
from tests.server.conftest import Running

LEVELS = ("easy", "medium", "hard", "classic", "relaxed", "three-blind-mice")
GAMES = 12
RANKS = "A23456789TJQK"
STEPS = 60


def hidden_now(server: Running, game: int) -> set[str]:
    service = server.server.service
    assert service is not None
    live = service.cached(game)
    assert live is not None
    state = live.game.state
    hidden = {c for col, down in zip(state.cols, state.down, strict=True) for c in col[:down]}
    hidden.update(state.stock)
    return {card_str(card) for card in hidden}


def choose(rng: random.Random, view: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    roll = rng.random()
    if roll < 0.06:
        return "deal", {}
    if roll < 0.14:
        return "undo", {}
    if roll < 0.16:
        return "restart", {}
    if roll < 0.20:
        return "hint", {}
    visible = [card for column in view["columns"] for card in column["cards"]]
    visible += view["reserve"]
    if not visible:
        return "deal", {}
    plausible = plausible_moves(view)
    if plausible and rng.random() < 0.8:
        card, to = rng.choice(plausible)
        return "move", {"card": card, "to": to}
    fields: dict[str, Any] = {"card": rng.choice(visible)}
    if rng.random() < 0.7:
        fields["to"] = rng.randint(1, len(view["columns"]))
    return "move", fields


def plausible_moves(view: dict[str, Any]) -> list[tuple[str, int]]:
    """Visible cards onto a column whose top is one rank higher (or empty), as seen."""
    tops = [column["cards"][-1] if column["cards"] else None for column in view["columns"]]
    out = []
    for column in view["columns"]:
        for card in column["cards"]:
            for to, top in enumerate(tops, start=1):
                if top is None or RANKS.index(top[0]) == RANKS.index(card[0]) + 1:
                    out.append((card, to))
    return out


def leaks(frames: list[dict[str, Any]], hidden: set[str]) -> list[str]:
    return [text for frame in frames for text in strings_in(frame) if text in hidden]


async def play_randomly(server: Running, client: Client, rng: random.Random, level: str) -> int:
    """One random game; how many actions were accepted."""
    checked = len(client.frames)
    start = await client.request("new_game", level=level)
    game = start["game"]
    played = 0
    for _ in range(STEPS):
        view = (await client.request("open_game", game=game))["view"]
        await client.request("ping")  # pushes caused by opening precede this reply
        assert leaks(client.frames[checked:], hidden_now(server, game)) == []
        checked = len(client.frames)
        kind, fields = choose(rng, view)
        if kind == "hint":
            reply = await client.request("hint", game=game)
        else:
            reply = await client.request(kind, game=game, v=view_version(client), **fields)
        assert reply["type"] in ("ack", "hint", "error"), reply
        if reply["type"] == "error":
            assert reply["code"] not in ("internal", "bad_request", "stale"), reply
        if reply["type"] != "error":
            played += 1
        if rng.random() < 0.3:  # resync from a random earlier version
            since = rng.randint(0, view_version(client))
            assert (await client.request("open_game", game=game, since=since))["v"] >= since
        await client.request("ping")  # the action's push precedes this reply
        frames = client.frames[checked:]
        checked = len(client.frames)
        assert leaks(frames, hidden_now(server, game)) == []
        if view["won"]:
            break
    return played


def view_version(client: Client) -> int:
    for frame in reversed(client.frames):
        if frame.get("type") in ("game", "ack", "hint", "events", "catch_up"):
            return int(frame["v"])
    raise AssertionError("no version seen yet")


async def test_no_frame_names_a_hidden_card(server: Running) -> None:
    rng = random.Random(20261129)
    client = await server.player("kim")
    played = 0
    for index in range(GAMES):
        played += await play_randomly(server, client, rng, LEVELS[index % len(LEVELS)])
    assert played > GAMES * STEPS // 4  # enough accepted actions to mean something
    for frame in client.frames:
        validate_message(frame)  # and every frame matches the protocol's catalogue
    assert len(client.frames) > GAMES * STEPS
