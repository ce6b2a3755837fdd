"""Pruning rules of the solver, each with the argument that makes it sound.

"Sound" means: a position the rules below discard (or a move they skip) never
hides a win the search would otherwise find, so a search that ends without a
win really proves the position lost. ``tests/engine/solver`` checks every rule
empirically too: on many small positions, each ``lost`` is confirmed by a
search that uses none of them.

Notation: under same-suit building the card that may go onto ``c`` is
``c - 1`` (engine.cards), and we say ``c - 1``'s *successor* is ``c``. A card
lies *directly on* the card beneath it in its column.

1. Circular wait (``is_deadlocked``), valid when only kings go to empty columns
   and building is by suit.

   Every non-king card ``x`` must at some point lie directly on its successor
   ``x + 1`` (a set is K..A contiguous on top of a column). If ``x`` does not
   now, ``x`` itself must be picked and moved onto ``x + 1``: cards are only
   ever put on top of columns, and the cards between ``x + 1`` and ``x`` (if in
   one column) cannot go away without moving ``x``. That move needs ``x + 1``
   on top, so the card ``y`` now directly on ``x + 1`` must have left first,
   and the first move that takes ``y`` off is ``y`` picked and moved onto
   ``y + 1`` (a non-king's only destination; a group picked lower carries
   ``y`` along and leaves it on ``x + 1``). So ``y`` reaches its successor
   strictly before ``x`` does. Write ``x -> y``. A cycle ``x1 -> x2 -> ... ->
   x1`` would need ``x1`` to get there strictly before itself: the position is
   lost. A king ``y`` breaks the chain (it may leave to an empty column), and so
   does a successor in the stock or the reserve (nothing lies on it). Dealing
   the stock only puts cards on top of columns, so it cannot undo a cycle among
   cards already on the table: the rule holds before the deal too. It does not
   hold when any card may go to an empty column (``y`` could leave there), nor
   under any-suit building (``x`` has several possible successors).

2. Safe build onto a king-rooted run (``search._safe_build``), valid under
   same-suit building once no stock is left (on either empty-column rule).

   Let a column be a same-suit run K, Q, ..., ``x + 1`` from its bottom, all
   face up, and ``x`` face up elsewhere with a *segment* (``x`` and whatever
   lies on it) on top of its column. Moving the segment onto ``x + 1`` (giving
   S') loses nothing. Take any winning line from S and play it from S',
   reading "the segment's place" as "on ``x + 1``". Until the line moves ``x``
   onto ``x + 1`` nothing else can go there, and no card of the run needs to
   move: each already lies on its only successor, and the king is at the
   bottom, so a move picked in the run carries the whole column (legal in S'
   too, into an empty column). Every other move stays legal in S': a move
   checks only the picked card and the destination's top card; the tops are
   the same cards, except that S' also shows the card the segment covered
   (more options, maybe a flip or an empty column); the run's column holds no
   card that could ever be picked under the segment, so no destination ends up
   inside a moving group. When the line moves ``x`` (onto ``x + 1``, or with
   the any-card rule into an empty column), both positions become the same.

   The rule is deliberately narrow. Building onto a successor that may still
   have to move is *not* safe: the cards later put on the segment can include
   ``x + 2``, and then ``x + 1`` can never reach it. A test keeps the example
   that showed it (3S onto 4S burying the 5S). Nor does the rule hold with
   cards in the stock (a stock card would land on the segment instead of on
   ``x + 1``) or under any-suit building (another suit's card could use
   ``x + 1``).

3. (withdrawn) Taking a card off its successor into an empty column can be
   needed, for the same reason as above; no rule prunes it.

4. Symmetry: once no stock is left, the order of columns does not matter, so
   positions are keyed with their columns sorted; before the deal only columns
   1-3 are special (they receive the stock) and the others are sorted. Among
   equivalent empty columns only one is tried.
"""

from __future__ import annotations

from itertools import pairwise

from engine.state import State

__all__ = ["canonical_key", "column_key", "is_deadlocked", "key_from_parts"]

_SEPARATOR = b"\xff"


def column_key(down: int, col: list[int]) -> bytes:
    """One column's part of a position key: its face-down count, then its cards."""
    return bytes((down, *col))


def key_from_parts(parts: list[bytes], state: State) -> bytes:
    """The canonical key from the columns' parts (see ``canonical_key``)."""
    stock = state.stock
    if stock:
        dealt_onto = len(stock)
        keys = [*parts[:dealt_onto], b"|", *sorted(parts[dealt_onto:])]
    else:
        keys = sorted(parts)
    keys.append(bytes(stock))
    keys.append(bytes(sorted(state.reserve)))
    return _SEPARATOR.join(keys)


def canonical_key(state: State) -> bytes:
    """A position key equal for positions that differ only by interchangeable columns."""
    parts = [column_key(down, col) for down, col in zip(state.down, state.cols, strict=True)]
    return key_from_parts(parts, state)


def is_deadlocked(state: State) -> bool:
    """Rule 1: a circular wait among non-king cards (kings-only, same-suit building)."""
    waits: dict[int, list[int]] = {}
    for column, col in enumerate(state.cols):
        for index in range(1, state.down[column] + 1):
            lower, upper = col[index - 1], col[index]
            if upper == lower - 1 and lower % 13:
                return True  # a face-down card under its own predecessor never turns up
            if lower % 13 != 12 and upper % 13 != 12:
                waits.setdefault(lower, []).append(upper)  # face down until `upper` leaves
        for lower, upper in pairwise(col):
            wanting = lower - 1  # the card whose successor is `lower`
            if lower % 13 and upper % 13 != 12 and wanting != upper:
                waits.setdefault(wanting, []).append(upper)
    return _has_cycle(waits)


def _has_cycle(waits: dict[int, list[int]]) -> bool:
    """Whether the wait graph has a cycle (iterative depth-first search)."""
    done: set[int] = set()
    for start in waits:
        if start in done:
            continue
        on_path = {start}
        stack = [(start, iter(waits[start]))]
        while stack:
            node, successors = stack[-1]
            following = next(successors, None)
            if following is None:
                stack.pop()
                on_path.discard(node)
                done.add(node)
            elif following in on_path:
                return True
            elif following not in done and following in waits:
                on_path.add(following)
                stack.append((following, iter(waits[following])))
    return False
