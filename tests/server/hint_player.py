"""A player who only ever follows the server's hints, through the real protocol.

``play_by_hints`` starts a game, then asks for a hint and does what it says
until the game is won, the hint says ``none``, a position repeats or the step
limit is reached. Positions are the server's own (``State.key()`` of the game
it holds in memory), so a repeat is exact, face-down cards included.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from server.service import GameService
from tests.server.client import Client

STEP_LIMIT = 6000  # far past the longest line the hint bench met (122 steps)


@dataclass
class HintGame:
    """How one game of following hints went."""

    level: str
    deal: int | None
    won: bool = False
    repeated: str | None = None  # the hint that led back to a position already met
    none: str | None = None  # the reason of a `none` hint
    hints: int = 0
    hint_ms: list[float] = field(default_factory=list)

    @property
    def fault(self) -> str | None:
        if self.won:
            return None
        if self.repeated:
            return f"repeated a position after {self.hints} hints ({self.repeated})"
        if self.none:
            return f"hint none ({self.none}) after {self.hints} hints"
        return f"not won within {self.hints} hints"


async def play_by_hints(client: Client, service: GameService, level: str, **start: Any) -> HintGame:
    """Play one new game of ``level`` (``start``: ``deal`` or ``winnable``) by hints alone."""
    reply = await client.request("new_game", level=level, **start)
    assert reply["type"] == "game", reply
    game, v = reply["game"], reply["v"]
    live = service.cached(game)
    assert live is not None
    record = HintGame(level, live.record.deal)
    seen = {live.game.state.key()}
    while record.hints < STEP_LIMIT:
        began = time.perf_counter()
        hint = await client.request("hint", game=game)
        record.hint_ms.append((time.perf_counter() - began) * 1000)
        assert hint["type"] == "hint", hint
        record.hints += 1
        v = hint["v"]
        if hint["action"] == "none":
            record.none = hint.get("reason", "?")
            break
        if hint["action"] == "deal":
            done = await client.request("deal", game=game, v=v)
        else:
            done = await client.request("move", game=game, v=v, card=hint["card"], to=hint["to"])
        assert done["type"] == "ack", (hint, done)
        v = done["v"]
        if live.game.won:
            record.won = True
            break
        key = live.game.state.key()
        if key in seen:
            record.repeated = f"{hint['action']} {hint.get('card', '')} {hint.get('to', '')}"
            break
        seen.add(key)
    client.drain()
    return record
