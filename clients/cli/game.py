"""One open game on the client: its version, its board, its clock and the events that move it.

``GameSession`` applies ``events`` pushes in version order (PROTOCOL.md
section 5): the next version is applied, the same version only for its
unrecorded events (clock, lost_position), an older one ignored, a gap
answered with ``open_game`` since the last version seen, and a ``snapshot``
event replaces the board whatever version it carries. It reports each
event to the terminal (a line, or a JSON object with ``--json``) and lets
the app wait until an acknowledged version has arrived.

The clock (section 6): the play time shown is the ``time_ms`` of the last
``clock`` event, snapshot or ``catch_up`` plus, while that said ``running``,
the time elapsed since it arrived; the server's clock is the only authority.
The server queues a game's first ``clock`` push right after the ``game``
reply that opens it, so the push usually arrives before the app has taken
the reply: pushes for a game not adopted yet are kept (``_early``) and
applied once it is, and while a reply that reopens the game or catches it
up is awaited, pushes wait for it too (``held``). The score shown is section
6's formula at that play time (``Board.score_at``: ``earned`` less the R24
decay).

Paused: a view and a ``catch_up`` say whether the game is paused
(``paused``; a server before it sent none: then a view or ``catch_up`` that
says ``running: true`` means not paused, and a paused game opened here
stayed unknown until resumed). While this connection has an unfinished game
open, its clock stops only for a pause (R22), so a ``clock`` push with
``running: false`` means paused and one with ``running: true`` means not.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Coroutine, Iterator
from typing import Any

from clients.cli.board import Board
from clients.cli.connection import Connection, ConnectionFailed, Message
from clients.cli.i18n import _
from clients.cli.render import Style, describe_event, render_board, render_results, render_status
from clients.cli.terminal import Terminal, shown_url

__all__ = ["GameSession"]

# Events after which an interactive terminal draws the board again.
_SHOWN = frozenset(
    {"moved", "flipped", "unflipped", "dealt", "undealt", "suit_removed", "suit_restored"}
    | {"restarted", "won", "stuck", "game_lost"}
)
_UNRECORDED = ("clock", "lost_position")
_EARLY_LIMIT = 32  # pushes kept for games not adopted yet
MAX_FETCHES = 4  # version gaps answered in a row by asking the server (``_may_fetch``)


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
        self._early: list[tuple[int, Message]] = []  # (arrival, push) kept for later
        self._holding = 0  # ``held`` blocks entered
        self._deal_lost_said: int | None = None  # the game whose deal was said lost
        self._taken: int | None = None  # the arrival of the reply taken while held
        self._fetches = 0  # resyncs and snapshots asked for by version gaps, in a row
        # Says an ``open_game`` refused (the app's ``rejected``): a resync or a snapshot
        # that could not open the game again (``too_many_watchers``, say) is not silent.
        self.refused: Callable[[Message], None] | None = None

    # -- state -------------------------------------------------------------

    @property
    def finished(self) -> bool:
        return self.board is not None and self.board.finished

    def time_ms(self) -> int:
        """The game's play time now, as the server's last clock event implies."""
        if self.board is None:
            return 0
        extra = time.monotonic() - self._clock_at if self.board.running else 0.0
        return self.board.time_ms + int(extra * 1000)

    def score(self) -> int:
        """The score now: section 6's formula at the play time now."""
        return 0 if self.board is None else self.board.score_at(self.time_ms())

    def set_paused(self, paused: bool) -> None:
        """The server acknowledged a pause or resume: its clock stopped, or runs. A
        finished game is never paused (PROTOCOL.md: its end ended the pause)."""
        board = self.board
        self.paused = paused and not (board is not None and board.finished)
        if board is None or board.finished:
            return
        if paused and board.running:
            board.time_ms, board.running = self.time_ms(), False
        elif not paused and not board.running:
            board.running, self._clock_at = True, time.monotonic()

    @property
    def offline(self) -> bool:
        """The connection is down (reconnecting, or failed): what is shown may be behind."""
        return self.conn is not None and not self.conn.online

    def dropped(self) -> None:
        """The connection dropped: the server's clock stops with it (PROTOCOL.md section 6).

        It stops for as long as no connection has the game open, so the time
        shown stands still until the reconnection's catch-up says what it is.
        """
        board = self.board
        if board is not None and board.running and not board.finished:
            board.time_ms, board.running = self.time_ms(), False

    def status(self) -> str:
        """The status line (the terminal's status bar draws it every second)."""
        if self.board is None:
            return ""
        width = self.terminal.size()[0]
        return render_status(
            self.board,
            self.time_ms(),
            self.paused,
            self.score(),
            width - 1,
            offline=self.offline,
        )

    def show(self) -> None:
        if self.board is None and self.json_mode:
            text = _("game.none_open")
            self.terminal.json({"type": "notice", "notice": "game.none_open", "text": text})
        elif self.board is None:
            self.terminal.say(_("game.none_open"))
        elif self.json_mode:
            self.terminal.json({"type": "board", "game": self.game, "v": self.v})
        else:
            self.terminal.say(self.screen())

    def screen(self) -> str:
        assert self.board is not None
        width, height = self.terminal.size()
        style = Style(color=self.style.color, width=width, height=height)
        return render_board(
            self.board,
            style,
            game=self.game,
            time_ms=self.time_ms(),
            paused=self.paused,
            score=self.score(),
            status=not self.terminal.editor,  # the status bar shows it, ticking
            offline=self.offline,
        )

    # -- opening -----------------------------------------------------------

    def take(self, reply: Message) -> None:
        """Adopt a ``game`` snapshot or apply a ``catch_up`` reply."""
        if reply.get("type") == "game":
            game = int(reply["game"])
            same = game == self.game and self.board is not None
            self.game, self.v = game, int(reply["v"])
            self.board = Board.from_view(reply["view"])
            if "paused" in reply["view"]:
                self.paused = bool(reply["view"]["paused"]) and not self.board.finished
            elif self.board.running or not same:
                self.paused = False
            self._clock_at = time.monotonic()
            if self.json_mode:
                self.terminal.json(reply)
            self._taken = getattr(reply, "arrival", None)
            if not self._holding:
                self._drain_early()
        elif reply.get("type") == "catch_up":
            self._taken = getattr(reply, "arrival", None)
            for batch in reply.get("events", []):
                if not self.receive(int(batch["v"]), list(batch["events"]), resync=False):
                    # A catch-up that skips a version: asking for it again could get the
                    # same answer for ever; the whole view is what the server has now.
                    if self._may_fetch(int(batch["v"])):
                        self._spawn(self.snapshot())
                    break
            self._take_clock(reply)
        self._changed.set()

    def _take_clock(self, reply: Message) -> None:
        """A ``catch_up``'s clock now (its batches hold no ``clock`` events)."""
        board = self.board
        if board is None or reply.get("game") != self.game or "time_ms" not in reply:
            return
        running = bool(reply.get("running", board.running))
        board.apply({"type": "clock", "running": running, "time_ms": int(reply["time_ms"])})
        self._clock_at = time.monotonic()
        if "paused" in reply:
            self.paused = bool(reply["paused"]) and not board.finished
        elif running:
            self.paused = False

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        """Around awaiting and taking a reply that opens the game or catches it up.

        The connection's reader hands a push on as soon as it arrives, which
        may be before the coroutine awaiting the reply that came just before it
        has run: a ``clock`` push the server sends right after a ``catch_up``
        would then be applied first, and undone by the catch-up's older clock
        (the clock would stand still). Held until the reply is taken, each push
        is applied after it, in arrival order; one that arrived before the
        reply is already in it, and only its ``lost_position`` (which no view
        says) is kept.
        """
        self._holding += 1
        try:
            yield
        finally:
            self._holding -= 1
            if not self._holding:
                self._drain_early()

    def _drain_early(self) -> None:
        early, self._early = self._early, []
        taken, self._taken = self._taken, None
        for arrival, message in early:
            if message.get("game") != self.game or self.board is None:
                continue
            v, events = int(message["v"]), list(message.get("events", []))
            if taken is not None and arrival < taken:  # the reply came later: it says more
                events = [event for event in events if event.get("type") == "lost_position"]
                if v != self.v or not events:
                    continue
            self.receive(v, events)

    async def resync(self) -> None:
        """``open_game`` since the last version seen (after a gap or a reconnect)."""
        if self.conn is None or self.game is None:
            return
        with self.held():
            reply = await self.conn.request("open_game", game=self.game, since=self.v)
            self.take(reply)
        self._said(reply)

    async def snapshot(self) -> None:
        """A fresh view (after ``restarted``, which the events cannot replay)."""
        if self.conn is None or self.game is None:
            return
        with self.held():
            reply = await self.conn.request("open_game", game=self.game)
            self.take(reply)
        if self._said(reply):
            return
        if self.terminal.interactive and not self.json_mode:
            self.show()

    def _said(self, reply: Message) -> bool:
        """Whether ``reply`` to an ``open_game`` was a refusal, said if so."""
        if reply.get("type") != "error":
            return False
        if self.refused is not None:
            self.refused(reply)
        return True

    async def settle(self) -> None:
        """Wait for the resyncs and snapshots that events have asked for."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    # -- events ------------------------------------------------------------

    def on_push(self, message: Message) -> None:
        if message.get("type") != "events":
            return
        if message.get("game") == self.game and self.board is not None and not self._holding:
            self.receive(int(message["v"]), list(message.get("events", [])))
        else:  # a reply is awaited, or it is the game whose reply is on its way: kept
            arrival = self.conn.frames if self.conn is not None else 0
            self._early = [*self._early, (arrival, message)][-_EARLY_LIMIT:]

    def receive(self, v: int, events: list[dict[str, Any]], *, resync: bool = True) -> bool:
        """Apply the batch of version ``v``; False if it skips one (then resynced if ``resync``)."""
        board = self.board
        snapshot = next((e for e in events if e.get("type") == "snapshot"), None)
        if board is not None and snapshot is not None:
            self._replace(v, snapshot)
            return True
        if board is None or v < self.v:
            return True
        if v > self.v + 1:
            if resync and self._may_fetch(v):
                self._spawn(self.resync())
            return False
        if resync and v == self.v + 1:
            self._fetches = 0  # a push in order: the versions add up again
        recorded = v == self.v + 1
        was_lost = board.lost_position and not recorded
        try:
            board.apply_batch(events, recorded=recorded)
        except (KeyError, IndexError, TypeError, ValueError):
            board.needs_snapshot = True  # events this client cannot follow: fetch the view
        self._after_apply(events)
        self.v = v
        shown = events if recorded else [e for e in events if e.get("type") in _UNRECORDED]
        if was_lost:  # said already for this position
            shown = [event for event in shown if event.get("type") != "lost_position"]
        self._report(v, shown)
        if board.needs_snapshot:
            board.needs_snapshot = False
            self._spawn(self.snapshot())
        self._changed.set()
        return True

    def _may_fetch(self, v: int) -> bool:
        """Whether a version gap may be answered by asking the server (again).

        A server whose answers keep skipping versions would have the client ask
        for ever: after ``MAX_FETCHES`` in a row with no push in order between
        them, a gap is skipped with a notice instead (the next action's
        ``stale`` still catches up).
        """
        if self._fetches < MAX_FETCHES:
            self._fetches += 1
            return True
        reason = _("game.versions_skip", v=v, seen=self.v)
        text = _("app.frame_skipped", reason=reason)
        if self.json_mode:
            self.terminal.json({"type": "notice", "notice": "app.frame_skipped", "text": text})
        else:
            self.terminal.say(text)
        return False

    def _replace(self, v: int, snapshot: dict[str, Any]) -> None:
        """A ``snapshot`` event: the whole view at ``v``, whatever version was seen."""
        if self.json_mode:
            self.terminal.json({"game": self.game, "v": v, **snapshot})
        self.take({"type": "game", "game": self.game, "v": v, "view": snapshot["view"]})
        if self.terminal.interactive and not self.json_mode:
            self.show()

    def _after_apply(self, events: list[dict[str, Any]]) -> None:
        """Anchor the clock on a ``clock`` event; it also says whether the game is paused."""
        board = self.board
        assert board is not None
        for event in events:
            if event.get("type") == "clock":
                self._clock_at = time.monotonic()
                paused = event.get("paused", not board.running)  # an older server's: guessed
                self.paused = bool(paused) and not board.finished
        if board.finished:  # ``won`` and ``game_lost`` end a pause too
            self.paused = False

    def _report(self, v: int, events: list[dict[str, Any]]) -> None:
        board = self.board
        for event in events:
            if self.json_mode:
                self.terminal.json({"game": self.game, "v": v, **event})
                continue
            if event.get("type") == "lost_position" and event.get("from_deal"):
                if self._deal_lost_said == self.game:  # the deal stays lost: said once
                    continue
                self._deal_lost_said = self.game
            if event.get("type") == "won":
                self.terminal.say(render_results(event, self.terminal.table_width()))
                if self.terminal.interactive:
                    self.terminal.say(_("game.after_win"))
                continue
            line = describe_event(
                event,
                undoable=board is None or board.undo_depth > 0,
                lost=board is not None and board.lost_position,
            )
            if line is not None:
                self.terminal.say(line)
        changed = any(event.get("type") in _SHOWN for event in events)
        if self.terminal.interactive and not self.json_mode and changed:
            self.show()

    async def until(self, v: int, timeout: float = 10.0) -> None:
        """Wait until version ``v`` has been applied (resync if it does not come).

        A connection that fails for good meanwhile ends the wait at once with its
        failure (``Connection.failure``: also standard output gone, met by the
        reader while it printed a push): no push can come any more.
        """
        deadline = time.monotonic() + timeout
        while self.v < v:
            self._changed.clear()
            self._raise_if_lost()
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                await self.resync()  # the push went missing: ask for it
                return
            waits = [asyncio.ensure_future(self._changed.wait())]
            if self.conn is not None:
                waits.append(asyncio.ensure_future(self.conn.lost.wait()))
            try:
                await asyncio.wait(waits, timeout=remaining, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for waiting in waits:
                    waiting.cancel()
        await self.settle()

    def _raise_if_lost(self) -> None:
        conn = self.conn
        if conn is not None and conn.lost.is_set():
            raise conn.failure or ConnectionFailed(_("connection.lost", url=shown_url(conn.url)))

    def _spawn(self, coroutine: Coroutine[Any, Any, None]) -> None:
        task = asyncio.ensure_future(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
