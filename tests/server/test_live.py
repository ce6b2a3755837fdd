"""``LiveGame``: a game rebuilt from its log gives the history the game played live gave."""

from __future__ import annotations

import random
from datetime import UTC, datetime

import pytest

from engine.benchmark import random_game
from engine.game import Game
from engine.levels import LEVELS
from server.live import LiveGame, event_dicts
from server.store import GameRecord, GameStatus, LoggedAction, pack_hint

NOW = datetime.now(UTC)


def played(actions: int, seed: int = 2) -> tuple[LiveGame, list[LoggedAction]]:
    """A medium game of random actions (moves, deals, undos, hints) played live, and its log."""
    source = random_game(LEVELS["medium"], 5, random.Random(seed), max_actions=actions)
    assert len(source.actions) == actions
    record = GameRecord(
        1, 1, "medium", 5, GameStatus.ACTIVE, 0, 0, 0, 0, 0, 0, 0, NOW, NOW, None, None
    )
    live = LiveGame(record, Game(LEVELS["medium"], 5), [])
    log = []
    for action in source.actions:
        live.add([event_dicts(live.game.play(action))])
        new = LiveGame.last_action(live.game)
        log.append(
            LoggedAction(
                new.type,
                new.card,
                new.to,
                new.t,
                pack_hint(new.hint_action, new.hint_card, new.hint_to, new.hint_reason),
            )
        )
    return live, log


@pytest.mark.parametrize("keep", [500, 30])
def test_a_rebuilt_game_gives_the_same_catch_up_from_every_version(keep: int) -> None:
    live, log = played(120)
    record = live.record._replace(version=len(log))
    for since in (0, 1, 60, 89, 90, 119, 120):
        rebuilt = LiveGame.rebuild(record, log, keep)
        assert rebuilt.version == live.version == 120
        expected = live.history_since(since) if since >= 120 - keep else None
        if keep == 500 or since >= 90:
            assert rebuilt.history_since(since) == expected
        else:
            assert rebuilt.history_since(since) is None  # beyond what a live game keeps


def test_events_added_after_the_rebuild_follow_the_rebuilt_ones() -> None:
    live, log = played(60)
    rebuilt = LiveGame.rebuild(live.record._replace(version=40), log[:40], keep=50)
    assert rebuilt.unbuilt == 40 and rebuilt.batches == []
    for each in range(40, 60):
        rebuilt.game.play(live.game.actions[each])
        rebuilt.add([live.batches[each]])
    assert rebuilt.history_since(10) == live.history_since(10)
    assert rebuilt.base == 10 and rebuilt.unbuilt == 0
