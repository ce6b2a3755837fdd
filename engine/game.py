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

Snapshots
---------
Rebuilding a game by replaying its whole log costs time in proportion to its
length. ``snapshot()`` writes down everything a game needs to go on, except the
log itself: the position, the undo history still reachable, the counters and
the number of actions logged, as plain data (lists, ints, bools and None, which
JSON and msgpack both carry). ``Game.restore(rules, deal, snapshot)`` makes a
game equal to the one snapshotted, whose log knows its length but holds none of
its actions (``ActionLog.unloaded``); replaying the actions logged after the
snapshot brings it up to date. It plays, undoes (as deep as the original could),
restarts, hints and forks exactly as the original; only reading its old actions
waits for ``game.actions.fill(...)``. The layout (SNAPSHOT_FORMAT 1)::

    [1, logged, moves, undos, hints, earned, time, won_at, stuck,
     cols, down, stock, reserve, found, history]

``cols`` lists each column's cards bottom to top, ``down`` its face-down count,
``found`` the removed suits in slot order (``engine.state``). ``history`` lists
the reachable undo entries oldest first, each a record of ``engine.state`` with
its points: ``[kind, src, index, dst, count, flipped, [[column, flipped], ...],
earned]``. A change of layout or meaning takes a new format number.

A snapshot comes back from a database, so ``restore`` is a checked entry point:
anything this engine could not have written raises ``SnapshotError`` (a
``ValueError``) naming the part: wrong types or lengths, a bool for an int or
the reverse, counters that disagree with the logged count (each action counts
once, an undo under timed scoring twice), cards that are not the deal's, a
face-down card that is not where the deal put it, ``won_at`` or ``stuck`` that
the position contradicts, a history deeper than the undo limit, with points no
move earns, or that does not undo from this position back to the deal's cards.
Restoring reads the history and undoes it once, on a copy: its cost grows with
the history's depth, not the log's length. What it cannot check is whether the
history's moves were legal when made, which only the whole log shows.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final, NamedTuple

from engine import errors, moves
from engine.cards import CardParseError, card_str, parse_card
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
from engine.state import (
    DEAL,
    MOVE,
    RESERVE,
    SET_CARDS,
    Record,
    Removal,
    State,
    apply_deal,
    apply_move,
    undo,
)

__all__ = ["ACTION_TYPES", "SNAPSHOT_FORMAT", "Action", "Game", "Results", "SnapshotError"]

ACTION_TYPES = ("move", "deal", "undo", "restart", "hint")

SNAPSHOT_FORMAT = 1
"""The layout of ``Game.snapshot()`` (module docstring); a new layout or meaning, a new number."""


class SnapshotError(ValueError):
    """A snapshot ``Game.restore`` refuses; the message names the part that is wrong."""


