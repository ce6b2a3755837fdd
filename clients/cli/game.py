"""One open game on the client: its version, its board and the events that move it.

``GameSession`` applies ``events`` pushes in version order (PROTOCOL.md
section 5): the next version is applied, the same version only for its
unrecorded events (clock), an older one ignored, a gap answered with
``open_game`` since the last version seen. It reports each event to the
terminal (a line, or a JSON object with ``--json``) and lets the app wait
until an acknowledged version has arrived.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Coroutine
from typing import Any

from clients.cli.board import Board
from clients.cli.connection import Connection, Message
from clients.cli.render import Style, describe_event, render_board, render_results
from clients.cli.terminal import Terminal

__all__ = ["GameSession"]

# Events after which an interactive terminal draws the board again.
_SHOWN = frozenset(
    {"moved", "flipped", "unflipped", "dealt", "undealt", "suit_removed", "suit_restored"}
    | {"won", "stuck", "game_lost"}
)


class GameSession:
    """The game being played: id, last version seen, board, clock."""

    def __init__(self, terminal: Terminal, style: Style, json_mode: bool) -> None:
        self.terminal = terminal
        self.style = style
        self.json_mode = json_mode
        self.conn: Connection | None = None
        self.game: int | None = None
        self.v = 0
        self.board: Board | None = None
        self.paused = False
        self._clock_at = time.monotonic()
        self._changed = asyncio.Event()
        self._tasks: set[asyncio.Future[None]] = set()

    # -- state -------------------------------------------------------------

    @property
    def finished(self) -> bool:
        return self.board is not None and (self.board.won or self.board.lost is not None)

    def time_ms(self) -> int:
        if self.board is None:
            return 0
        extra = time.monotonic() - self._clock_at if self.board.running else 0.0
        return self.board.time_ms + int(extra * 1000)

    def show(self) -> None:
        if self.board is None:
            self.terminal.say("no game is open")
        elif self.json_mode:
            self.terminal.json({"type": "board", "game": self.game, "v": self.v})
        else:
            text = render_board(
                self.board, self.style, game=self.game, time_ms=self.time_ms(), paused=self.paused
            )
            self.terminal.say(text)

    # -- opening -----------------------------------------------------------

    def take(self, reply: Message) -> None:
        """Adopt a ``game`` snapshot or apply a ``catch_up`` reply."""
        if reply.get("type") == "game":
            self.game, self.v = int(reply["game"]), int(reply["v"])
            self.board = Board.from_view(reply["view"])
            self.paused = False
            self._clock_at = time.monotonic()
            if self.json_mode:
                self.terminal.json(reply)
        elif reply.get("type") == "catch_up":
            for batch in reply.get("events", []):
                self.receive(int(batch["v"]), list(batch["events"]))
        self._changed.set()

    async def resync(self) -> None:
        """``open_game`` since the last version seen (after a gap or a reconnect)."""
        if self.conn is None or self.game is None:
            return
        reply = await self.conn.request("open_game", game=self.game, since=self.v)
        self.take(reply)

    async def snapshot(self) -> None:
        """A fresh view (after ``restarted``, which the events cannot replay)."""
        if self.conn is None or self.game is None:
            return
        self.take(await self.conn.request("open_game", game=self.game))
        if self.terminal.interactive and not self.json_mode:
            self.show()

    async def settle(self) -> None:
        """Wait for the resyncs and snapshots that events have asked for."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    # -- events ------------------------------------------------------------

    def on_push(self, message: Message) -> None:
        if message.get("type") == "events" and message.get("game") == self.game:
            self.receive(int(message["v"]), list(message.get("events", [])))

    def receive(self, v: int, events: list[dict[str, Any]]) -> None:
        board = self.board
        if board is None or v < self.v:
            return
        if v > self.v + 1:
            self._spawn(self.resync())
            return
        recorded = v == self.v + 1
        try:
            board.apply_batch(events, recorded=recorded)
        except (KeyError, IndexError, TypeError, ValueError):
            board.needs_snapshot = True  # events this client cannot follow: fetch the view
        if any(event.get("type") == "clock" for event in events):
            self._clock_at = time.monotonic()
        self.v = v
        unrecorded = [e for e in events if e.get("type") in ("clock", "lost_position")]
        self._report(v, events if recorded else unrecorded)
        if board.needs_snapshot:
            board.needs_snapshot = False
            self._spawn(self.snapshot())
        self._changed.set()

    def _report(self, v: int, events: list[dict[str, Any]]) -> None:
        for event in events:
            if self.json_mode:
                self.terminal.json({"game": self.game, "v": v, **event})
                continue
            if event.get("type") == "won":
                self.terminal.say(render_results(event))
                if self.terminal.interactive:
                    self.terminal.say("n [level] starts a new game, q quits")
                continue
            line = describe_event(event)
            if line is not None:
                self.terminal.say(line)
        changed = any(event.get("type") in _SHOWN for event in events)
        if self.terminal.interactive and not self.json_mode and changed:
            self.show()

    async def until(self, v: int, timeout: float = 10.0) -> None:
        """Wait until version ``v`` has been applied (resync if it does not come)."""
        deadline = time.monotonic() + timeout
        while self.v < v:
            self._changed.clear()
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                await self.resync()  # the push went missing: ask for it
                return
            try:
                await asyncio.wait_for(self._changed.wait(), remaining)
            except TimeoutError:
                continue
        await self.settle()

    def _spawn(self, coroutine: Coroutine[Any, Any, None]) -> None:
        task = asyncio.ensure_future(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
