"""Hints that are a plan: the next step of a winning line, else a safe heuristic move.

``advise(state, rules, seen=..., lost=..., plan=..., budget_ms=...)`` answers
with an ``Advice``: the hint to give (``Hinted``), what it rests on
(``basis``) and, when the solver found a win, the whole line (each position on
it with the step to take there), so that the next hints follow it without
searching again. It is the one hint planner: the server runs it in its solver
workers (``server.workers``), scripts call it directly.

Theory of operation
-------------------
1. **Plan.** If ``plan`` (an earlier ``Advice``) has a line through ``state``,
   the hint is that line's step there and nothing is searched
   (``Advice.continued``). A winning line of the solver never meets a position
   twice (the search expands every position at most once), and ``shorten``
   keeps only some of its positions in their order, so following one plan
   reaches the win without repetition.
2. **Solver.** Otherwise ``solve`` runs on ``state`` with half the budget
   (``ROOT_SHARE``). A win is first shortened (``shorten``: a depth-first line
   on relaxed can run to thousands of needless moves), then used if it stays
   off the positions already seen (``seen``). After a ``lost`` verdict the
   heuristic below still names a move, searching nothing (every move from a
   lost position is lost too): a hint names a move while there is one (R20),
   and the server says the position is lost apart from it (``lost_position``).
3. **Heuristic.** With no usable line, the candidates are the useful moves and
   the deal in the heuristic's order (``candidates``: moves
   ``engine.hints.score_move`` scores above zero, then the deal, then the
   rest). One leading back to a position in ``seen``, or into one in ``lost``,
   is passed over; each other one is searched with a share of what is left of
   the budget (at least ``MIN_CANDIDATE_MS``). The first one proved won, on a
   line that stays off ``seen`` and ``state``, gives the hint and becomes the
   plan (shortened too); otherwise the hint is the first one not proved lost,
   and when every one is proved lost, the first of those not leading back to
   ``seen``. ``budget_ms=0`` searches nothing: the first candidate not passed
   over, else the first lost one not leading back.
4. **Nothing left.** ``none`` with a reason (``Hinted.reason``, the same word
   as ``basis``): ``seen`` when every candidate leads back to a position
   already seen, ``stuck`` when there is no candidate at all (stock dealt, no
   useful move, R16). A won position gets ``none`` with basis ``won`` and no
   reason.

A **bare shuttle**, a whole column moved into an empty column, is never a
candidate and never hinted unless the stock is still to be dealt and one of
the two columns is among those the deal covers: only then does it change
anything (the deal lands differently). The solver's own search makes the same
exception (docs/solver.md, rule 3), so no winning line contains another, and
``shorten`` adds none.

Positions are compared by ``State.key()`` (the whole position, face-down cards
and column order included): the server keeps those keys for the positions a
game has seen and those the solver proved lost; ``Advice.proved_lost`` hands
back the keys this call found lost, for it to remember.
"""

from __future__ import annotations

import time
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field

from engine.events import Hinted
from engine.game import Action
from engine.hints import score_move
from engine.levels import Rules
from engine.moves import Move, legal_moves, locate
from engine.solver.search import solve
from engine.state import RESERVE, State, apply_deal, apply_move, undo

__all__ = [
    "REASONS",
    "Advice",
    "Step",
    "advise",
    "candidates",
    "is_bare_shuttle",
    "play",
    "shorten",
]

HINT_BUDGET_MS = 300
ROOT_SHARE = 0.5  # of the budget for the position itself; the rest for the candidates
MIN_CANDIDATE_MS = 5.0

REASONS = ("seen", "stuck")
"""Why a hint is ``none`` (step 4 of the module docstring)."""

Step = tuple[bytes, Hinted]
"""A position (its key) and the hint to give there."""


