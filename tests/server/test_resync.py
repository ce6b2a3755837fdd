"""Resync with open_game since, and a failed commit leaving nothing applied."""

from __future__ import annotations

from typing import Any

import pytest

from engine.cards import card_str
from engine.errors import RuleViolation
from engine.events import Flipped
from engine.game import Game
from engine.levels import get_level
from server.store import GameWrite, StoreUnavailable
from tests.server.conftest import Running


def first_flipping_move(level: str) -> tuple[int, str, int]:
    """A deal and a legal first move of it that turns a card face up."""
    rules = get_level(level)
    for deal in range(1, 200):
        probe = Game(rules, deal)
        for col, down in zip(probe.state.cols, probe.state.down, strict=True):
            for card in col[down:]:
                for to in range(1, len(probe.state.cols) + 1):
                    game = Game(rules, deal)
                    try:
                        events = game.move(card, to, 0)
                    except RuleViolation:
                        continue
                    if any(isinstance(event, Flipped) for event in events):
                        return deal, card_str(card), to
    raise AssertionError("no flipping first move")


async def test_catch_up_never_names_a_card_turned_back_down(server: Running) -> None:
    deal, card, to = first_flipping_move("medium")
    ned = await server.player("ned")
    game = (await ned.request("new_game", level="medium", deal=deal))["game"]
    assert (await ned.request("move", game=game, v=0, card=card, to=to))["v"] == 1
    caught = await ned.request("open_game", game=game, since=0)
    assert caught["type"] == "catch_up"
    assert any(e["type"] == "flipped" for e in caught["events"][0]["events"])
    assert (await ned.request("undo", game=game, v=1))["v"] == 2
    resync = await ned.request("open_game", game=game, since=0)
    assert resync["type"] == "game" and resync["v"] == 2  # a snapshot, not the old flip
    fine = await ned.request("open_game", game=game, since=1)
    assert fine["type"] == "catch_up" and [b["v"] for b in fine["events"]] == [2]
    current = await ned.request("open_game", game=game, since=2)
    assert current["type"] == "catch_up" and current["events"] == []


async def test_a_failed_commit_applies_nothing(
    server: Running, monkeypatch: pytest.MonkeyPatch
) -> None:
    service = server.server.service
    assert service is not None
    olga = await server.player("olga")
    game = (await olga.request("new_game", level="hard", deal=1))["game"]

    async def unavailable(write: GameWrite) -> Any:
        raise StoreUnavailable("the database went away")

    with monkeypatch.context() as patch:
        patch.setattr(service.store, "commit", unavailable)
        failed = await olga.request("move", game=game, v=0, card="7C", to=5)
    assert failed["code"] == "unavailable"
    view = await olga.request("open_game", game=game)
    assert view["v"] == 0 and view["view"]["moves"] == 0
    assert (await olga.request("move", game=game, v=0, card="7C", to=5))["v"] == 1


async def test_a_finished_game_gives_its_whole_history(server: Running) -> None:
    """A replay reveals everything (section 7): after a restart and a resignation
    the history of every version is given, so clients can play the game back."""
    deal, card, to = first_flipping_move("medium")
    ned = await server.player("ned")
    game = (await ned.request("new_game", level="medium", deal=deal))["game"]
    assert (await ned.request("move", game=game, v=0, card=card, to=to))["v"] == 1
    assert (await ned.request("restart", game=game, v=1))["v"] == 2
    hidden = await ned.request("open_game", game=game, since=0)
    assert hidden["type"] == "game"  # unfinished: the flipped card is face down again
    assert (await ned.request("resign", game=game))["type"] == "ack"
    history = await ned.request("open_game", game=game, since=0)
    assert history["type"] == "catch_up" and [b["v"] for b in history["events"]] == [1, 2, 3]
    assert any(e["type"] == "flipped" for e in history["events"][0]["events"])
