"""The client's clock and score follow the server's (PROTOCOL.md section 6, R24)."""

from __future__ import annotations

import io
import time

import pytest

from clients.cli.board import Board
from clients.cli.game import GameSession
from clients.cli.levels import INFO, timed_score
from clients.cli.render import Style
from clients.cli.terminal import Terminal
from engine.levels import LEVELS
from engine.scoring import score_at
from tests.cli.test_render import VIEWS


def session() -> GameSession:
    return GameSession(Terminal(io.StringIO(), []), Style(), json_mode=False)


def test_the_level_table_matches_the_engine() -> None:
    assert list(INFO) == list(LEVELS)
    for name, rules in LEVELS.items():
        mine = INFO[name]
        assert mine.timed == (rules.scoring == "timed") and mine.kings_only == rules.kings_only
        assert mine.any_suit == rules.any_suit and mine.undo_limit == rules.undo_limit
        assert mine.reserve == (rules.layout == "three-blind-mice")
        assert mine.winnable_only == rules.solver_deals


@pytest.mark.parametrize("earned", [0, 10, 40, 200, 1000])
@pytest.mark.parametrize("t0", [0, 29_999, 30_000, 61_000])
@pytest.mark.parametrize("later", [0, 1, 29_999, 30_000, 95_000, 600_000])
def test_the_decay_is_the_engines_formula(earned: int, t0: int, later: int) -> None:
    rules = LEVELS["hard"]
    given = score_at(rules, earned, t0, None)
    assert timed_score("hard", given, t0, t0 + later) == score_at(rules, earned, t0 + later, None)
    assert timed_score("classic", given, t0, t0 + later) == given  # points: no decay


def test_the_first_clock_push_may_arrive_before_the_game() -> None:
    game = session()
    game.on_push({"type": "events", "game": 7, "v": 0, "events": [clock(True, 0)]})
    game.take({"type": "game", "game": 7, "v": 0, "view": VIEWS["hard-deal"]})
    assert game.board is not None and game.board.running


def clock(running: bool, time_ms: int) -> dict[str, object]:
    return {"type": "clock", "running": running, "time_ms": time_ms}


def test_the_clock_runs_from_the_servers_time_and_stops_at_a_win() -> None:
    game = session()
    game.take({"type": "game", "game": 7, "v": 0, "view": {**VIEWS["hard-deal"], "time_ms": 0}})
    game.on_push({"type": "events", "game": 7, "v": 0, "events": [clock(True, 90_000)]})
    game._clock_at = time.monotonic() - 5  # five seconds after the push
    assert 95_000 <= game.time_ms() < 96_000
    won = {"type": "won", "score": 900, "moves": 80, "time_ms": 100_000}
    game.on_push({"type": "events", "game": 7, "v": 1, "events": [won]})
    game.on_push({"type": "events", "game": 7, "v": 1, "events": [clock(False, 100_400)]})
    game._clock_at = time.monotonic() - 60
    assert game.time_ms() == 100_000 and game.score() == 900


def test_the_score_follows_the_clock() -> None:
    game = session()
    view = {**VIEWS["hard-deal"], "time_ms": 20_000, "score": 100}
    game.take({"type": "game", "game": 7, "v": 0, "view": view})
    game.on_push({"type": "events", "game": 7, "v": 0, "events": [clock(True, 20_000)]})
    assert game.score() == 100
    game._clock_at = time.monotonic() - 11  # 31 s of play: one full period
    assert game.score() == 70
    assert "score 70" in game.status() and "time 0:31" in game.status()


def test_a_lost_position_said_again_for_the_same_version_is_printed_once() -> None:
    out = io.StringIO()
    game = GameSession(Terminal(out, []), Style(), json_mode=False)
    game.take({"type": "game", "game": 7, "v": 0, "view": VIEWS["hard-deal"]})
    lost = {"type": "events", "game": 7, "v": 0, "events": [{"type": "lost_position"}]}
    game.on_push(lost)
    game.on_push(lost)
    assert out.getvalue().count("can no longer be won") == 1


def test_the_undo_limit_is_told_apart_from_nothing_played() -> None:
    board = Board.from_view({**VIEWS["hard-deal"], "level": "classic"})
    assert not board.undo_limit_reached
    move = {"type": "moved", "card": "7C", "from": 7, "to": 5, "count": 1}
    back = {"type": "moved", "card": "7C", "from": 5, "to": 7, "count": 1}
    for _ in range(101):
        board.apply_batch([move])
        board.apply_batch([back])  # positions do not matter here, only the counting
    assert board.undo_depth == 100 and board.played == 202
    for _ in range(100):
        board.apply_batch([{"type": "undone", "action": "move"}, move])
    assert board.undo_depth == 0 and board.undo_limit_reached
    board.apply_batch([{"type": "restarted"}])
    assert not board.undo_limit_reached


def test_pausing_stops_the_shown_clock_at_once() -> None:
    game = session()
    game.take({"type": "game", "game": 7, "v": 0, "view": {**VIEWS["hard-deal"], "time_ms": 0}})
    game.on_push({"type": "events", "game": 7, "v": 0, "events": [clock(True, 10_000)]})
    game._clock_at = time.monotonic() - 2
    game.set_paused(True)
    held = game.time_ms()
    assert 12_000 <= held < 13_000
    game._clock_at = time.monotonic() - 60
    assert game.time_ms() == held and "PAUSED" in game.status()
    game.set_paused(False)
    assert held <= game.time_ms() < held + 1000 and "PAUSED" not in game.status()


def test_a_snapshot_event_replaces_the_board_at_its_version() -> None:
    game = session()
    game.take({"type": "game", "game": 7, "v": 0, "view": VIEWS["hard-deal"]})
    game.on_push({"type": "events", "game": 7, "v": 0, "events": [clock(True, 0)]})
    view = {**VIEWS["medium-two-suits"], "time_ms": 49_000}
    game.on_push(
        {"type": "events", "game": 7, "v": 9, "events": [{"type": "snapshot", "view": view}]}
    )
    assert game.v == 9 and game.board is not None and game.board.level == "medium"
    assert game.board.running and 49_000 <= game.time_ms() < 50_000