class Action(NamedTuple):
    """One player action as the replay file records it (replay.md).

    A hint action carries the suggestion it gave (``hinted``), so a game
    rebuilt from its actions gives the same hint events as the original,
    whoever computed the suggestion (the solver, in another process). A hint
    recorded without one (older files and stores) keeps None: it is shown the
    heuristic's hint when played, and exported as recorded.

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

    # -- snapshots ------------------------------------------------------------

    def snapshot(self) -> list[Any]:
        """Everything but the log's actions, as plain data (module docstring, Snapshots)."""
        state = self.state
        history = [
            [kind, src, index, dst, count, flipped, [list(removal) for removal in removals], earned]
            for (kind, src, index, dst, count, flipped, removals), earned in self.history.entries()
        ]
        return [
            SNAPSHOT_FORMAT,
            len(self.actions),
            self.moves,
            self.undos,
            self.hints,
            self.earned,
            self.time,
            self.won_at,
            self.stuck,
            [list(col) for col in state.cols],
            list(state.down),
            list(state.stock),
            list(state.reserve),
            list(state.found),
            history,
        ]

    @classmethod
    def restore(cls, rules: Rules, deal: int, snapshot: object, layout: Deal | None = None) -> Game:
        """The game ``snapshot`` was taken of, its log's actions not loaded (module docstring).

        ``rules``, ``deal`` and ``layout`` are as for ``Game()``. Checked: anything
        malformed raises ``SnapshotError``.
        """
        game = cls(rules, deal, layout)
        data = _snapshot_items(snapshot)
        logged, moves_, undos, hints, earned, time, won_at, stuck = _read_counters(rules, data)
        state = _read_state(game.layout, data[9:14])
        won = len(state.found) == 4  # as ``_book`` decides it
        if (won_at is not None) != won:
            raise SnapshotError("won_at is set if and only if every suit is found")
        if won_at is not None and won_at != time:
            raise SnapshotError("a won game's won_at is the time of its last action")
        if stuck != (not won and moves.is_stuck(state, rules)):
            raise SnapshotError("stuck does not say whether the position is a dead end (R16)")
        entries = _read_history(rules, game.layout, data[14])
        if len(entries) > moves_ or sum(points for _record, points in entries) > earned:
            raise SnapshotError("the undo history holds more than the counters booked (earned)")
        if entries:  # with none, the position undone to is the position, checked above
            _check_history(state, entries, game.layout)
        for entry in entries:
            game.history.append(entry)
        game.state = state
        game.actions = ActionLog.unloaded(logged)
        game.moves, game.undos, game.hints, game.earned = moves_, undos, hints, earned
        game.time, game.won_at, game.stuck = time, won_at, stuck
        return game

    # -- actions --------------------------------------------------------------

    def play(self, action: Action) -> list[Event]:
        """Apply a replay-style action (``action.t`` is its play time)."""
        if action.type == "move":
            if action.card is None:
                raise ValueError("a move names a card")
            return self.move(action.card, action.to, action.t)
        if action.type == "hint":
            if action.hinted is not None:
                return self.hint(action.t, action.hinted)
            # A recorded hint without its suggestion (an older file's, a store's from
            # before hints were kept) shows the heuristic's, and is logged as recorded:
            # an export does not claim a suggestion that was never kept.
            when = self._check_time(action.t)
            suggestion = suggest(self.state, self.rules, self.positions())
            self.hints += 1
            return self._after(Action("hint", t=when), [suggestion])
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
        elif type(card) is not int or not 0 <= card < 52:  # True is no card, nor -1 KC
            raise CardParseError(f"not a card: {card!r}")
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
        loop); by default the heuristic of ``engine.hints`` picks one that does not
        lead back to a position undo can still reach (``positions``). Where undo
        reaches the deal (no undo limit, or fewer actions than it) following these
        hints does not go round in a circle; past classic's and relaxed's limit of
        100 (R18) it may, through a position undo no longer reaches (relaxed deal
        229409 does, after 158 hints). The server's hints do not: ``solver.plan``
        knows every position of the game's log.
        """
        when = self._check_time(t)
        if suggestion is None:
            suggestion = suggest(self.state, self.rules, self.positions())
        self.hints += 1
        return self._after(Action("hint", t=when, hinted=suggestion), [suggestion])

    def suggestion(self) -> Hinted:
        """The heuristic's hint for the current position alone, without recording a
        request."""
        return suggest(self.state, self.rules)

    def positions(self) -> set[bytes]:
        """The keys (``State.key``) of this position and of those on the way to it that
        undo can reach, found by undoing on a copy: time in proportion to the undo
        history's depth. A restored game knows the same ones as the original."""
        walk = self.state.copy()
        seen = {walk.key()}
        for record, _earned in reversed(self.history.entries()):
            undo(walk, record)
            seen.add(walk.key())
        return seen

    # -- internals ------------------------------------------------------------

    def _check_time(self, t: int | None) -> int:
        if self.won_at is not None:  # ``won``, without a property's call on every action
            raise errors.GameOver()
        if t is None:
            return self.time
        if type(t) is not int:  # a float would be scored, then refused by every snapshot
            raise ValueError(f"a play time is a whole number of milliseconds, not {t!r}")
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


# -- reading a snapshot (``Game.restore``) -----------------------------------------

_SNAPSHOT_ITEMS = 15
_MAX_COUNT = 2**63 - 1  # msgpack's and a bigint column's largest signed int


def _snapshot_items(snapshot: object) -> list[Any] | tuple[Any, ...]:
    """The top-level items, once the format number says the layout is ours."""
    if not isinstance(snapshot, list | tuple):
        raise SnapshotError("a snapshot is a list")
    version = snapshot[0] if snapshot else None
    if type(version) is not int or version != SNAPSHOT_FORMAT:
        raise SnapshotError(f"not a snapshot of format {SNAPSHOT_FORMAT}")
    if len(snapshot) != _SNAPSHOT_ITEMS:
        raise SnapshotError(f"a snapshot of format {SNAPSHOT_FORMAT} has {_SNAPSHOT_ITEMS} items")
    return snapshot


def _list(value: object, what: str, length: int | None = None) -> list[Any] | tuple[Any, ...]:
    if not isinstance(value, list | tuple):
        raise SnapshotError(f"{what} is not a list")
    if length is not None and len(value) != length:
        raise SnapshotError(f"{what} has {len(value)} items, not {length}")
    return value


