"""Hints that lead somewhere: the next step of a winning line, else a move that goes forward.

Theory of operation
-------------------
``plan_hint`` runs in a solver worker (it imports only the engine) and
answers one hint request for a position:

1. The solver searches the position. A **won** verdict comes with a winning
   line; the hint is its first step and the whole line comes back
   (``HintAnswer.line``: each position on it with the step to take there), so
   the service can give the next steps without searching again. The search
   never meets a position twice on its line, so following it never repeats a
   position. A line that would pass through a position already seen in this
   game is not used (the fallback below is).
2. A **lost** verdict: the hint is ``none`` with reason ``lost``.
3. **Unknown** (the budget ran out): the candidates are the moves and the
   deal in the heuristic's order (``engine.hints``: moves it scores above
   zero, then the deal, then the rest). A candidate that leads back to a
   position seen in this game, or into one known or proved lost, is passed
   over; the others are each searched with a share of what is left of the
   budget. The first one proved won gives the hint and its line; otherwise
   the first one not proved lost is the hint. When none is left the hint is
   ``none``: reason ``lost`` when every candidate is proved lost (the
   position is then lost too), ``seen`` when some lead only back to positions
   already seen, ``stuck`` when there is no move and no stock at all.

A **bare shuttle**, a whole column moved into an empty column, is never a
candidate and never hinted unless the stock is still to be dealt and one of
the two columns is among those the deal covers: only then does it change
anything (the deal lands differently). The solver's own search makes the same
exception (docs/solver.md, rule 3), so no winning line contains another.

Positions are ``State.key()``: the whole position, face-down cards included.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, field

from engine.events import Hinted
from engine.game import Action
from engine.hints import score_move
from engine.levels import Rules
from engine.moves import Move, check_move, legal_moves
from engine.solver.search import solve
from engine.state import RESERVE, State, apply_deal, apply_move

__all__ = [
    "REASONS",
    "HintAnswer",
    "Step",
    "candidates",
    "is_bare_shuttle",
    "plan_hint",
]

REASONS = ("lost", "seen", "stuck")
"""Why a hint is ``none`` (module docstring)."""

ROOT_SHARE = 0.5  # of the budget for the position itself; the rest for candidates
MIN_CANDIDATE_MS = 5.0

Step = tuple[bytes, Hinted]
"""A position (its key) and the hint to give there."""


@dataclass(frozen=True, slots=True)
class HintAnswer:
    """The hint for a position, the winning line it starts (if any) and what was proved lost."""

    hinted: Hinted
    line: tuple[Step, ...] = ()
    lost: tuple[bytes, ...] = field(default=())


def is_bare_shuttle(state: State, move: Move) -> bool:
    """A whole column into an empty column, changing nothing the rules care about."""
    src, index, dst = move
    if src == RESERVE or index != 0 or state.cols[dst]:
        return False
    dealt_onto = len(state.stock)  # the deal covers columns 0 .. len(stock) - 1
    return not (src < dealt_onto or dst < dealt_onto)


def _hinted(state: State, move: Move) -> Hinted:
    src, index, dst = move
    card = state.reserve[index] if src == RESERVE else state.cols[src][index]
    return Hinted("move", card, dst + 1)


def _after(state: State, move: Move | None) -> State:
    child = state.copy()
    if move is None:
        apply_deal(child)
    else:
        apply_move(child, *move)
    return child


def candidates(state: State, rules: Rules) -> list[tuple[Hinted, State]]:
    """Every action worth hinting, in the heuristic's order, with the position it leads to."""
    scored = [
        (score_move(state, move), move)
        for move in legal_moves(state, rules)
        if not is_bare_shuttle(state, move)
    ]
    ranked = sorted(scored, key=lambda pair: -pair[0])  # stable: ties keep legal_moves order
    out = [(_hinted(state, move), _after(state, move)) for value, move in ranked if value > 0]
    if state.stock:
        out.append((Hinted("deal"), _after(state, None)))
    out += [(_hinted(state, move), _after(state, move)) for value, move in ranked if value <= 0]
    return out


def _line(state: State, rules: Rules, actions: Iterable[Action]) -> list[Step]:
    """The positions of a winning line from ``state``, each with the step taken there."""
    current = state.copy()
    steps: list[Step] = []
    for action in actions:
        key = current.key()
        if action.type == "deal":
            steps.append((key, Hinted("deal")))
            apply_deal(current)
            continue
        assert action.card is not None and action.to is not None
        move = check_move(current, rules, action.card, action.to)
        steps.append((key, _hinted(current, move)))
        apply_move(current, *move)
    return steps


def _usable(steps: list[Step], state: State, seen: frozenset[bytes]) -> bool:
    """Following the line never returns to a position seen before (the current one aside)."""
    if not steps:
        return False
    return not any(key in seen for key, _hint in steps[1:])


class _Deadline:
    def __init__(self, budget_ms: float) -> None:
        self.end = time.perf_counter() + budget_ms / 1000

    def left_ms(self) -> float:
        return max(0.0, (self.end - time.perf_counter()) * 1000)


def _won_line(
    state: State, rules: Rules, budget_ms: float, seen: frozenset[bytes]
) -> tuple[str, list[Step]]:
    """The solver's verdict on ``state`` and, when won with a usable line, that line."""
    verdict = solve(state.copy(), rules, budget_ms=budget_ms)
    if verdict.result != "won":
        return verdict.result, []
    steps = _line(state, rules, verdict.actions)
    return ("won", steps) if _usable(steps, state, seen) else ("unknown", [])


def plan_hint(
    state: State,
    rules: Rules,
    seen: frozenset[bytes],
    known_lost: frozenset[bytes],
    budget_ms: float,
    *,
    search: bool = True,
) -> HintAnswer:
    """The hint for ``state`` (module docstring); ``search=False``: the fallback alone."""
    deadline = _Deadline(budget_ms)
    root = state.key()
    options = candidates(state, rules)
    if not options:
        return HintAnswer(Hinted("none", reason="stuck"), lost=(root,))
    if search:
        result, line = _won_line(state, rules, budget_ms * ROOT_SHARE, seen)
        if result == "won":
            return HintAnswer(line[0][1], tuple(line))
        if result == "lost":
            return HintAnswer(Hinted("none", reason="lost"), lost=(root,))
    lost: list[bytes] = []
    fallback: Hinted | None = None
    revisits = False
    for index, (hinted, child) in enumerate(options):
        key = child.key()
        if key in known_lost:
            continue
        if key in seen:
            revisits = True
            continue
        if not search:
            return HintAnswer(hinted)
        share = max(MIN_CANDIDATE_MS, deadline.left_ms() / (len(options) - index))
        result, line = _won_line(child, rules, share, seen | {root})
        if result == "won":
            return HintAnswer(hinted, ((root, hinted), *line), tuple(lost))
        if result == "lost":
            lost.append(key)
        elif fallback is None:
            fallback = hinted
            if deadline.left_ms() <= 0:
                break
    if fallback is not None:
        return HintAnswer(fallback, lost=tuple(lost))
    if revisits:
        return HintAnswer(Hinted("none", reason="seen"), lost=tuple(lost))
    return HintAnswer(Hinted("none", reason="lost"), lost=(*lost, root))
