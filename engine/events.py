"""What an action caused, in order, so a server can stream it without diffing states.

Every event is a small frozen value with ``to_dict()``: a JSON- and
msgpack-ready map with a ``type`` and canonical card names (R2). Columns and
foundation slots are 1-based (R3); a move from the reserve (R5) has
``"from": "reserve"``.

A played action yields its own events (``moved``/``dealt``, then ``flipped`` and
``suit_removed`` as they happen), then ``score``, then ``won`` or ``stuck`` when
they apply. An undo yields ``undone`` followed by the inverse events in reverse
order (``suit_restored``, ``unflipped``, ``moved`` back, ``undealt``). A restart
yields ``restarted`` with the deal's visible position, then ``score``. Face-down cards appear in
no event; ``flipped`` reveals a card as it turns face up.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from engine.cards import SUITS, card_str

__all__ = [
    "Dealt",
    "Event",
    "Flipped",
    "Hinted",
    "Moved",
    "Restarted",
    "Score",
    "Stuck",
    "SuitRemoved",
    "SuitRestored",
    "Undealt",
    "Undone",
    "Unflipped",
    "Won",
]

EventDict = dict[str, Any]


def _where(column: int) -> int | str:
    return "reserve" if column == 0 else column


@dataclass(frozen=True, slots=True)
class Moved:
    """``count`` cards, ``card`` at the bottom, went from ``src`` (0 = reserve) to ``dst``."""

    card: int
    src: int
    dst: int
    count: int
    index: int | None = None  # dst == 0: the 1-based reserve position the card returns to

    def to_dict(self) -> EventDict:
        event: EventDict = {
            "type": "moved",
            "card": card_str(self.card),
            "from": _where(self.src),
            "to": _where(self.dst),
            "count": self.count,
        }
        if self.index is not None:
            event["index"] = self.index
        return event


@dataclass(frozen=True, slots=True)
class Flipped:
    column: int
    card: int

    def to_dict(self) -> EventDict:
        return {"type": "flipped", "column": self.column, "card": card_str(self.card)}


@dataclass(frozen=True, slots=True)
class Unflipped:
    """Undo turned the top card of ``column`` face down again."""

    column: int

    def to_dict(self) -> EventDict:
        return {"type": "unflipped", "column": self.column}


@dataclass(frozen=True, slots=True)
class Dealt:
    """The stock went out: ``cards[i]`` onto column i + 1 (R13)."""

    cards: tuple[int, ...]

    def to_dict(self) -> EventDict:
        return {"type": "dealt", "cards": [card_str(card) for card in self.cards]}


@dataclass(frozen=True, slots=True)
class Undealt:
    """Undo took the dealt cards back into the stock."""

    count: int

    def to_dict(self) -> EventDict:
        return {"type": "undealt", "count": self.count}


@dataclass(frozen=True, slots=True)
class SuitRemoved:
    suit: int
    column: int
    slot: int

    def to_dict(self) -> EventDict:
        return {
            "type": "suit_removed",
            "suit": SUITS[self.suit],
            "column": self.column,
            "slot": self.slot,
        }


@dataclass(frozen=True, slots=True)
class SuitRestored:
    """Undo put a removed set back on ``column`` from foundation ``slot``."""

    suit: int
    column: int
    slot: int

    def to_dict(self) -> EventDict:
        return {
            "type": "suit_restored",
            "suit": SUITS[self.suit],
            "column": self.column,
            "slot": self.slot,
        }


@dataclass(frozen=True, slots=True)
class Undone:
    """The last move or deal (``action``) was taken back; inverse events follow."""

    action: str

    def to_dict(self) -> EventDict:
        return {"type": "undone", "action": self.action}


@dataclass(frozen=True, slots=True)
class Restarted:
    """The game went back to its deal (R19): the deal's position as a player sees it.

    ``columns`` holds, per column, the face-down count and the face-up cards; the
    cards named were face up at the deal, so nothing hidden is revealed.
    """

    columns: tuple[tuple[int, tuple[int, ...]], ...]
    stock: int
    reserve: tuple[int, ...]

    def to_dict(self) -> EventDict:
        return {
            "type": "restarted",
            "columns": [
                {"down": down, "cards": [card_str(card) for card in cards]}
                for down, cards in self.columns
            ],
            "stock": self.stock,
            "reserve": [card_str(card) for card in self.reserve],
        }


@dataclass(frozen=True, slots=True)
class Hinted:
    """A hint (R20): move ``card`` to column ``to``, or deal the stock, or nothing.

    ``reason`` says why a hint is ``none`` (given by whoever computed it).
    """

    action: str  # "move", "deal" or "none"
    card: int | None = None
    to: int | None = None
    reason: str | None = None

    def to_dict(self) -> EventDict:
        out: EventDict = {"type": "hint", "action": self.action}
        if self.card is not None:
            out["card"] = card_str(self.card)
            out["to"] = self.to
        if self.reason is not None:
            out["reason"] = self.reason
        return out


@dataclass(frozen=True, slots=True)
class Score:
    """Score and counters after an action, at the action's play time.

    ``earned`` is what the played actions earned (R23, R24): under timed
    scoring the score at a later play time follows from it; ``undo_depth``
    and ``stuck`` are the position's state after the action.
    """

    score: int
    moves: int
    undos: int
    hints: int
    earned: int
    undo_depth: int
    stuck: bool

    def to_dict(self) -> EventDict:
        return {
            "type": "score",
            "score": self.score,
            "moves": self.moves,
            "undos": self.undos,
            "hints": self.hints,
            "earned": self.earned,
            "undo_depth": self.undo_depth,
            "stuck": self.stuck,
        }


@dataclass(frozen=True, slots=True)
class Won:
    """The game is won (R15); its results and its deal number (now shown on every level)."""

    moves: int
    time_ms: int
    score: int
    suits: int
    hints: int
    undos: int
    deal: int

    def to_dict(self) -> EventDict:
        return {
            "type": "won",
            "moves": self.moves,
            "time_ms": self.time_ms,
            "score": self.score,
            "suits": self.suits,
            "hints": self.hints,
            "undos": self.undos,
            "deal": self.deal,
        }


@dataclass(frozen=True, slots=True)
class Stuck:
    """No useful move is left and the stock is dealt (R16); undo, restart or a new game."""

    def to_dict(self) -> EventDict:
        return {"type": "stuck"}


Event = (
    Moved
    | Flipped
    | Unflipped
    | Dealt
    | Undealt
    | SuitRemoved
    | SuitRestored
    | Undone
    | Restarted
    | Hinted
    | Score
    | Won
    | Stuck
)
