"""A game whose stored log the rules refuse: answered once as the server's fault, and
the player can still start another game.

The log is only ever written by the server, so this takes a database changed by
hand (or a bug). Before, each request that loaded such a game answered whatever
the replay raised: a rule's code (``not_face_up``), ``bad_request`` (a strike
against the address: a client that kept retrying was closed) or ``internal``
with a traceback, every time; and ``new_game``, which abandons the unfinished
game first, failed the same way, so the player could never play again.
"""

from __future__ import annotations

import logging

import pytest

from server.store import GameStatus
from tests.server.conftest import Running

_AS_MOVE = "type = 'move', hint_action = NULL, hint_card = NULL, hint_to = NULL, hint_reason = NULL"
TAMPERED = {
    # The game's log: a deal, then two hints.
    "an illegal move": f"UPDATE game_actions SET {_AS_MOVE}, card = 'KS', to_col = 1 WHERE seq = 2",
    "a card that is none": f"UPDATE game_actions SET {_AS_MOVE}, card = 'ZZ', to_col = 1"
    " WHERE seq = 2",
    "time going backwards": "UPDATE game_actions SET t = 99999 WHERE seq = 1",
    "an unknown action": "UPDATE game_actions SET type = 'fly' WHERE seq = 1",
    "an undo of nothing": "UPDATE game_actions SET type = 'undo' WHERE seq = 1",
    "a version the log does not hold": "UPDATE games SET version = 5",
}


@pytest.mark.parametrize("change", TAMPERED.values(), ids=TAMPERED.keys())
async def test_a_game_that_cannot_be_replayed_is_internal_and_can_be_left(
    server: Running, change: str, caplog: pytest.LogCaptureFixture
) -> None:
    ida = await server.player("ida")
    game = (await ida.request("new_game", level="hard", deal=1))["game"]
    assert (await ida.request("deal", game=game, v=0))["type"] == "ack"
    for _ in range(2):
        assert (await ida.request("hint", game=game))["type"] == "hint"
    token = ida.token
    await server.restart_after(change)
    ida = await server.connect()
    await ida.hello(token)
    caplog.set_level(logging.INFO)
    caplog.clear()
    for _ in range(3):
        reply = await ida.request("open_game", game=game)
        assert reply["code"] == "internal", reply
        assert "cannot be restored" in reply["message"]
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1, errors  # said once, with the reason
    assert f"game {game}" in errors[0].getMessage()
    started = await ida.request("new_game", level="hard", deal=2)
    assert started["type"] == "game", started
    assert server.server.store is not None
    old = await server.server.store.get_game(game)
    assert old is not None and old.status is GameStatus.LOST
    assert (await ida.request("deal", game=started["game"], v=0))["type"] == "ack"
    assert (await ida.request("open_game", game=game))["code"] == "internal"  # still kept
