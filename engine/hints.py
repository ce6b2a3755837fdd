"""A one-move-ahead hint heuristic (R20).

The hint names one useful move for the current position, scored by what it
achieves right away (higher is better):

====================================================  ======
the move turns a face-down card face up                 +100
the move empties a column (not onto an empty column)     +50
a reserve card is played (three-blind-mice)              +30
the card lands on a card of its own suit                 +20
the card already lay on its successor (breaks a run)     -40
the card goes to an empty column                         -30
====================================================  ======

Ties go to the first move in ``legal_moves`` order. When no move scores above
zero and the stock is still there, the hint is to deal it; when nothing is
left, the hint says so. A hint only ever names face-up cards.

Given ``seen`` (the keys of the positions a game has been in), a move leading
back to one of them is passed over: by itself the heuristic has no memory, and
on relaxed a card could shuttle between two hosts of the same rank, hint after
hint. When every useful move leads back, the hint is ``none`` with reason
``seen``, as the server's (``engine.solver.plan``).
"""

from __future__ import annotations

from collections.abc import Collection

from engine.events import Hinted
from engine.levels import Rules
from engine.moves import Move, legal_moves
from engine.state import State, apply_move, undo

__all__ = ["score_move", "suggest"]


def score_move(state: State, move: Move) -> int:
    """The heuristic value of ``move`` in ``state`` (table above)."""
    src, index, dst = move
    target = state.cols[dst]
    if src < 0:
        card = state.reserve[index]
        value = 30
    else:
        col = state.cols[src]
        card = col[index]
        value = 0
        if index and index == state.down[src]:
            value += 100
        if index == 0 and target:
            value += 50
        if index > state.down[src] and col[index - 1] % 13 == card % 13 + 1:
            value -= 40
    if not target:
        value -= 30
    elif target[-1] // 13 == card // 13:
        value += 20
    return value


def suggest(state: State, rules: Rules, seen: Collection[bytes] = ()) -> Hinted:
    """The heuristic's best action for ``state``, not leading back to ``seen``."""
    best: tuple[int, Move] | None = None
    revisits = False
    for move in legal_moves(state, rules, useful_only=True):
        value = score_move(state, move)
        if best is not None and value <= best[0]:
            continue
        if seen and _leads_to(state, move) in seen:
            revisits = True
            continue
        best = (value, move)
    if state.stock and (best is None or best[0] <= 0):
        return Hinted("deal")
    if best is None:
        # no useful move and the stock dealt: R16's dead end, as ``solver.plan`` says it
        return Hinted("none", reason="seen" if revisits else "stuck")
    src, index, dst = best[1]
    card = state.reserve[index] if src < 0 else state.cols[src][index]
    return Hinted("move", card, dst + 1)


def _leads_to(state: State, move: Move) -> bytes:
    """The key of the position ``move`` leads to (``state`` is left as it was)."""
    record = apply_move(state, *move)
    try:
        return state.key()
    finally:
        undo(state, record)
