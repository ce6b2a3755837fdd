"""The position on the table, and the unchecked fast path that changes it.

Theory of operation
-------------------
``State`` is a plain mutable record: ``cols`` (each column bottom to top),
``down`` (how many bottom cards of each column are face down), ``stock``,
``reserve`` and ``found`` (the suits removed, in foundation-slot order).

``apply_move``, ``apply_deal`` and ``undo`` are the **trusted fast path**: they
do not check the rules. The solver calls them millions of times; the checked
entry point for untrusted input is ``engine.game.Game`` (via ``engine.moves``).
Each apply returns a compact undo record (a tuple) that ``undo`` reverses
exactly, including everything the action caused:

- R12: a column whose top card is face down after an action flips it.
- R14: a column an action changed is checked for a complete suit (K..A of one
  suit, all face up) on top; the set goes to the next foundation slot, the
  column may flip, and it is checked again. The destination is checked first,
  then the source (a set uncovered there goes too).

Columns are 0-based here; everything user-facing is 1-based (R3). A move's
source ``RESERVE`` (-1) means the reserve of three-blind-mice (R5), with the
index into ``reserve``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from engine.deal import Deal

__all__ = [
    "DEAL",
    "MOVE",
    "RESERVE",
    "SET_CARDS",
    "DealRecord",
    "MoveRecord",
    "Record",
    "Removal",
    "State",
    "apply_deal",
    "apply_move",
    "undo",
]

RESERVE = -1
MOVE = 0
DEAL = 1

# SET_CARDS[suit]: a complete set as it lies in a column, king at the bottom.
SET_CARDS: tuple[list[int], ...] = tuple(
    [suit * 13 + rank for rank in range(12, -1, -1)] for suit in range(4)
)

Removal = tuple[int, bool]  # (column, whether the column flipped a card afterwards)
# (MOVE, src, index, dst, count, src_flipped, removals)
MoveRecord = tuple[int, int, int, int, int, bool, tuple[Removal, ...]]
# (DEAL, cards dealt, 0, 0, 0, False, removals)
DealRecord = MoveRecord
Record = MoveRecord


class State:
    """One position. Mutable; copy with ``copy()`` before sharing."""

    __slots__ = ("cols", "down", "found", "reserve", "stock")

    def __init__(
        self,
        cols: Iterable[Iterable[int]],
        down: Iterable[int],
        stock: Iterable[int] = (),
        reserve: Iterable[int] = (),
        found: Iterable[int] = (),
    ) -> None:
        self.cols: list[list[int]] = [list(col) for col in cols]
        self.down: list[int] = list(down)
        self.stock: list[int] = list(stock)
        self.reserve: list[int] = list(reserve)
        self.found: list[int] = list(found)

    @classmethod
    def from_deal(cls, deal: Deal) -> State:
        return cls(deal.columns, deal.face_down, deal.stock, deal.reserve)

    def copy(self) -> State:
        return State(self.cols, self.down, self.stock, self.reserve, self.found)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, State):
            return NotImplemented
        return (
            self.cols == other.cols
            and self.down == other.down
            and self.stock == other.stock
            and self.reserve == other.reserve
            and self.found == other.found
        )

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __repr__(self) -> str:
        return (
            f"State(cols={self.cols!r}, down={self.down!r}, stock={self.stock!r}, "
            f"reserve={self.reserve!r}, found={self.found!r})"
        )

    def key(self) -> bytes:
        """A compact, hashable key of the whole position (face-down cards included).

        Each column is its face-down count, its cards, and a separator (cards and
        counts are < 64; the separator is 255). Foundations are implied by the
        missing cards. Equal positions give equal keys.
        """
        parts = bytearray()
        for down, col in zip(self.down, self.cols, strict=True):
            parts.append(down)
            parts += bytes(col)
            parts.append(255)
        parts.append(len(self.stock))
        parts += bytes(self.stock)
        parts.append(255)
        parts += bytes(self.reserve)
        return bytes(parts)

    def all_cards(self) -> list[int]:
        """Every card in the position (for conservation checks)."""
        cards = [card for col in self.cols for card in col]
        cards += self.stock + self.reserve
        for suit in self.found:
            cards += SET_CARDS[suit]
        return cards

    def face_up(self, column: int) -> Sequence[int]:
        return self.cols[column][self.down[column] :]


def _set_on_top(col: list[int], down: int) -> int:
    """The suit of a complete face-up set on top of ``col``, or -1 (R14)."""
    if len(col) - down < 13 or col[-1] % 13:
        return -1
    suit = col[-1] // 13
    return suit if col[-13:] == SET_CARDS[suit] else -1


def _remove_sets(state: State, column: int, out: list[Removal]) -> None:
    """Remove every complete set now on top of ``column`` (R14, with R12 flips)."""
    col = state.cols[column]
    down = state.down
    suit = _set_on_top(col, down[column])
    while suit >= 0:
        del col[-13:]
        state.found.append(suit)
        flipped = bool(col) and down[column] == len(col)
        if flipped:
            down[column] -= 1
        out.append((column, flipped))
        suit = _set_on_top(col, down[column])


def apply_move(state: State, src: int, index: int, dst: int) -> Record:
    """Move the card at ``cols[src][index]`` and all above it onto ``dst``. Unchecked.

    ``src == RESERVE`` moves ``reserve[index]`` alone.
    """
    target = state.cols[dst]
    flipped = False
    if src < 0:
        target.append(state.reserve.pop(index))
        count = 1
    else:
        col = state.cols[src]
        target += col[index:]
        count = len(col) - index
        del col[index:]
        if index and state.down[src] == index:  # R12
            state.down[src] = index - 1
            flipped = True
    removals: list[Removal] = []
    if len(target) >= 13 and not target[-1] % 13:
        _remove_sets(state, dst, removals)
    if src >= 0 and not flipped and index >= 13:
        _remove_sets(state, src, removals)
    return (MOVE, src, index, dst, count, flipped, tuple(removals))


def apply_deal(state: State) -> Record:
    """Deal the stock, one card onto each of columns 1, 2, 3 (R13). Unchecked."""
    stock = state.stock
    cols = state.cols
    for column, card in enumerate(stock):
        cols[column].append(card)
    count = len(stock)
    state.stock = []
    removals: list[Removal] = []
    for column in range(count):
        _remove_sets(state, column, removals)
    return (DEAL, count, 0, 0, 0, False, tuple(removals))


def undo(state: State, record: Record) -> None:
    """Reverse exactly what the apply that returned ``record`` did."""
    kind, src, index, dst, count, flipped, removals = record
    cols = state.cols
    down = state.down
    for column, removal_flipped in reversed(removals):
        if removal_flipped:
            down[column] += 1
        cols[column] += SET_CARDS[state.found.pop()]
    if kind == DEAL:
        state.stock = [cols[column].pop() for column in range(src)]
        return
    target = cols[dst]
    if src < 0:
        state.reserve.insert(index, target.pop())
        return
    if flipped:
        down[src] += 1
    cols[src] += target[-count:]
    del target[-count:]