def _int(value: object, what: str, low: int = 0, high: int = _MAX_COUNT) -> int:
    if type(value) is not int:  # a bool is no count, nor is a float however round
        raise SnapshotError(f"{what} is not an integer")
    if not low <= value <= high:
        raise SnapshotError(f"{what} is outside {low}..{high}")
    return value


def _bool(value: object, what: str) -> bool:
    if not isinstance(value, bool):
        raise SnapshotError(f"{what} is not true or false")
    return value


def _read_counters(
    rules: Rules, data: list[Any] | tuple[Any, ...]
) -> tuple[int, int, int, int, int, int, int | None, bool]:
    """logged, moves, undos, hints, earned, time, won_at, stuck; checked against each other."""
    logged = _int(data[1], "the logged count")
    moves_, undos, hints = (
        _int(data[i], name) for i, name in ((2, "moves"), (3, "undos"), (4, "hints"))
    )
    earned, time = _int(data[5], "earned"), _int(data[6], "time")
    won_at = None if data[7] is None else _int(data[7], "won_at")
    stuck = _bool(data[8], "stuck")
    # Every logged action counts once: a move or deal in ``moves``, an undo or restart
    # in ``undos`` (under timed scoring in ``moves`` as well, R24/R25), a hint in ``hints``.
    timed = rules.scoring == "timed"
    if logged != moves_ + hints + (0 if timed else undos) or (timed and undos > moves_):
        raise SnapshotError("the logged count does not match the counters")
    return logged, moves_, undos, hints, earned, time, won_at, stuck


def _read_state(layout: Deal, parts: list[Any] | tuple[Any, ...]) -> State:
    """The position, checked to be the deal's cards in a shape play can reach."""
    count = len(layout.columns)
    raw_cols, raw_down, raw_stock, raw_reserve, raw_found = parts
    cols = [
        list(_list(col, f"column {n}"))
        for n, col in enumerate(_list(raw_cols, "the columns", count), 1)
    ]
    down = _ints(raw_down, "the face-down counts", 51, count)
    stock = list(_list(raw_stock, "the stock"))
    if len(stock) not in (0, len(layout.stock)):
        raise SnapshotError(f"the stock has {len(stock)} cards, not 0 or {len(layout.stock)}")
    reserve = list(_list(raw_reserve, "the reserve"))
    if len(reserve) > len(layout.reserve):
        raise SnapshotError(
            f"the reserve has {len(reserve)} cards, more than {len(layout.reserve)}"
        )
    # Every card at once: ints (a bool would sort as one), then exactly the deal's cards.
    cards = [card for col in cols for card in col] + stock + reserve
    if cards and set(map(type, cards)) != _JUST_INTS:
        raise SnapshotError("the position holds a card that is not an integer")
    found = _ints(raw_found, "the found suits", 3)
    if len(found) > 4:
        raise SnapshotError("the position's cards are not the deal's cards")
    for suit in found:
        cards += SET_CARDS[suit]
    if sorted(cards) != _deal_cards(layout):
        raise SnapshotError("the position's cards are not the deal's cards")
    state = State(cols, down, stock, reserve, found)
    _check_face_down(state, layout, "the position")
    return state


def _check_face_down(state: State, layout: Deal, what: str) -> None:
    """Face-down cards never move (R7) and a top card is face up (R12): each column's are
    some of the deal's bottom face-down cards, under at least one face-up card. Nor do
    the stock's, until dealt all at once, nor the reserve's but to leave it: the stock is
    the deal's or empty, the reserve the deal's less some of its cards, in its order.
    (The counts and the deal's cards overall are checked by the caller.)"""
    for n, (col, hidden) in enumerate(zip(state.cols, state.down, strict=True)):
        if hidden > len(col) or (col and hidden == len(col)):
            raise SnapshotError(f"{what}'s column {n + 1} is face-down to the top")
        if hidden > layout.face_down[n] or col[:hidden] != list(layout.columns[n][:hidden]):
            raise SnapshotError(f"{what}'s column {n + 1} has face-down cards not the deal's")
    if state.stock and state.stock != list(layout.stock):
        raise SnapshotError(f"{what}'s stock is not the deal's")
    left = iter(layout.reserve)
    if not all(card in left for card in state.reserve):  # a subsequence, in order
        raise SnapshotError(f"{what}'s reserve is not the deal's")


