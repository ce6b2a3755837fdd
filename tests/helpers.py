"""Helpers shared by test packages."""

from __future__ import annotations

import functools

from engine.game import Game
from engine.levels import LEVELS

__all__ = ["hint_player_win"]


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