@dataclass(frozen=True, slots=True)
class Advice:
    """What to tell a player who asks for a hint.

    - ``hint``: the action to name (``"move"``, ``"deal"``) or ``"none"`` (with
      its ``reason``).
    - ``basis``: ``"plan"`` (the next step of a winning line), ``"heuristic"``
      (no winning line known, or the position proved lost), or, with ``none``,
      its reason (``"seen"``, ``"stuck"``) or ``"won"``.
    - ``line``: with ``"plan"``, the winning line from this position: each
      position on it with the step to take there (the first is this position
      and ``hint``). Pass the advice back as ``plan`` to follow it.
    - ``after``: the key of the position the hint leads to (empty with ``none``).
    - ``proved_lost``: keys of positions this call found lost (proved here, or
      met in ``lost``).
    """

    hint: Hinted
    basis: str
    line: tuple[Step, ...] = ()
    after: bytes = b""
    proved_lost: frozenset[bytes] = field(default=frozenset())

    def continued(self, state: State) -> Advice | None:
        """This plan's advice at ``state`` if its line passes there, else None."""
        key = state.key()
        for at, (step_key, _hint) in enumerate(self.line):
            if step_key == key:
                return _plan(state, self.line[at:])
        return None


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
        return Advice(Hinted("none"), "won")
    if plan is not None:
        followed = plan.continued(state)
        if followed is not None:
            return followed
    end = time.perf_counter() + budget_ms / 1000
    root = state.key()
    options = candidates(state, rules)
    if not options:
        return _none("stuck", {root})
    if budget_ms > 0:
        result, line = _won_line(state, rules, budget_ms * ROOT_SHARE, seen, ())
        if result == "won":
            return _plan(state, line)
        if result == "lost":  # every move is lost too: the heuristic's, searching nothing
            return _heuristic(state, rules, options, seen, lost, None, frozenset({root}))
    return _heuristic(state, rules, options, seen, lost, end if budget_ms > 0 else None)


def candidates(state: State, rules: Rules) -> list[tuple[Hinted, State]]:
    """Every action worth hinting, in the heuristic's order, with the position it leads to.

    Moves scored above zero, then the deal (when the rules allow it now, R13),
    then the other moves; never a bare shuttle (``is_bare_shuttle``).
    """
    scored = [
        (score_move(state, move), move)
        for move in legal_moves(state, rules)
        if not is_bare_shuttle(state, move)
    ]
    ranked = sorted(scored, key=lambda pair: -pair[0])  # stable: ties keep legal_moves order
    out = [(_move_hint(state, move), _after(state, move)) for value, move in ranked if value > 0]
    if state.stock and not (
        rules.stock_only_when_stuck and legal_moves(state, rules, useful_only=True)
    ):
        out.append((Hinted("deal"), _after(state, None)))
    out += [(_move_hint(state, move), _after(state, move)) for value, move in ranked if value <= 0]
    return out


def is_bare_shuttle(state: State, move: Move) -> bool:
    """A whole column into an empty column, changing nothing the rules care about."""
    src, index, dst = move
    if src == RESERVE or index != 0 or state.cols[dst]:
        return False
    dealt_onto = len(state.stock)  # the deal covers columns 0 .. len(stock) - 1
    return src >= dealt_onto and dst >= dealt_onto


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


def shorten(state: State, rules: Rules, line: Iterable[Action | Hinted]) -> tuple[Step, ...]:
    """``line`` (a win from ``state``) with its detours cut, as steps (``Step``).

    From each position the step taken is one that reaches the latest position
    of the line reachable in one useful move (else the line's own step). The
    positions of the result are some of the line's, in the same order, so it
    still wins and still never meets a position twice."""
    actions = [_as_hint(action) for action in line]
    walk = state.copy()
    where = {walk.key(): 0}
    for step, action in enumerate(actions, 1):
        play(walk, action)
        where[walk.key()] = step
    walk = state.copy()
    short: list[Step] = []
    at = 0
    while at < len(actions):
        best, reach = actions[at], at + 1
        for move in legal_moves(walk, rules, useful_only=True):
            record = apply_move(walk, *move)
            step = where.get(walk.key(), -1)
            undo(walk, record)
            if step > reach:
                best, reach = _move_hint(walk, move), step
        short.append((walk.key(), best))
        play(walk, best)
        at = reach
    return tuple(short)


