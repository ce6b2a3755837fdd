"""What a player may see of a game: the one function every outbound view comes from.

``public_view`` never contains a face-down card or a stock card, only their
counts. The deal number of an unfinished game on a level whose deals the
solver picks (easy) is withheld too: knowing it would reveal every card.
``full_layout`` is the opposite: everything, for a finished game's replay or
``scorpion-engine deal``.
"""

from __future__ import annotations

from typing import Any

from engine.cards import SUITS, card_str
from engine.game import Game
from engine.state import State

__all__ = ["full_layout", "public_view"]


def public_view(
    game: Game,
    t: int | None = None,
    *,
    running: bool = False,
    paused: bool = False,
    withhold_deal: bool = False,
) -> dict[str, Any]:
    """The position and record as a player sees them, at play time ``t``.

    ``running`` says whether the caller's clock is counting play time (the
    engine keeps none, R22): a client adds the time since to ``time_ms``;
    ``paused``, whether the player paused it (its clock stands until resumed).
    ``withhold_deal``: the player did not choose the deal (the server drew it, at
    random or from the solver's winnable deals): its number, which gives away
    every face-down card, is withheld until the game is won, as always on easy.
    """
    solver_dealt = game.rules.solver_deals or withhold_deal
    state = game.state
    results = game.results(t)
    finished = game.won
    view: dict[str, Any] = {
        "level": game.rules.name,
        "deal": game.deal_number if finished or not solver_dealt else None,
        "columns": [
            {"down": down, "cards": [card_str(card) for card in col[down:]]}
            for col, down in zip(state.cols, state.down, strict=True)
        ],
        "stock": len(state.stock),
        "reserve": [card_str(card) for card in state.reserve],
        "foundations": [SUITS[suit] for suit in state.found],
        "score": results.score,
        "moves": results.moves,
        "undos": results.undos,
        "hints": results.hints,
        "time_ms": results.time_ms,
        "running": running,
        "paused": paused and not finished,
        "undo_depth": game.undo_depth,
        "won": finished,
        "stuck": game.stuck,
        "status": "won" if finished else "active",
        "scoring": game.rules.scoring,
        "earned": game.earned,
    }
    return view


def full_layout(state: State) -> dict[str, Any]:
    """Every card, hidden ones included: columns bottom to top (replay.md's shape)."""
    return {
        "columns": [[card_str(card) for card in col] for col in state.cols],
        "face_down": list(state.down),
        "stock": [card_str(card) for card in state.stock],
        "reserve": [card_str(card) for card in state.reserve],
    }
