"""Hints that are a plan: the next step of a winning line, else a safe heuristic move.

``advise(state, rules, seen=..., lost=..., plan=...)`` answers with an
``Advice``: the hint to give (``Hinted``), what it rests on (``basis``) and,
when the solver found a win, the rest of that line so that the next hint can
follow it without searching again.

Theory of operation
-------------------
1. **Plan.** If ``plan`` (the previous ``Advice``) was followed to reach
   ``state`` (the position after its first step is ``state``), its line goes on:
   the hint is the line's next step and nothing is searched. A winning line of
   the solver never visits a position twice (the search expands every position
   at most once), so following one plan reaches the win without repetition.
2. **Solver.** Otherwise ``solve`` runs with the hint budget. A win whose line
   stays off the positions already seen (``seen``) becomes the plan, once
   ``shorten`` has cut its detours (a depth-first line on relaxed can run to
   hundreds of needless moves). ``lost``
   means every move loses: the hint is ``none`` with basis ``"lost"``.
3. **Heuristic.** With no usable line (budget spent, or the line would return
   to a seen position), every useful move and the deal are tried one step
   ahead (``legal_moves(useful_only=True)``: never a whole column onto an
   empty one, the shuttle R16 calls useless). A candidate is dropped when it
   leads to a seen position, to a position in ``lost`` or to one a small
   search proves lost; one that the small search wins (on a line that stays
   off the seen positions) becomes the plan at once. Of the
   rest, the best by ``engine.hints.score_move`` is the hint, and the deal when
   no move scores above zero (as ``engine.hints.suggest`` does).
4. **Nothing left.** ``none`` with basis ``"lost"`` when every candidate was
   proved lost, ``"no_moves"`` when there is no candidate at all (stock dealt,
   no useful move), ``"repeats"`` when the only moves left return to positions
   already seen (or are shuttles).

Positions are compared by ``State.key()``: the server keeps those keys for the
positions a game has seen and those the solver proved lost; ``Advice.proved_lost``
hands back the keys this call proved lost, for it to remember.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field

from engine.events import Hinted
from engine.game import Action
from engine.hints import score_move
from engine.levels import Rules
from engine.moves import Move, legal_moves, locate
from engine.solver.search import solve
from engine.state import RESERVE, State, apply_deal, apply_move, undo

__all__ = ["Advice", "advise", "play", "shorten"]

HINT_BUDGET_MS = 300
LOOK_AHEAD_NODES = 300  # per candidate of the heuristic: proves lost, or wins, the easy ones


@dataclass(frozen=True, slots=True)
class Advice:
    """What to tell a player who asks for a hint.

    - ``hint``: the action to name (``"move"``, ``"deal"``) or ``"none"``.
    - ``basis``: ``"plan"`` (the next step of a winning line), ``"heuristic"``
      (no winning line known), or, with ``none``, ``"lost"`` (every move is
      known to lose), ``"no_moves"`` or ``"repeats"`` (see the module docstring).
    - ``line``: with ``"plan"``, the winning line from this position (its first
      action is ``hint``); pass the advice back as ``plan`` to follow it.
    - ``after``: the key of the position the hint leads to (empty with ``none``).
    - ``proved_lost``: keys of positions this call found lost (proved here, or
      met in ``lost``).
    """

    hint: Hinted
    basis: str
    line: tuple[Action, ...] = ()
    after: bytes = b""
    proved_lost: frozenset[bytes] = field(default=frozenset())

    def continues_at(self, state: State) -> bool:
        """Whether ``state`` is where following this plan's first step leads."""
        return self.basis == "plan" and len(self.line) > 1 and state.key() == self.after


def advise(
    state: State,
    rules: Rules,
    *,
    seen: Collection[bytes] = (),
    lost: Collection[bytes] = (),
    plan: Advice | None = None,
    budget_ms: float = HINT_BUDGET_MS,
) -> Advice:
    """The hint for ``state`` (left unchanged); see the module docstring."""
    if len(state.found) == 4:
        return Advice(Hinted("none"), "no_moves")
    if plan is not None and plan.continues_at(state):
        return _from_line(state, plan.line[1:])
    verdict = solve(state.copy(), rules, budget_ms=budget_ms)
    if verdict.result == "lost":
        return Advice(Hinted("none"), "lost", proved_lost=frozenset([state.key()]))
    if verdict.result == "won":
        line = shorten(state, rules, verdict.actions)
        if _stays_off(state, line, seen):
            return _from_line(state, line)
    return _heuristic(state, rules, seen, lost)


