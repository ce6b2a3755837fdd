"""Which moves the rules allow (R7-R11, R13, R16).

``check_move`` and ``auto_move`` are the checked entry points: they take a card
named by a player and raise a ``RuleViolation`` with the first broken rule in
the order not_face_up, bad_column, same_column, empty_column_kings_only,
not_one_lower, same_suit_required. ``legal_moves`` and ``is_stuck`` enumerate
what a position allows, for hints, dead-end detection and the solver.

A move is a ``Move`` (src, start, dst) of 0-based columns, ``src`` being
``RESERVE`` for a reserve card (R5); it is valid only for the state it was made
for.
"""

from __future__ import annotations

from typing import NamedTuple

from engine import errors
from engine.cards import KING, card_str, rank_of
from engine.levels import Rules
from engine.state import RESERVE, State

__all__ = [
    "Move",
    "accepts",
    "auto_move",
    "check_deal",
    "check_move",
    "is_stuck",
    "legal_moves",
    "locate",
]


class Move(NamedTuple):
    """Move ``cols[src][start:]`` (or ``reserve[start]`` when src is RESERVE) onto ``dst``.

    Made here as the tuple it is (``_new_tuple``): a named tuple's own ``__new__`` is
    a Python call, and every move played, replayed or listed makes one.
    """

    src: int
    start: int
    dst: int


_new_tuple = tuple.__new__


def locate(state: State, card: int) -> tuple[int, int]:
    """(column, index) of a face-up ``card``, or (RESERVE, index); raises NotFaceUp (R7)."""
    for column, col in enumerate(state.cols):
        if card in col:
            index = col.index(card)
            if index >= state.down[column]:
                return column, index
            break
    if card in state.reserve:
        return RESERVE, state.reserve.index(card)
    raise errors.NotFaceUp(card_str(card))


def accepts(rules: Rules, target: list[int], card: int) -> bool:
    """Whether ``card`` may be placed on column ``target`` (R8, R9)."""
    if not target:
        return not rules.kings_only or card % 13 == KING - 1
    top = target[-1]
    if rules.any_suit:
        return top % 13 == card % 13 + 1
    return top == card + 1 and card % 13 != KING - 1


def _placement_error(rules: Rules, target: list[int], card: int) -> errors.RuleViolation | None:
    """The violation that placing ``card`` on ``target`` commits, in R10's order."""
    name = card_str(card)
    if not target:
        if rules.kings_only and rank_of(card) != KING:
            return errors.EmptyColumnKingsOnly(name)
        return None
    top = target[-1]
    if rank_of(top) != rank_of(card) + 1:
        return errors.NotOneLower(name)
    if not rules.any_suit and top // 13 != card // 13:
        return errors.SameSuitRequired(name)
    return None


def check_move(state: State, rules: Rules, card: int, to: int) -> Move:
    """Validate moving ``card`` (with all on it) to 1-based column ``to``."""
    src, index = locate(state, card)
    if not isinstance(to, int) or isinstance(to, bool) or not 1 <= to <= len(state.cols):
        raise errors.BadColumn(card_str(card), to if isinstance(to, int) else None)
    dst = to - 1
    if dst == src:
        raise errors.SameColumn(card_str(card), to)
    target = state.cols[dst]
    if not accepts(rules, target, card):  # the same test, without naming the card
        error = _placement_error(rules, target, card)
        assert error is not None, "accepts and _placement_error disagree"
        raise error
    return _new_tuple(Move, (src, index, dst))


def _is_whole_column(state: State, src: int, index: int) -> bool:
    """Whether a move from (src, index) carries a whole column (R11, R16)."""
    return src >= 0 and index == 0


def auto_move(state: State, rules: Rules, card: int) -> Move:
    """Pick the destination for a move that names only the card (R11)."""
    src, index = locate(state, card)
    best: tuple[tuple[bool, bool, int], int] | None = None
    whole = _is_whole_column(state, src, index)
    for dst, target in enumerate(state.cols):
        if dst == src or not accepts(rules, target, card):
            continue
        if not target and whole:
            continue
        same_suit = bool(target) and target[-1] // 13 == card // 13
        rank = (not same_suit, not target, dst)
        if best is None or rank < best[0]:
            best = (rank, dst)
    if best is None:
        raise errors.NoDestination(card_str(card))
    return _new_tuple(Move, (src, index, best[1]))


def check_deal(state: State, rules: Rules) -> None:
    """Raise unless the stock may be dealt now (R13)."""
    if not state.stock:
        raise errors.StockEmpty(variant="none" if rules.layout == "three-blind-mice" else "")
    if rules.stock_only_when_stuck and legal_moves(state, rules, useful_only=True):
        raise errors.StockNotAllowed()


def _sources(state: State) -> list[tuple[int, int, int]]:
    """Every movable (src, index, card): face-up column cards and reserve cards."""
    sources = [
        (column, index, col[index])
        for column, col in enumerate(state.cols)
        for index in range(state.down[column], len(col))
    ]
    sources += [(RESERVE, index, card) for index, card in enumerate(state.reserve)]
    return sources


def legal_moves(state: State, rules: Rules, useful_only: bool = False) -> list[Move]:
    """Every legal move, in a fixed order (by source, then destination).

    With ``useful_only``, moves that change nothing but a column's position (a
    whole column onto an empty one) are left out (R11, R16).
    """
    moves = []
    for src, index, card in _sources(state):
        whole = _is_whole_column(state, src, index)
        for dst, target in enumerate(state.cols):
            if dst == src or not accepts(rules, target, card):
                continue
            if useful_only and whole and not target:
                continue
            moves.append(_new_tuple(Move, (src, index, dst)))
    return moves


def is_stuck(state: State, rules: Rules) -> bool:
    """The dead end of R16: the stock is dealt and no useful move is left."""
    if state.stock or _any_build(state, rules):
        return False
    if all(state.cols):
        return True
    return not any(
        accepts(rules, [], card) and not _is_whole_column(state, src, index)
        for src, index, card in _sources(state)
    )


def _any_build(state: State, rules: Rules) -> bool:
    """Whether some face-up card may go onto another column's top card."""
    tops = {col[-1]: dst for dst, col in enumerate(state.cols) if col}
    for src, _index, card in _sources(state):
        if rules.any_suit:
            if any(dst != src and top % 13 == card % 13 + 1 for top, dst in tops.items()):
                return True
        elif card % 13 != KING - 1 and tops.get(card + 1, src) != src:
            return True
    return False
