"""Depth-first search over positions, with a transposition table and sound pruning.

``solve(state, rules, budget_ms)`` answers ``won`` (with the actions of a
win), ``lost`` (proved: the search was exhaustive and every pruning rule it
used is sound, see ``prune``), or ``unknown`` (the time, node or memory budget
ran out first).

Theory of operation
-------------------
The search plays moves on one mutable ``State`` with the engine's unchecked
fast path (``apply_move``/``apply_deal``/``undo``) and an explicit stack, so a
deep line cannot hit Python's recursion limit. Every position met is keyed
(``prune.canonical_key``) into a set of positions already searched: any
position is expanded at most once, which also cuts the cycles that the
any-card and any-suit rules allow. A position is a win when four suits are
removed.

Moves are generated per position (``_ordered_moves``): onto each column's
top card goes only a card one rank lower (of the same suit unless building is
any-suit); to an empty column goes a king (or any card, by the level) that is
not already at the bottom of its column (before the deal also a whole column,
when that changes where a stock card lands); then the stock deal. They are
tried best first: moves that turn a card face up, then ones that empty a
column, then the rest, the stock deal last (under any-suit building before the
moves into empty columns and off a card's successor: ``ANY_SUIT_DEAL``).
With ``prune`` on (the default) the rules of ``prune`` apply: a safe build is played without trying
alternatives (rule 2), equivalent empty columns are tried once (4), a
position from which some suit can never be removed (5; 9 under any-suit
building), or in which no column
can ever empty again (8), is dropped, and so are the moves into the last empty
column that lead to one; the deal is not tried right after a move that kept
off the columns it lands on (6), and a card is not moved off king-rooted runs
into an empty column (7).

Under any-suit building (level relaxed) rule 9 replaces rule 5 and is
checked at every position entered: a build there can block (the card moved
covers another card's only free host). On the same-suit levels only the deal
and moves into the last empty column can make a position blocked (rules 5
and 8): a build only takes needs away. So the search runs
the full check after the deal, and for the moves into the last empty column
one derivation per position answers for all of them before they are played.
Position keys are kept per column (``_Keys``) and the key a move leads to is
read off the two columns it changes, so a move into a position already
searched is dropped without playing it.

``native.c`` is this search translated to C, function by function; ``solve``
runs it whenever it is built. A change here (a move's score, a rule, what
counts as the same position) must be made there too:
``tests/engine/solver/test_native.py`` fails until both agree on every verdict,
node count and winning line.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any

from engine.game import Action
from engine.levels import Rules
from engine.solver.native import NativeLine, native_search
from engine.solver.native import available as native_available
from engine.solver.prune import (
    column_key,
    fillings_that_never_empty,
    is_blocked,
    is_blocked_any_suit,
    key_from_parts,
    kings_that_block,
    never_empties,
)
from engine.state import (
    DEAL,
    RESERVE,
    SET_CARDS,
    Record,
    State,
    apply_deal,
    apply_move,
    undo,
)

__all__ = ["DEAL_MOVE", "SolverMove", "Verdict", "candidate_moves", "solve"]

SolverMove = tuple[int, int, int]  # (src, start, dst); src RESERVE for the reserve
DEAL_MOVE: SolverMove = (-2, 0, 0)
DEFAULT_MAX_POSITIONS = 2_000_000
# Under any-suit building the deal is tried after the builds but before the moves
# into empty columns and off a card's successor; last, a wrong moment to deal
# traps the search in the huge part of the game before it (deals 1..200: 91% won
# within 40,000 positions against 81% with the deal last).
ANY_SUIT_DEAL = -10
_CLOCK_EVERY = 256


@dataclass(frozen=True, slots=True)
class Verdict:
    """The answer of a search; ``actions`` (replay actions) only when won."""

    result: str  # "won", "lost" or "unknown"
    nodes: int
    ms: int
    actions: tuple[Action, ...] = field(default=())

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"result": self.result, "nodes": self.nodes, "ms": self.ms}
        if self.result == "won":
            out["actions"] = [action.to_dict() for action in self.actions]
        return out


def _empty_targets(state: State, prune: bool) -> list[int]:
    """The empty columns worth trying (rule 4 of prune: equivalent ones once)."""
    empty = [column for column, col in enumerate(state.cols) if not col]
    if not prune or len(empty) < 2:
        return empty
    special = len(state.stock)  # columns that still receive a stock card
    return [c for c in empty if c < special] + [c for c in empty if c >= special][:1]


def _score(state: State, src: int, index: int, empty_target: bool) -> int:
    """How promising a move is: turning a card face up first, the stock deal last."""
    if src == RESERVE:
        return 20
    value = -30 if empty_target else 10  # a build puts the card where it must end up
    if not index:  # empties a column; into an empty one only to steer the deal
        return -90 if empty_target else value + 50
    if index == state.down[src]:
        value += 100
    col = state.cols[src]
    card = col[index]
    if col[index - 1] == card + 1 and card % 13 != 12:
        value -= 60  # off its own successor: rarely what a win needs
    return value


def candidate_moves(state: State, rules: Rules, prune: bool = True) -> list[SolverMove]:
    """The moves worth searching from ``state``, best first."""
    if _closing(state, rules, prune):
        forced = _safe_build(state)
        if forced is not None:
            return [forced]  # prune rule 2: a safe build needs no alternatives
    return _ordered_moves(state, rules, prune)[::-1]


def _on_finished_run(state: State, src: int, index: int) -> bool:
    """Whether ``cols[src][index]`` lies on its successor on top of king-rooted runs
    (``_settled``): prune rule 7."""
    col = state.cols[src]
    card = col[index]
    if col[index - 1] != card + 1 or card % 13 == 12:
        return False
    lowest = state.down[src]
    return lowest < index and _settled(col, lowest, index - 1)


def _outside(state: State, move: SolverMove) -> bool:
    """Whether ``move`` (just played) kept off the columns the stock is still dealt onto
    (prune rule 6: the deal is then not tried after it)."""
    src, _index, dst = move
    dealt_onto = len(state.stock)
    return bool(dealt_onto) and src >= dealt_onto and dst >= dealt_onto


def _ordered_moves(state: State, rules: Rules, prune: bool, deal: bool = True) -> list[SolverMove]:
    """The moves worth searching from ``state``, best LAST (ready to pop); the stock
    deal among them only with ``deal``."""
    cols = state.cols
    down = state.down
    reserve = state.reserve
    scored: list[tuple[int, SolverMove]] = []
    any_suit = rules.any_suit
    column_of = _column_of(state) if any_suit or reserve else None
    for dst, target in enumerate(cols):  # builds (R8)
        if not target or not target[-1] % 13:
            continue
        top = target[-1]
        if column_of is None:  # same suit, nothing in reserve: look the card up directly
            wanted_card = top - 1
            for source, col in enumerate(cols):
                if wanted_card in col:
                    index = col.index(wanted_card)
                    if source != dst and index >= down[source]:
                        # ``_score(state, source, index, False)``, inlined (never a king)
                        if not index:
                            value = 60
                        else:
                            value = 110 if index == down[source] else 10
                            if col[index - 1] == top:
                                value -= 60
                        scored.append((value, (source, index, dst)))
                    break
            continue
        wanted = [suit * 13 + top % 13 - 1 for suit in range(4)] if any_suit else [top - 1]
        for card in wanted:
            src = column_of.get(card)
            if src is None or src == dst:
                continue
            index = reserve.index(card) if src == RESERVE else cols[src].index(card)
            value = _score(state, src, index, False)
            scored.append((value if card == top - 1 else value - 10, (src, index, dst)))
    targets = _empty_targets(state, prune) if [] in cols else []
    if targets:  # into empty columns (R9)
        if column_of is None:
            column_of = _column_of(state)
        kings_only = rules.kings_only
        dealt_onto = len(state.stock)
        blocking: set[int] = set()
        keep_on_runs = prune and not kings_only and not any_suit and not state.stock
        if prune and kings_only and not any_suit and cols.count([]) == 1:
            kings = [
                card
                for card, src in column_of.items()
                if card % 13 == 12 and (src == RESERVE or cols[src][0] != card)
            ]
            if kings:
                blocking = kings_that_block(state, kings)
        elif prune and not kings_only and not any_suit and cols.count([]) == 1:
            picks = [
                card for card, src in column_of.items() if src == RESERVE or cols[src][0] != card
            ]
            blocking = fillings_that_never_empty(state, picks)
        if kings_only:
            sources = [(src, card) for card, src in column_of.items() if card % 13 == 12]
        else:
            sources = [(RESERVE, card) for card in reserve]
            for src, col in enumerate(cols):
                sources += ((src, card) for card in col[down[src] or (0 if dealt_onto else 1) :])
        for src, card in sources:
            index = reserve.index(card) if src == RESERVE else cols[src].index(card)
            if card in blocking and (index or src == RESERVE):
                continue  # prune rules 5 and 8: the last empty column, taken for good
            if keep_on_runs and index and _on_finished_run(state, src, index):
                continue  # prune rule 7
            value = _score(state, src, index, True)
            for dst in targets:
                if not index and src >= dealt_onto and dst >= dealt_onto:
                    continue  # a whole column that changes no stock card's place: no change
                scored.append((value, (src, index, dst)))
    dealing = bool(state.stock) and deal
    if dealing and any_suit:
        scored.append((ANY_SUIT_DEAL, DEAL_MOVE))
    scored.sort(key=itemgetter(0), reverse=True)
    moves = [move for _value, move in reversed(scored)]
    if dealing and not any_suit:
        moves.insert(0, DEAL_MOVE)
    return moves


def _column_of(state: State) -> dict[int, int]:
    """The column of every face-up card (RESERVE for a reserve card)."""
    column_of: dict[int, int] = {}
    down = state.down
    for column, col in enumerate(state.cols):
        column_of.update(dict.fromkeys(col[down[column] :], column))
    if state.reserve:
        column_of.update(dict.fromkeys(state.reserve, RESERVE))
    return column_of


def _closing(state: State, rules: Rules, prune: bool) -> bool:
    """Whether prune rule 2 applies: no stock left, same-suit building."""
    return prune and not state.stock and not rules.any_suit


def _settled(col: list[int], lowest: int, end: int) -> bool:
    """Whether the face-up cards ``col[lowest:]`` up to index ``end`` are king-rooted
    runs: the lowest one a king, each other one a king or on its successor."""
    if col[lowest] % 13 != 12:
        return False
    for index in range(end % len(col), lowest, -1):
        card = col[index]
        if card % 13 != 12 and col[index - 1] != card + 1:
            return False
    return True


def _safe_build(state: State) -> SolverMove | None:
    """A build onto the top of king-rooted runs (prune rule 2), or None."""
    cols = state.cols
    down = state.down
    for dst, target in enumerate(cols):
        lowest = down[dst]
        if len(target) <= lowest or target[lowest] % 13 != 12 or not target[-1] % 13:
            continue
        if not _settled(target, lowest, -1):
            continue
        card = target[-1] - 1
        for src, col in enumerate(cols):
            if card in col:
                index = col.index(card)
                if index >= down[src]:
                    return (src, index, dst)
                break
        else:
            if card in state.reserve:
                return (RESERVE, state.reserve.index(card), dst)
    return None


Line = list[tuple[SolverMove, int]]  # moves with the card each one picked (-1 for the deal)
Step = tuple[list[Record], Line]


def _card(state: State, move: SolverMove) -> int:
    src, index, _dst = move
    if src == DEAL_MOVE[0]:
        return -1
    return state.reserve[index] if src == RESERVE else state.cols[src][index]


def _touched(record: Record) -> range | tuple[int, ...]:
    """The columns an apply (or its undo) changed."""
    kind, src, _index, dst, _count, _flipped, _removals = record
    if kind == DEAL:
        return range(src)  # for a deal, ``src`` holds the number of cards dealt
    return (dst,) if src < 0 else (src, dst)


def _completes(col: list[int], down: int) -> bool:
    """Whether a complete face-up set lies on top of ``col`` (its top card an ace)."""
    return len(col) - down >= 13 and col[-13:] == SET_CARDS[col[-1] // 13]


class _Keys:
    """Position keys (``prune.canonical_key``) kept up to date column by column.

    A move changes two columns, so re-encoding only those and joining the
    cached parts is cheaper than encoding the whole position at every node.
    """

    def __init__(self, state: State) -> None:
        self.parts = [
            column_key(down, col) for down, col in zip(state.down, state.cols, strict=True)
        ]
        self.saved: list[list[bytes]] = []  # the parts before each apply not yet undone

    def touch(self, state: State, record: Record) -> None:
        """After an apply: re-encode the columns it changed (the old parts are kept)."""
        self.saved.append(self.parts)
        self.parts = parts = self.parts.copy()
        kind, src, _index, dst, _count, _flipped, _removals = record
        if kind == DEAL or src < 0:
            for column in _touched(record):
                parts[column] = column_key(state.down[column], state.cols[column])
            return
        parts[src] = column_key(state.down[src], state.cols[src])
        parts[dst] = column_key(state.down[dst], state.cols[dst])

    def untouch(self) -> None:
        """After the undo of the latest apply still in effect: its parts again."""
        self.parts = self.saved.pop()

    def key(self, state: State) -> bytes:
        return key_from_parts(self.parts, state)

    def key_after(self, state: State, move: SolverMove) -> bytes | None:
        """The key ``move`` would lead to, without playing it; None when a set might go.

        Most moves lead to a position already searched (independent moves met in
        another order), so reading the key off the two changed columns saves
        playing and taking back the move.
        """
        src, index, dst = move
        if src < 0:
            return None
        col = state.cols[src]
        down = state.down[src]
        left = index - 1 if index and down == index else down  # R12
        stays = col[:index]
        grown = state.cols[dst] + col[index:]
        if not grown[-1] % 13 and _completes(grown, state.down[dst]):
            return None  # a set goes (R14)
        if index and not stays[-1] % 13 and _completes(stays, left):
            return None
        parts = self.parts
        old_src, old_dst = parts[src], parts[dst]
        parts[src] = column_key(left, stays)
        parts[dst] = column_key(state.down[dst], grown)
        key = key_from_parts(parts, state)
        parts[src], parts[dst] = old_src, old_dst
        return key


class _Search:
    """One search; holds the counters, limits and the positions already searched."""

    def __init__(
        self, rules: Rules, budget_ms: float | None, max_nodes: int | None, max_positions: int
    ) -> None:
        self.rules = rules
        self.deadline = None if budget_ms is None else time.perf_counter() + budget_ms / 1000
        self.max_nodes = max_nodes
        self.max_positions = max_positions
        self.nodes = 0
        self.exhausted_budget = False
        self.seen: set[bytes] = set()
        self.keys: _Keys | None = None
        self.deadlocks = False
        self.emptying = False
        self.closing = False
        self.stranding = False

    def out_of_budget(self) -> bool:
        if self.max_nodes is not None and self.nodes >= self.max_nodes:
            return True
        if len(self.seen) >= self.max_positions:
            return True
        return (
            self.deadline is not None
            and self.nodes % _CLOCK_EVERY == 0
            and time.perf_counter() > self.deadline
        )

    def _key(self, state: State) -> bytes:
        return state.key() if self.keys is None else self.keys.key(state)

    def _apply(self, state: State, move: SolverMove, step: Step) -> None:
        step[1].append((move, _card(state, move)))
        record = apply_deal(state) if move == DEAL_MOVE else apply_move(state, *move)
        step[0].append(record)
        if self.keys is not None:
            self.keys.touch(state, record)

    def _take_back(self, state: State, step: Step) -> None:
        for record in reversed(step[0]):
            undo(state, record)
            if self.keys is not None:
                self.keys.untouch()

    def _remember(self, state: State, position: bytes | None = None) -> bool:
        """Add the position (``position`` its key, if known) to those searched;
        False when it was there already."""
        if position is None:
            position = self._key(state)
        if position in self.seen:
            return False
        self.seen.add(position)
        return True

    def _play_builds(self, state: State, step: Step) -> bool:
        """Play safe builds until none is left (rule 2); False when that meets a searched
        position. Builds follow deterministically, so each position on the way is
        remembered: another line reaching one of them would go on the same way."""
        build = _safe_build(state)
        while build is not None and len(state.found) < 4:
            self._apply(state, build, step)
            if not self._remember(state):
                return False
            build = _safe_build(state)
        return True

    def _enter(
        self, state: State, move: SolverMove, step: Step, prune: bool, ahead: bytes | None
    ) -> bool:
        """Play ``move`` (and its safe builds); False when that leads nowhere new.

        After the deal the position is checked for prune rules 5 and 8; the
        moves into the last empty column that would fail them are never
        generated, and nothing else can make a position fail them.
        """
        dealt = move == DEAL_MOVE
        self._apply(state, move, step)
        if len(state.found) == 4:
            return True
        if not self._remember(state, ahead):
            return False
        if self.closing and not state.stock and not self._play_builds(state, step):
            return False
        # Only the deal can block (rule 5): a build only takes needs away, and
        # ``_ordered_moves`` left out the kings whose move to an empty column blocks.
        # Rule 8 likewise (``_ordered_moves`` left out the moves into the last empty
        # column after which no column can empty again).
        if self.stranding:  # rule 9: not monotone under builds, so checked everywhere
            return not is_blocked_any_suit(state)
        if self.deadlocks:
            return not (dealt and is_blocked(state))
        return not (self.emptying and dealt and never_empties(state))

    def run(self, state: State, prune: bool) -> Line | None:
        """Search from ``state`` (restored on return); a winning line, or None."""
        rules = self.rules
        self.keys = _Keys(state) if prune else None
        self.deadlocks = prune and rules.kings_only and not rules.any_suit
        self.emptying = prune and not rules.kings_only and not rules.any_suit
        self.closing = prune and not rules.any_suit  # ``_closing`` once the stock is gone
        self.stranding = prune and rules.kings_only and rules.any_suit
        if (
            (self.deadlocks and is_blocked(state))
            or (self.emptying and never_empties(state))
            or (self.stranding and is_blocked_any_suit(state))
        ):
            return None
        steps: list[Step] = [([], [])]
        self.seen = seen = {self._key(state)}
        keys = self.keys
        if _closing(state, rules, prune):
            self._play_builds(state, steps[0])
        frames = [candidate_moves(state, rules, prune)[::-1]]
        won: Line | None = None
        while frames:
            if len(state.found) == 4:
                won = [entry for _records, line in steps for entry in line]
                break
            pending = frames[-1]
            if not pending:
                frames.pop()
                self._take_back(state, steps.pop())
                continue
            if self.out_of_budget():
                self.exhausted_budget = True
                break
            move = pending.pop()
            ahead = None  # the key it leads to, read off without playing it
            if keys is not None and move[0] >= RESERVE:
                ahead = keys.key_after(state, move)
                if ahead is not None and ahead in seen:
                    continue
            step: Step = ([], [])
            steps.append(step)
            if not self._enter(state, move, step, prune, ahead):
                self._take_back(state, steps.pop())
                continue
            self.nodes += 1
            frames.append(
                _ordered_moves(state, rules, prune, not (prune and _outside(state, move)))
            )
        for step in reversed(steps):
            self._take_back(state, step)
        return won


def _actions(line: Line | NativeLine) -> tuple[Action, ...]:
    return tuple(
        Action("deal") if move == DEAL_MOVE else Action("move", card, move[2] + 1)
        for move, card in line
    )


def solve(
    state: State,
    rules: Rules,
    budget_ms: float | None = 2000,
    max_nodes: int | None = None,
    max_positions: int = DEFAULT_MAX_POSITIONS,
    prune: bool = True,
    native: bool | None = None,
) -> Verdict:
    """Decide ``state`` under ``rules``; ``state`` is left as it was.

    ``budget_ms``/``max_nodes``/``max_positions`` bound time, nodes and memory
    (positions remembered); the first one reached gives ``unknown``. With
    ``prune=False`` no pruning rule is used (the reference for soundness tests).
    ``native``: run the compiled search (``engine.solver.native``), the same
    search about 20 times faster; by default whenever it is built.
    """
    started = time.perf_counter()
    if native or (native is None and native_available()):
        result, nodes, native_line = native_search(
            state,
            kings_only=rules.kings_only,
            any_suit=rules.any_suit,
            prune=prune,
            budget_ms=budget_ms,
            max_nodes=max_nodes,
            max_positions=max_positions,
        )
        ms = round((time.perf_counter() - started) * 1000)
        return Verdict(result, nodes, ms, _actions(native_line) if result == "won" else ())
    search = _Search(rules, budget_ms, max_nodes, max_positions)
    line = search.run(state, prune)
    ms = round((time.perf_counter() - started) * 1000)
    if line is not None:
        return Verdict("won", search.nodes, ms, _actions(line))
    result = "unknown" if search.exhausted_budget else "lost"
    return Verdict(result, search.nodes, ms)
