"""One game: the checked entry point for everything a player does.

``Game`` owns a ``State`` and applies actions only after ``engine.moves`` has
checked them; every rejection is a ``RuleViolation`` with a stable code and the
game is left untouched. Each action returns the events it caused
(``engine.events``). The game keeps:

- ``actions``: every accepted action with its play time, in order: this is the
  replay (``engine.replay``), hints, undos and restarts included;
- ``history``: the undo records of moves and stock deals, as far back as the
  level allows (R18), each with the points it earned;
  (both are shared with the game's forks, so ``fork()`` costs the same however
  long the game: ``engine.shared``)
- the counters of R25 and ``earned`` (R23/R24; ``score()`` adds the clock).

Play time is passed in by the caller (milliseconds, never decreasing); the
engine never reads a clock (R22). ``t=None`` means "the same time as the last
action".
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NamedTuple

from engine import errors, moves
from engine.cards import card_str, parse_card
from engine.deal import Deal, deal_layout
from engine.events import (
    Dealt,
    Event,
    Flipped,
    Hinted,
    Moved,
    Restarted,
    Score,
    Stuck,
    SuitRemoved,
    SuitRestored,
    Undealt,
    Undone,
    Unflipped,
    Won,
)
from engine.hints import suggest
from engine.levels import Rules
from engine.scoring import earned_by, score_at
from engine.shared import ActionLog, UndoStack
from engine.state import DEAL, Record, State, apply_deal, apply_move, undo

__all__ = ["ACTION_TYPES", "Action", "Game", "Results"]

ACTION_TYPES = ("move", "deal", "undo", "restart", "hint")


class Action(NamedTuple):
    """One player action as the replay file records it (replay.md).

    A hint action carries the suggestion it gave (``hinted``), so a game
    rebuilt from its actions gives the same hint events as the original,
    whoever computed the suggestion (the solver, in another process).

    A named tuple, not a frozen dataclass: every action played makes one, and a
    rebuild one per logged action, and a frozen dataclass took about 2.8 times as
    long to make (it sets each field through ``object.__setattr__``).
    """

    type: str
    card: int | None = None
    to: int | None = None
    t: int = 0
    hinted: Hinted | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.type}
        if self.card is not None:
            out["card"] = card_str(self.card)
        if self.to is not None:
            out["to"] = self.to
        if self.hinted is not None:
            suggested = self.hinted.to_dict()
            del suggested["type"]
            out["suggested"] = suggested
        out["t"] = self.t
        return out

    def __str__(self) -> str:
        if self.type != "move":
            return self.type
        where = "" if self.to is None else f" {self.to}"
        return f"move {card_str(self.card or 0)}{where}"


class Results(NamedTuple):
    """A game's record so far (R20, R25; seed 003 and 004's results)."""

    moves: int
    undos: int
    hints: int
    score: int
    suits: int
    time_ms: int
    won: bool


_Entry = tuple[Record, int]
"""An undo history entry: the move's or deal's record, and the points it earned. A
plain tuple: every move makes one, and a named tuple's ``__new__`` is a Python call."""