def _ints(value: object, what: str, high: int, length: int | None = None) -> list[int]:
    """A list of ints in 0..high (in C: the types in one pass, then the bounds; a restore
    reads some twenty such lists, and a Python loop over their cards was a third of it).
    The message is made only on failure."""
    items = list(_list(value, what, length))
    if items and (set(map(type, items)) != _JUST_INTS or min(items) < 0 or max(items) > high):
        raise SnapshotError(f"{what} hold an item that is not an integer in 0..{high}")
    return items


_JUST_INTS: Final = {int}


def _deal_cards(layout: Deal) -> list[int]:
    cards = [card for col in layout.columns for card in col]
    return sorted(cards + list(layout.stock) + list(layout.reserve))


def _read_history(rules: Rules, layout: Deal, value: object) -> list[_Entry]:
    """The undo entries, oldest first, each shaped as ``engine.state`` records it."""
    raw = _list(value, "the undo history")
    if rules.undo_limit is not None and len(raw) > rules.undo_limit:
        raise SnapshotError(f"the undo history is deeper than the undo limit ({rules.undo_limit})")
    bounds = (len(layout.columns), len(layout.stock), len(layout.reserve))
    return [_read_entry(rules, bounds, entry, n) for n, entry in enumerate(raw)]


def _read_entry(rules: Rules, bounds: tuple[int, int, int], value: object, n: int) -> _Entry:
    """One undo entry: a record ``engine.state`` could have made for this deal, with the
    points ``Game._book`` could have booked for it. Plain comparisons, messages made only
    on failure: every restore reads the whole history, which may be as long as the log."""
    columns, stock, reserve = bounds
    if not isinstance(value, list | tuple) or len(value) != 8:
        raise SnapshotError(f"history entry {n} is not a list of 8 items")
    kind, src, index, dst, count, flipped, raw_removals, points = value
    if not (
        type(kind) is int
        and type(src) is int
        and type(index) is int
        and type(dst) is int
        and type(count) is int
        and type(points) is int
        and type(flipped) is bool
        and isinstance(raw_removals, list | tuple)
    ):
        raise SnapshotError(f"history entry {n} is not of ints, a bool and a list")
    if kind == MOVE:
        fits = RESERVE <= src < columns and 0 <= dst < columns and src != dst
        if src == RESERVE:
            fits = fits and 0 <= index < reserve and count == 1 and not flipped
        else:
            fits = fits and 0 <= index < 52 and 0 < count <= 52 and (index > 0 or not flipped)
    else:
        fits = kind == DEAL and 0 < src <= stock and index == dst == count == 0 and not flipped
    if not fits:
        raise SnapshotError(f"history entry {n} is no move or deal of this deal")
    removals: tuple[Removal, ...] = ()
    flips = int(flipped)
    if raw_removals:  # rare: no generators to make for the common entry
        removals = tuple(_read_removal(removal, columns, n) for removal in raw_removals)
        if len(removals) > 4:
            raise SnapshotError(f"history entry {n} removes more than four suits")
        flips += sum(1 for _column, removal_flipped in removals if removal_flipped)
    # The points ``Game._book`` booked: a move may or may not have gone onto its own suit.
    if points != earned_by(rules, False, flips, len(removals)) and (
        kind == DEAL or points != earned_by(rules, True, flips, len(removals))
    ):
        raise SnapshotError(f"history entry {n}'s points are not what it earns")
    return (kind, src, index, dst, count, flipped, removals), points


def _read_removal(value: object, columns: int, n: int) -> Removal:
    if isinstance(value, list | tuple) and len(value) == 2:
        column, flipped = value
        if type(column) is int and 0 <= column < columns and type(flipped) is bool:
            return column, flipped
    raise SnapshotError(f"history entry {n} has a malformed removal")


def _check_history(state: State, entries: list[_Entry], layout: Deal) -> None:
    """Undo every entry on a copy of ``state``, as far as the restored game could: a
    history that does not fit the position (a list emptied too soon, no card where the
    undo's events name one, a card lost, a face-down card moved) is refused now, not met
    by an undo later. That the position undone to is one play could reach, only the
    whole log could show."""
    work = state.copy()
    try:
        for record, _points in reversed(entries):
            kind, src, index = record[:3]
            if kind == DEAL and work.stock:
                raise SnapshotError("the undo history undoes a deal onto a full stock")
            undo(work, record)
            if kind == MOVE and index >= len(work.reserve if src < 0 else work.cols[src]):
                raise IndexError("no card where the undone move's events would name one")
    except IndexError:
        raise SnapshotError("the undo history does not fit the position") from None
    _check_face_down(work, layout, "the position undone to")
    if sorted(work.all_cards()) != _deal_cards(layout):
        raise SnapshotError("the undo history does not fit the position")
