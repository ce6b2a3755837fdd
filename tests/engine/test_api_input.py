"""What the checked API (``Game``) makes of arguments no rule speaks of: a card that is
not one, a play time that is not whole milliseconds. Each is refused before anything is
applied, with an error that says so (never an IndexError, nor another card moved), and
the game is left exactly as it was."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import pytest

from engine.cards import CardParseError
from engine.game import Game
from engine.levels import get_level
from engine.moves import legal_moves


def _fresh() -> Game:
    return Game(get_level("hard"), 5)


@pytest.mark.parametrize("card", [52, -1, True, False, None, 3.0, b"AS", [1]])
def test_a_card_that_is_none_is_refused_and_changes_nothing(card: Any) -> None:
    game = _fresh()
    before = game.snapshot()
    with pytest.raises(CardParseError, match="not a card"):
        game.move(card, 1)
    assert game.snapshot() == before


@pytest.mark.parametrize("t", [1500.7, 1500.0, "1500", True])
def test_a_play_time_that_is_not_whole_milliseconds_is_refused(t: Any) -> None:
    game = _fresh()
    before = game.snapshot()
    card = game.state.cols[4][-1]  # column 5's top card, face up on every deal
    acts: list[Callable[[], object]] = [
        lambda: game.move(card, None, t),
        lambda: game.restart(t),
        lambda: game.hint(t),
    ]
    for act in acts:
        with pytest.raises(ValueError, match="whole number of milliseconds"):
            act()
    assert game.snapshot() == before


def test_a_hint_at_a_dead_end_says_stuck() -> None:
    """R16: no useful move and the stock dealt. ``solver.plan`` said ``stuck``; the
    engine's own heuristic said ``none`` with no reason."""
    rules = get_level("hard")
    rng = random.Random(1)
    game = Game(rules, 1)
    for _ in range(300):
        useful = legal_moves(game.state, rules, useful_only=True)
        if not useful:
            if not game.state.stock:
                break
            game.deal()
            continue
        src, index, dst = rng.choice(useful)
        game.move(game.state.cols[src][index], dst + 1)
    assert not legal_moves(game.state, rules, useful_only=True) and not game.state.stock
    hint = game.hint()[0]  # then its score event
    assert hint.to_dict() == {"type": "hint", "action": "none", "reason": "stuck"}