class Game:
    """A game of one level from one deal. Not thread-safe; the caller serialises."""

    def __init__(self, rules: Rules, deal: int, layout: Deal | None = None) -> None:
        """Start ``rules``' game number ``deal`` (R6); ``layout`` overrides the deal's cards."""
        self.rules = rules
        self.deal_number = deal
        self.layout = layout if layout is not None else deal_layout(rules.layout, deal)
        self.state = State.from_deal(self.layout)
        self.history: UndoStack[_Entry] = UndoStack(rules.undo_limit)
        self.actions: ActionLog[Action] = ActionLog()
        self.earned = 0
        self.moves = 0
        self.undos = 0
        self.hints = 0
        self.time = 0
        self.won_at: int | None = None
        self.stuck = moves.is_stuck(self.state, rules)

    # -- queries --------------------------------------------------------------

    @property
    def won(self) -> bool:
        return self.won_at is not None

    def score(self, t: int | None = None) -> int:
        """The score at play time ``t`` (default: the last action's time)."""
        when = self.time if t is None or self.won else t
        return score_at(self.rules, self.earned, when, self.won_at)

    def results(self, t: int | None = None) -> Results:
        return Results(
            moves=self.moves,
            undos=self.undos,
            hints=self.hints,
            score=self.score(t),
            suits=len(self.state.found),
            time_ms=self.time if t is None or self.won else t,
            won=self.won,
        )

    def fork(self) -> Game:
        """An independent copy to try actions on: changing it leaves this game as it was.

        The server applies each action to a fork and keeps the fork only once the
        action is stored, so a refused write never shows in the game others see.
        O(1) in the game's length: the state is copied, the log and history shared.
        """
        other = Game.__new__(Game)
        other.__dict__.update(self.__dict__)
        other.state = self.state.copy()
        other.history = self.history.copy()
        other.actions = self.actions.copy()
        return other

    @property
    def undo_depth(self) -> int:
        """How many moves and deals undo can still take back."""
        return len(self.history)

    # -- actions --------------------------------------------------------------

    def play(self, action: Action) -> list[Event]:
        """Apply a replay-style action (``action.t`` is its play time)."""
        if action.type == "move":
            if action.card is None:
                raise ValueError("a move names a card")
            return self.move(action.card, action.to, action.t)
        if action.type == "hint":
            return self.hint(action.t, action.hinted)
        handlers = {
            "deal": self.deal,
            "undo": self.undo,
            "restart": self.restart,
        }
        if action.type not in handlers:
            raise ValueError(f"unknown action type {action.type!r}")
        return handlers[action.type](action.t)

    def replay(self, actions: Iterable[Action]) -> None:
        """Apply recorded actions as ``play`` does, without making their events.

        Each action is checked as by ``play`` (a log that breaks a rule raises the
        same ``RuleViolation``) and the game ends up exactly as after ``play``
        for each: position, counters, history, log. What is skipped is what
        only a live action needs: the events, and the dead-end check after each
        action (made once, at the end). A server rebuilding a game from its log
        spends about a third as long here (``bench``: docs/benchmarks.md).
        """
        played = False
        for action in actions:
            # Unpacked once: each field read by name is a lookup through the class.
            kind, card, to, t, hinted = action
            # The log keeps ``action`` itself when it is what ``play`` logs (a stored
            # log's are): an ``Action`` at its own time, carrying only what its kind
            # does. Making it anew was a sixth of a rebuild's instructions.
            kept = type(action) is Action
            bare = card is None and to is None
            if kind == "move":
                if card is None:
                    raise ValueError("a move names a card")
                when = self._check_time(t)
                record, same_suit = self._apply_move(card, to)
                if not (kept and t == when and hinted is None):
                    action = Action("move", card, to, when)
                self._book(action, record, same_suit)
            elif kind == "deal":
                when = self._check_time(t)
                moves.check_deal(self.state, self.rules)
                record = apply_deal(self.state)
                if not (kept and t == when and bare and hinted is None):
                    action = Action("deal", t=when)
                self._book(action, record, False)
            elif kind == "undo":
                when = self._check_time(t)
                self._take_back()
                if not (kept and t == when and bare and hinted is None):
                    action = Action("undo", t=when)
                self._log(action)
            elif kind == "restart":
                when = self._check_time(t)
                self._rewind()
                if not (kept and t == when and bare and hinted is None):
                    action = Action("restart", t=when)
                self._log(action)
            elif kind == "hint":
                when = self._check_time(t)
                if hinted is None:
                    hinted = self.suggestion()
                    kept = False
                self.hints += 1
                if not (kept and t == when and bare):
                    action = Action("hint", t=when, hinted=hinted)
                self._log(action)
                continue
            else:
                raise ValueError(f"unknown action type {kind!r}")
            played = True
        if played:
            self.stuck = not self.won and moves.is_stuck(self.state, self.rules)

    def move(self, card: int | str, to: int | None = None, t: int | None = None) -> list[Event]:
        """Move ``card`` (with all on it) to 1-based column ``to``, or auto-move it (R11)."""
        when = self._check_time(t)
        if isinstance(card, str):
            card = parse_card(card)
        record, same_suit = self._apply_move(card, to)
        src = record[1]
        events: list[Event] = [Moved(card, src + 1, record[3] + 1, record[4])]
        if record[5]:
            events.append(Flipped(src + 1, self.state.cols[src][-1]))
        return self._finish(Action("move", card, to, when), record, same_suit, events)

    def deal(self, t: int | None = None) -> list[Event]:
        """Deal the stock onto columns 1, 2, 3 (R13)."""
        when = self._check_time(t)
        moves.check_deal(self.state, self.rules)
        dealt = tuple(self.state.stock)
        record = apply_deal(self.state)
        return self._finish(Action("deal", t=when), record, False, [Dealt(dealt)])

    def undo(self, t: int | None = None) -> list[Event]:
        """Take back the last move or deal with all it caused (R18)."""
        when = self._check_time(t)
        found_before = list(self.state.found)
        record = self._take_back()
        events = self._undo_events(record, found_before)
        return self._after(Action("undo", t=when), events)

    def restart(self, t: int | None = None) -> list[Event]:
        """Rewind to the deal (R19): like undoing everything, whatever the undo limit."""
        when = self._check_time(t)
        self._rewind()
        return self._after(Action("restart", t=when), [self._restarted()])

    def hint(self, t: int | None = None, suggestion: Hinted | None = None) -> list[Event]:
        """Record a hint request (R20) and name one move for the position.

        ``suggestion`` is a hint computed elsewhere (the solver, off the event
        loop); by default the heuristic of ``engine.hints`` picks one.
        """
        when = self._check_time(t)
        if suggestion is None:
            suggestion = suggest(self.state, self.rules)
        self.hints += 1
        return self._after(Action("hint", t=when, hinted=suggestion), [suggestion])

    def suggestion(self) -> Hinted:
        """The hint for the current position, without recording a request."""
        return suggest(self.state, self.rules)

    # -- internals ------------------------------------------------------------

    def _check_time(self, t: int | None) -> int:
        if self.won_at is not None:  # ``won``, without a property's call on every action
            raise errors.GameOver()
        if t is None:
            return self.time
        if t < self.time:
            raise ValueError(f"play time went backwards: {t} < {self.time}")
        return t

    def _apply_move(self, card: int, to: int | None) -> tuple[Record, bool]:
        """Check and apply a move of ``card``: its undo record, and whether it went onto
        its own suit (for the points)."""
        state = self.state
        if to is None:
            move = moves.auto_move(state, self.rules, card)
        else:
            move = moves.check_move(state, self.rules, card, to)
        target = state.cols[move.dst]
        same_suit = bool(target) and target[-1] // 13 == card // 13
        return apply_move(state, *move), same_suit

    def _take_back(self) -> Record:
        """Undo the last move or deal, counters included (R18, R24, R25); its record."""
        if not self.history:
            raise errors.NothingToUndo()
        record, earned = self.history.pop()
        undo(self.state, record)
        self.earned -= earned
        self.undos += 1
        if self.rules.scoring == "timed":
            self.moves += 1  # R24/R25: an undo counts as a move, earning nothing
        return record

    def _rewind(self) -> None:
        """Back to the deal, counters included (R19)."""
        self.state = State.from_deal(self.layout)
        self.history.clear()
        self.earned = 0
        self.undos += 1
        if self.rules.scoring == "timed":
            self.moves += 1

    def _finish(
        self, action: Action, record: Record, same_suit: bool, events: list[Event]
    ) -> list[Event]:
        """Book a played move or deal (``_book``) with its events."""
        removals = record[6]
        state = self.state
        for slot, (column, flipped) in enumerate(removals, start=len(state.found) - len(removals)):
            events.append(SuitRemoved(state.found[slot], column + 1, slot + 1))
            if flipped:
                events.append(Flipped(column + 1, state.cols[column][-1]))
        self._book(action, record, same_suit)
        return self._after(action, events, logged=True)

    def _book(self, action: Action, record: Record, same_suit: bool) -> None:
        """Book a played move or deal: points for what it did, counters, history, log."""
        removals = record[6]
        flips = int(record[5])
        if removals:  # rare: no generator to make for the common move
            flips += sum(1 for _column, flipped in removals if flipped)
        earned = earned_by(self.rules, same_suit, flips, len(removals))
        self.history.append((record, earned))
        self.earned += earned
        self.moves += 1
        if len(self.state.found) == 4:
            self.won_at = action.t
        self._log(action)

    def _log(self, action: Action) -> None:
        self.time = action.t
        self.actions.append(action)

    def _after(self, action: Action, events: list[Event], logged: bool = False) -> list[Event]:
        """Log the action (unless ``logged``) and add the score, won and stuck events."""
        if not logged:
            self._log(action)
        if action.type != "hint":  # a hint leaves the position as it was
            self.stuck = not self.won and moves.is_stuck(self.state, self.rules)
        events.append(
            Score(
                self.score(),
                self.moves,
                self.undos,
                self.hints,
                self.earned,
                self.undo_depth,
                self.stuck,
            )
        )
        if self.won:
            events.append(Won(*self._won_results()))
        elif self.stuck and action.type != "hint":
            events.append(Stuck())
        return events

    def _won_results(self) -> tuple[int, int, int, int, int, int, int]:
        return (
            self.moves,
            self.time,
            self.score(),
            len(self.state.found),
            self.hints,
            self.undos,
            self.deal_number,
        )

    def _restarted(self) -> Restarted:
        state = self.state
        columns = tuple(
            (down, tuple(col[down:])) for col, down in zip(state.cols, state.down, strict=True)
        )
        return Restarted(columns, len(state.stock), tuple(state.reserve))

    def _undo_events(self, record: Record, found_before: list[int]) -> list[Event]:
        """The inverse events of ``record``, read after it was undone."""
        kind, src, index, dst, count, flipped, removals = record
        events: list[Event] = [Undone("deal" if kind == DEAL else "move")]
        slot = len(found_before)
        for column, removal_flipped in reversed(removals):
            if removal_flipped:
                events.append(Unflipped(column + 1))
            slot -= 1
            events.append(SuitRestored(found_before[slot], column + 1, slot + 1))
        if kind == DEAL:
            events.append(Undealt(src))
            return events
        if flipped:
            events.append(Unflipped(src + 1))
        state = self.state
        card = state.reserve[index] if src < 0 else state.cols[src][index]
        back_to_reserve = index + 1 if src < 0 else None  # the reserve keeps its order (R5)
        events.append(Moved(card, dst + 1, src + 1, count, back_to_reserve))
        return events