def _heuristic(
    state: State,
    rules: Rules,
    options: list[tuple[Hinted, State]],
    seen: Collection[bytes],
    lost: Collection[bytes],
    end: float | None,
    proved_here: frozenset[bytes] = frozenset(),
) -> Advice:
    """Step 3 of the module docstring; ``end`` (perf_counter) None: no search.
    ``proved_here``: keys already proved lost by this call (the position itself)."""
    root = state.key()
    proved: set[bytes] = set(proved_here)
    fallback: tuple[Hinted, bytes] | None = None
    lost_fallback: tuple[Hinted, bytes] | None = None  # the first lost one not leading back
    revisits = False
    for index, (hinted, child) in enumerate(options):
        key = child.key()
        if key in seen:
            revisits = True
            continue
        if key in lost:
            proved.add(key)
            lost_fallback = lost_fallback or (hinted, key)
            continue
        if end is None:
            return Advice(hinted, "heuristic", after=key, proved_lost=frozenset(proved))
        left_ms = max(0.0, (end - time.perf_counter()) * 1000)
        share = max(MIN_CANDIDATE_MS, left_ms / (len(options) - index))
        result, line = _won_line(child, rules, share, seen, (root,))
        if result == "won":
            return _plan(state, ((root, hinted), *line), frozenset(proved))
        if result == "lost":
            proved.add(key)
            lost_fallback = lost_fallback or (hinted, key)
        elif fallback is None:
            fallback = (hinted, key)
            if time.perf_counter() >= end:
                break
    fallback = fallback or lost_fallback
    if fallback is not None:
        if fallback is lost_fallback and not revisits:
            proved.add(root)  # every move from here is lost: so is the position
        return Advice(fallback[0], "heuristic", after=fallback[1], proved_lost=frozenset(proved))
    return _none("seen", proved)


def _won_line(
    state: State,
    rules: Rules,
    budget_ms: float,
    seen: Collection[bytes],
    also_seen: tuple[bytes, ...],
) -> tuple[str, tuple[Step, ...]]:
    """The solver's verdict on ``state`` and, when won, the shortened line if it
    keeps off ``seen`` and ``also_seen`` after its first position ("unknown" if not)."""
    verdict = solve(state.copy(), rules, budget_ms=budget_ms)
    if verdict.result != "won":
        return verdict.result, ()
    line = shorten(state, rules, verdict.actions)
    if any(key in seen or key in also_seen for key, _hint in line[1:]):
        return "unknown", ()
    return "won", line


def _plan(state: State, line: tuple[Step, ...], proved: frozenset[bytes] = frozenset()) -> Advice:
    """The advice to follow ``line``, whose first position is ``state``."""
    hint = line[0][1]
    if len(line) > 1:
        after = line[1][0]
    else:
        walk = state.copy()
        play(walk, hint)
        after = walk.key()
    return Advice(hint, "plan", line, after, proved)


def _none(reason: str, proved: set[bytes]) -> Advice:
    return Advice(Hinted("none", reason=reason), reason, proved_lost=frozenset(proved))


def _after(state: State, move: Move | None) -> State:
    child = state.copy()
    if move is None:
        apply_deal(child)
    else:
        apply_move(child, *move)
    return child


def _as_hint(action: Action | Hinted) -> Hinted:
    if isinstance(action, Hinted):
        return action
    return Hinted("deal") if action.type == "deal" else Hinted("move", action.card, action.to)


def _move_hint(state: State, move: Move) -> Hinted:
    src, index, dst = move
    card = state.reserve[index] if src == RESERVE else state.cols[src][index]
    return Hinted("move", card, dst + 1)
