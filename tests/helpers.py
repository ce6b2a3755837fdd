"""Helpers shared by test packages."""

from __future__ import annotations

import functools
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from engine.game import Game
from engine.levels import LEVELS

__all__ = ["hint_player_win", "interrupted_while_loading"]


@functools.cache
def _hint_player_win_actions() -> tuple[int, tuple[object, ...]]:
    for number in range(1, 41):
        game, t = Game(LEVELS["easy"], number), 0
        seen: set[bytes] = set()
        while not game.won and game.state.key() not in seen:
            seen.add(game.state.key())
            hint, t = game.suggestion(), t + 1000
            if hint.action == "deal":
                game.deal(t)
            elif hint.action == "move" and hint.card is not None:
                game.move(hint.card, hint.to, t)
            else:
                break
        if game.won:
            return number, tuple(game.actions)
    raise AssertionError("following the hint won none of the easy deals 1..40")


def hint_player_win() -> Game:
    """A won easy game: follow the hint on deals 1, 2, ... until one is won.

    A position met twice ends an attempt (the hint would go round in circles).
    Deal 4 is won in 59 moves. Each call returns a fresh copy of that game.
    """
    number, actions = _hint_player_win_actions()
    game = Game(LEVELS["easy"], number)
    for action in actions:
        game.play(action)  # type: ignore[arg-type]
    return game


def interrupted_while_loading(
    command: Sequence[str],
    after_s: float,
    *,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    preexec_fn: Callable[[], object] | None = None,
) -> subprocess.CompletedProcess[str]:
    """``command`` sent SIGINT ``after_s`` after it started, while Python loads it; its
    exit status and its output (standard error in it).

    On a loaded machine the signal may land before any code of the command runs, while
    the interpreter itself imports ``site`` or its streams ("Fatal Python error:
    init_import_site", "init_sys_streams") or
    ``runpy`` looks for the module (a traceback of frozen frames only), as for any
    program: such a run is tried again, the signal sent a tenth of a second later each
    time (at one fixed time, five runs in a row were all too early on a busy machine)."""
    for attempt in range(10):
        process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            cwd=cwd,
            env=env,
            text=True,
            preexec_fn=preexec_fn or (lambda: signal.signal(signal.SIGINT, signal.SIG_DFL)),
        )
        time.sleep(after_s + attempt / 10)
        process.send_signal(signal.SIGINT)
        output, _ = process.communicate(timeout=30)
        if not _before_any_file(output):
            break
    return subprocess.CompletedProcess(command, process.returncode, output)


def _before_any_file(output: str) -> bool:
    """The interrupt came while the interpreter started, before it ran any file."""
    if output.startswith("Fatal Python error: init_"):  # init_import_site, init_sys_streams
        return True
    return output.startswith("Traceback") and '.py"' not in output
