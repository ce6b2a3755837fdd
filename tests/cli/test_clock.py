"""The client's clock and score follow the server's (PROTOCOL.md section 6, R24)."""

from __future__ import annotations

import io
import time

import pytest

from clients.cli.board import Board
from clients.cli.game import GameSession
from clients.cli.levels import INFO
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
@pytest.mark.parametrize("t", [0, 1, 29_999, 30_000, 61_000, 95_000, 600_000])
@pytest.mark.parametrize("level", ["hard", "classic"])
def test_the_shown_score_is_the_engines_formula(earned: int, t: int, level: str) -> None:
    """PROTOCOL.md section 6: ``earned`` less the decay under timed scoring, ``earned`` else."""
    rules = LEVELS[level]
    view = {**VIEWS["hard-deal"], "level": level, "scoring": rules.scoring, "earned": earned}
    assert Board.from_view(view).score_at(t) == score_at(rules, earned, t, None)


def test_a_won_games_score_is_the_won_events() -> None:
    board = Board.from_view({**VIEWS["hard-deal"], "earned": 400})
    board.apply({"type": "won", "score": 6400, "moves": 80, "time_ms": 100_000, "deal": 1})
    assert board.score_at(100_000) == board.score_at(10**9) == 6400


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
    view = {**VIEWS["hard-deal"], "time_ms": 20_000, "score": 100, "earned": 100}
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


def score(undo_depth: int, stuck: bool = False) -> dict[str, object]:
    return {"type": "score", "score": 0, "moves": 0, "undos": 0, "hints": 0, "earned": 0} | {
        "undo_depth": undo_depth,
        "stuck": stuck,
    }


def test_the_undo_limit_is_told_apart_from_nothing_played() -> None:
    """The depth is the ``score`` events'; what is on the table is counted (no field says it)."""
    board = Board.from_view({**VIEWS["hard-deal"], "level": "classic", "scoring": "points"})
    assert not board.undo_limit_reached
    move = {"type": "moved", "card": "7C", "from": 7, "to": 5, "count": 1}
    back = {"type": "moved", "card": "7C", "from": 5, "to": 7, "count": 1}
    for depth in range(1, 203):  # positions do not matter here, only the counting
        board.apply_batch([move if depth % 2 else back, score(min(100, depth))])
    assert board.undo_depth == 100 and board.played == 202
    for depth in range(99, -1, -1):
        board.apply_batch([{"type": "undone", "action": "move"}, move, score(depth)])
    assert board.undo_depth == 0 and board.undo_limit_reached
    start = {"type": "restarted", "columns": VIEWS["hard-deal"]["columns"], "stock": 3}
    board.apply_batch([{**start, "reserve": []}, score(0)])
    assert not board.undo_limit_reached


def test_stuck_is_set_and_cleared_by_the_score_events() -> None:
    board = Board.from_view(VIEWS["hard-deal"])
    board.apply_batch([{"type": "dealt", "cards": ["7D", "KC", "2S"]}, score(1, True)])
    assert board.stuck and board.stock == 0
    board.apply_batch([{"type": "undone", "action": "deal"}, {"type": "undealt", "count": 3}])
    assert board.stuck  # no score event yet: the view's stuck is unchanged
    board.apply(score(0, False))
    assert not board.stuck and board.stock == 3


def test_a_catch_up_gives_the_clock_and_a_clock_push_says_paused() -> None:
    game = session()
    game.take({"type": "game", "game": 7, "v": 0, "view": VIEWS["hard-deal"]})
    game.on_push({"type": "events", "game": 7, "v": 0, "events": [clock(True, 0)]})
    assert not game.paused
    game.on_push({"type": "events", "game": 7, "v": 0, "events": [clock(False, 4_000)]})
    assert game.paused and game.time_ms() == 4_000 and "PAUSED" in game.status()
    catch_up = {"type": "catch_up", "game": 7, "v": 0, "events": [], "time_ms": 9_000}
    game.take({**catch_up, "running": True})
    assert not game.paused and 9_000 <= game.time_ms() < 10_000


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
    view = {**VIEWS["medium-two-suits"], "time_ms": 49_000, "running": True}
    game.on_push(
        {"type": "events", "game": 7, "v": 9, "events": [{"type": "snapshot", "view": view}]}
    )
    assert game.v == 9 and game.board is not None and game.board.level == "medium"
    assert game.board.running and 49_000 <= game.time_ms() < 50_000