def play(state: State, action: Action | Hinted) -> None:
    """Play a deal or a move named by card and 1-based column on ``state`` (unchecked)."""
    kind = action.type if isinstance(action, Action) else action.action
    if kind == "deal":
        apply_deal(state)
        return
    if kind != "move" or action.card is None or action.to is None:
        raise ValueError(f"not a move or a deal: {action}")
    src, index = locate(state, action.card)
    apply_move(state, src, index, action.to - 1)


def shorten(state: State, rules: Rules, line: tuple[Action, ...]) -> tuple[Action, ...]:
    """``line`` (a win from ``state``) with its detours cut: from each position the
    action taken is one that reaches the latest position of the line reachable in
    one step. The positions of the result are some of the line's, in the same
    order, so it still wins and still never visits a position twice."""
    walk = state.copy()
    where = {walk.key(): 0}
    for step, action in enumerate(line, 1):
        play(walk, action)
        where[walk.key()] = step
    walk = state.copy()
    short: list[Action] = []
    at = 0
    while at < len(line):
        best, reach = line[at], at + 1
        for move in legal_moves(walk, rules, useful_only=True):
            record = apply_move(walk, *move)
            step = where.get(walk.key(), -1)
            undo(walk, record)
            if step > reach:
                best, reach = _move_action(walk, move), step
        short.append(best)
        play(walk, best)
        at = reach
    return tuple(short)


def _hinted(action: Action) -> Hinted:
    return Hinted("deal") if action.type == "deal" else Hinted("move", action.card, action.to)


def _from_line(
    state: State, line: tuple[Action, ...], proved: frozenset[bytes] = frozenset()
) -> Advice:
    after = state.copy()
    play(after, line[0])
    return Advice(_hinted(line[0]), "plan", line, after.key(), proved)


def _stays_off(state: State, line: tuple[Action, ...], seen: Collection[bytes]) -> bool:
    """Whether playing ``line`` from ``state`` enters no position of ``seen``."""
    if not seen:
        return True
    walk = state.copy()
    for action in line:
        play(walk, action)
        if walk.key() in seen:
            return False
    return True


def _heuristic(
    state: State, rules: Rules, seen: Collection[bytes], lost: Collection[bytes]
) -> Advice:
    """Step 3 of the module docstring: the best safe move one step ahead."""
    proved: set[bytes] = set()
    best: tuple[int, Action, bytes] | None = None
    deal_key: bytes | None = None
    candidates: list[Move | None] = list(legal_moves(state, rules, useful_only=True))
    if state.stock and not (rules.stock_only_when_stuck and candidates):
        candidates.append(None)  # the deal (R13)
    for move in candidates:
        action = Action("deal") if move is None else _move_action(state, move)
        record = apply_deal(state) if move is None else apply_move(state, *move)
        try:
            key = state.key()
            if key in lost:
                proved.add(key)
                continue
            if key in seen:
                continue
            ahead = solve(state, rules, budget_ms=None, max_nodes=LOOK_AHEAD_NODES)
        finally:
            undo(state, record)
        if ahead.result == "lost":
            proved.add(key)
            continue
        if ahead.result == "won":
            line = shorten(state, rules, (action, *ahead.actions))
            if _stays_off(state, line, seen):
                return _from_line(state, line, frozenset(proved))
        if move is None:
            deal_key = key
        else:
            value = score_move(state, move)
            if best is None or value > best[0]:
                best = (value, action, key)
    found = frozenset(proved)
    if deal_key is not None and (best is None or best[0] <= 0):
        return Advice(Hinted("deal"), "heuristic", after=deal_key, proved_lost=found)
    if best is not None:
        return Advice(_hinted(best[1]), "heuristic", after=best[2], proved_lost=found)
    if not candidates:
        return Advice(Hinted("none"), "no_moves")
    return Advice(
        Hinted("none"), "lost" if len(proved) == len(candidates) else "repeats", proved_lost=found
    )


def _move_action(state: State, move: Move) -> Action:
    src, index, dst = move
    card = state.reserve[index] if src == RESERVE else state.cols[src][index]
    return Action("move", card, dst + 1)
