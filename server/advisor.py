"""``HintAdvisor``: the service's hints, as steps of a plan (``engine.solver.plan``).

Theory of operation
-------------------
Per game in memory the advisor keeps a ``HintMemory``: the last plan the
engine's planner gave (``Advice``: a shortened winning line, every position on
it with the step to take there) and every position the game has been in. A
hint for a position on the line is that line's step there
(``Advice.continued``), given at once without a search, so a player who
follows the hints walks one line to the win and never meets a position twice.
Any other position is planned afresh in a solver worker
(``SolverPool.advise``), told which positions this game has seen and which of
the candidate moves lead into positions the pool already knows are lost; what
that search proves lost is added to the pool's memory.

The memory is tied to the ``LiveGame`` object (a weak reference): a game
rebuilt from the store, after a restart or on another node, starts with none
and searches again at its next hint. The positions seen are rebuilt from the
game's own actions, so every node knows the same ones.
"""

from __future__ import annotations

import weakref

from engine.events import Hinted
from engine.game import Game
from engine.solver.plan import Advice, advise, candidates
from server.live import LiveGame
from server.workers import SolverPool

__all__ = ["HintAdvisor", "HintMemory"]


class HintMemory:
    """One game's winning line being followed and the positions it has been in."""

    def __init__(self) -> None:
        self.plan: Advice | None = None
        self._replica: Game | None = None
        self._seen: set[bytes] = set()

    def seen(self, game: Game) -> frozenset[bytes]:
        """Every position ``game`` has been in, the current one included."""
        replica = self._replica
        if replica is None or len(replica.actions) > len(game.actions):
            replica = self._replica = Game(game.rules, game.deal_number, game.layout)
            self._seen = {replica.state.key()}
        for action in game.actions[len(replica.actions) :]:
            replica.play(action)
            self._seen.add(replica.state.key())
        return frozenset(self._seen)

    def follow(self, advice: Advice) -> None:
        """Keep ``advice`` as the plan if it is one (else the older plan stays)."""
        if advice.basis == "plan":
            self.plan = advice


class HintAdvisor:
    """Hints for the service's games: plan steps, searched in the solver workers."""

    def __init__(self, solver: SolverPool) -> None:
        self.solver = solver
        self._memory: weakref.WeakKeyDictionary[LiveGame, HintMemory] = weakref.WeakKeyDictionary()
        self.planned = 0  # hints given from a line already found (no search)

    def memory(self, live: LiveGame) -> HintMemory:
        memory = self._memory.get(live)
        if memory is None:
            memory = self._memory[live] = HintMemory()
        return memory

    async def hint(self, live: LiveGame) -> Hinted:
        """The hint for ``live``'s current position. Call holding the game's lock."""
        game = live.game
        state, rules = game.state, game.rules
        memory = self.memory(live)
        step = memory.plan.continued(state) if memory.plan is not None else None
        if step is not None:
            self.planned += 1
            return step.hint
        if game.stuck:  # lost too, but "stuck" says more (PROTOCOL.md, the hint's reason)
            return Hinted("none", reason="stuck")
        if self.solver.known_lost(rules, state.key()):  # a move all the same (R20), no search
            return advise(state, rules, seen=memory.seen(game), budget_ms=0).hint
        children = (child.key() for _hint, child in candidates(state, rules))
        known_lost = frozenset(key for key in children if self.solver.known_lost(rules, key))
        advice = await self.solver.advise(state, rules, memory.seen(game), known_lost)
        self.solver.remember_lost(rules, advice.proved_lost)
        memory.follow(advice)
        return advice.hint
