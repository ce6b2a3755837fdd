"""A game's position as the client knows it: a protocol view kept current by events.

``Board.from_view`` reads a ``view`` (PROTOCOL.md, Objects); ``apply`` plays
one event forward, as section 4's "Keeping the view" table says: everything
the view shows comes from the events (the score's fields, the undo depth and
``stuck`` from ``score``, the deal's position from ``restarted``, the deal
number from ``won`` and ``game_lost``), and ``score_at`` gives the score at
a play time with section 6's formula. The one thing kept here that no view
field says is ``played``: whether anything is left on the table for undo to
take back once the undo limit (R18) has emptied the undo depth.
``unapply`` plays one event backward, which ``scorpion replay`` uses to find
the deal's position from a finished game's final view (see docs/cli.md).
Cards are the wire's two-character form (``TH``); a card the client cannot
name (taken back face down) is ``"??"``.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from clients.cli.levels import PENALTY_PERIOD_MS, PENALTY_POINTS, info

__all__ = ["UNKNOWN", "Board", "Column", "suit_run"]

UNKNOWN = "??"
_RANKS_DOWN = "KQJT98765432A"
_UNRECORDED = frozenset({"clock", "lost_position"})
# A batch of these leaves the position as it was (a hint is a version of its own):
# a proof that it is lost still holds.
_SAME_POSITION = _UNRECORDED | {"hint", "score"}


def _played(level: str, depth: int) -> int:
    """What a view says of the moves played: at least ``depth``, more if at the limit."""
    found = info(level)
    at_limit = found is not None and found.undo_limit is not None and depth >= found.undo_limit
    return depth + 1 if at_limit else depth


def suit_run(suit: str) -> list[str]:
    """K..A of ``suit``, bottom to top, as a removed suit lay in its column."""
    return [rank + suit for rank in _RANKS_DOWN]


@dataclass
class Column:
    """One tableau column: ``down`` face-down cards under the face-up ``cards``."""

    down: int
    cards: list[str] = field(default_factory=list)


@dataclass
class Board:
    """Everything the client shows about one game."""

    level: str
    deal: int | None
    columns: list[Column]
    stock: int = 0
    reserve: list[str] = field(default_factory=list)
    foundations: list[str | None] = field(default_factory=lambda: [None] * 4)
    score: int = 0
    earned: int = 0
    scoring: str = "points"
    moves: int = 0
    undos: int = 0
    hints: int = 0
    time_ms: int = 0
    status: str = "active"  # active, won or lost (R17)
    won: bool = False
    stuck: bool = False
    running: bool = False
    lost: str | None = None  # why the game was lost, when an event said it
    lost_position: bool = False
    undo_depth: int = 0  # how many moves and deals undo can still take back (R18)
    played: int = 0  # moves and deals since the deal or the last restart, net of undos
    lost_from_deal: bool = False  # the deal itself cannot be won
    result: dict[str, Any] | None = None
    needs_snapshot: bool = False

    @classmethod
    def from_view(cls, view: dict[str, Any]) -> Board:
        slots: list[str | None] = [None] * 4
        for index, suit in enumerate(view.get("foundations", [])[:4]):
            slots[index] = suit
        return cls(
            level=str(view["level"]),
            deal=view.get("deal"),
            columns=[Column(int(c["down"]), list(c["cards"])) for c in view["columns"]],
            stock=int(view.get("stock", 0)),
            reserve=list(view.get("reserve", [])),
            foundations=slots,
            score=int(view.get("score", 0)),
            earned=int(view.get("earned", view.get("score", 0))),
            scoring=str(view.get("scoring", "points")),
            moves=int(view.get("moves", 0)),
            undos=int(view.get("undos", 0)),
            hints=int(view.get("hints", 0)),
            time_ms=int(view.get("time_ms", 0)),
            status=str(view.get("status", "won" if view.get("won") else "active")),
            won=bool(view.get("won", False)),
            stuck=bool(view.get("stuck", False)),
            running=bool(view.get("running", False)),
            undo_depth=int(view.get("undo_depth", 0)),
            played=_played(str(view["level"]), int(view.get("undo_depth", 0))),
        )

    def copy(self) -> Board:
        return copy.deepcopy(self)

    @property
    def finished(self) -> bool:
        return self.status != "active"

    def score_at(self, time_ms: int) -> int:
        """The score shown at play time ``time_ms`` (PROTOCOL.md section 6, R24).

        A won game's score is the ``won`` event's (it has the win bonus); else
        ``earned``, less 30 points for every full 30 seconds under timed scoring.
        """
        if self.won:
            return self.score
        if self.scoring != "timed":
            return self.earned
        return max(0, self.earned - PENALTY_POINTS * (time_ms // PENALTY_PERIOD_MS))

    @property
    def removed(self) -> list[str]:
        return [suit for suit in self.foundations if suit is not None]

    # -- forward ----------------------------------------------------------

    def apply_batch(self, events: list[dict[str, Any]], recorded: bool = True) -> None:
        """Apply one push's (or catch-up batch's) events in order.

        ``recorded`` is False for a push with the version already seen: only
        its unrecorded events (clock, lost_position) are applied, so a batch
        that a catch-up already delivered is never applied twice.
        """
        if recorded and any(event.get("type") not in _SAME_POSITION for event in events):
            self.lost_position = False  # said of the position before
        if recorded:
            self._count_played(events)
        for event in events:
            if recorded or event.get("type") in _UNRECORDED:
                self.apply(event)

    def apply(self, event: dict[str, Any]) -> None:
        """Play one event forward; unknown event types are ignored (section 2)."""
        kind = event.get("type")
        if kind == "moved":
            index = event.get("index")  # an undone reserve move: the card's old place
            self._move(event["from"], event["to"], int(event["count"]), event["card"], index)
        elif kind == "flipped":
            column = self._column(event["column"])
            column.down = max(0, column.down - 1)
            column.cards.append(event["card"])
        elif kind == "unflipped":
            column = self._column(event["column"])
            if column.cards:
                column.cards.pop()
            column.down += 1
        elif kind == "dealt":
            for index, card in enumerate(event["cards"]):
                self.columns[index].cards.append(card)
            self.stock = max(0, self.stock - len(event["cards"]))
        elif kind == "undealt":
            for index in range(int(event["count"])):
                if self.columns[index].cards:
                    self.columns[index].cards.pop()
            self.stock += int(event["count"])
        elif kind == "suit_removed":
            column = self._column(event["column"])
            del column.cards[-13:]
            self.foundations[int(event["slot"]) - 1] = event["suit"]
        elif kind == "suit_restored":
            self._column(event["column"]).cards.extend(suit_run(event["suit"]))
            self.foundations[int(event["slot"]) - 1] = None
        elif kind == "score":
            self.score, self.moves = int(event["score"]), int(event["moves"])
            self.undos, self.hints = int(event["undos"]), int(event["hints"])
            self.earned, self.undo_depth = int(event["earned"]), int(event["undo_depth"])
            self.stuck = bool(event["stuck"])
        elif kind == "won":
            self.won, self.status, self.result, self.running = True, "won", dict(event), False
            self.score, self.moves, self.time_ms = event["score"], event["moves"], event["time_ms"]
            self.deal = event.get("deal", self.deal)
        elif kind == "stuck":
            self.stuck = True
        elif kind == "lost_position":
            self.lost_position = True
            self.lost_from_deal = bool(event.get("from_deal"))
        elif kind == "game_lost":
            self.lost, self.status = str(event.get("reason", "resigned")), "lost"
            self.running, self.deal = False, event.get("deal", self.deal)
        elif kind == "clock" and not self.won:  # a won game's clock is its winning time
            self.running, self.time_ms = bool(event["running"]), int(event["time_ms"])
        elif kind == "restarted":  # the deal's position, given whole
            self.columns = [Column(int(c["down"]), list(c["cards"])) for c in event["columns"]]
            self.stock, self.reserve = int(event["stock"]), list(event["reserve"])
            self.foundations = [None] * 4

    def _count_played(self, events: list[dict[str, Any]]) -> None:
        """Moves and deals on the table: an undo takes one back, a restart all, a play adds one."""
        kinds = {event.get("type") for event in events}
        if "restarted" in kinds:
            self.played = 0
        elif "undone" in kinds:
            self.played = max(0, self.played - 1)
        elif kinds & {"moved", "dealt"}:
            self.played += 1

    @property
    def undo_limit_reached(self) -> bool:
        """Undo has nothing left because of the level's limit, not because nothing was played."""
        return self.undo_depth == 0 and self.played > 0

    # -- backward ---------------------------------------------------------

    def unapply(self, event: dict[str, Any]) -> None:
        """Take one event back (the inverse of ``apply`` for the position)."""
        kind = event.get("type")
        if kind == "moved":
            self._move(event["to"], event["from"], int(event["count"]), event["card"])
        elif kind == "flipped":
            column = self._column(event["column"])
            if column.cards:
                column.cards.pop(0)
            column.down += 1
        elif kind == "unflipped":
            column = self._column(event["column"])
            column.down = max(0, column.down - 1)
            column.cards.append(UNKNOWN)
        elif kind == "dealt":
            for index in range(len(event["cards"])):
                if self.columns[index].cards:
                    self.columns[index].cards.pop()
            self.stock += len(event["cards"])
        elif kind == "undealt":
            for index in range(int(event["count"])):
                self.columns[index].cards.append(UNKNOWN)
            self.stock = max(0, self.stock - int(event["count"]))
        elif kind == "suit_removed":
            self._column(event["column"]).cards.extend(suit_run(event["suit"]))
            self.foundations[int(event["slot"]) - 1] = None
        elif kind == "suit_restored":
            del self._column(event["column"]).cards[-13:]
            self.foundations[int(event["slot"]) - 1] = event["suit"]
        elif kind in ("won", "game_lost"):
            self.won, self.lost, self.result, self.status = False, None, None, "active"

    # -- helpers ----------------------------------------------------------

    def _column(self, number: Any) -> Column:
        return self.columns[int(number) - 1]

    def _take(self, where: Any, count: int, card: str) -> list[str]:
        if where == "reserve":
            if card in self.reserve:
                self.reserve.remove(card)
            return [card]
        column = self._column(where)
        taken = column.cards[-count:] if count else []
        del column.cards[len(column.cards) - len(taken) :]
        return taken

    def _move(
        self, source: Any, target: Any, count: int, card: str, index: int | None = None
    ) -> None:
        cards = self._take(source, count, card)
        if target == "reserve":
            at = len(self.reserve) if index is None else max(0, int(index) - 1)
            self.reserve[at:at] = cards
        else:
            self._column(target).cards.extend(cards)
