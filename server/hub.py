"""Who watches which game, and one bounded outbound queue per connection.

Theory of operation
-------------------
Every connection owns an ``Outbox``: a bounded FIFO of encoded frames that
the connection drains onto its socket. Nothing else ever writes to a socket,
so replies and pushes leave each connection in the order they were queued.
The outbox is read one of two ways: a task awaits ``get``/``get_batch``, or
(the server's connections) a callback given to ``on_ready`` runs once in the
loop turn after frames were queued and takes them with ``take_batch``. The
callback writes them to the socket at once when it takes them, so a reply
costs no task of its own (``server.connection``); all the frames queued in
one turn (an ack and its push) are taken together. Frames the connection's
own task queues (its replies, and the pushes of its own actions) wait for
that task's ``flush`` when it has answered the request: they leave in the
same loop turn, not the next one.

``Hub`` maps a game id to the outboxes that have it open, and remembers the
version of the last push of each watched game (``told``): what its watchers
were last told, so a game dropped from memory and loaded again can tell them
what they missed. ``push`` encodes a
message once and appends the same bytes to every watcher's outbox
synchronously (no ``await`` in between), so all watchers see one game's
pushes in the same order; the service pushes while it holds the game's lock,
which orders pushes across actions too.

A connection that does not read fast enough overflows its outbox: past
``limit`` frames or ``max_bytes`` bytes the outbox marks itself
``overflowed``, drops what it holds (the memory is released at once) and the
writer closes the connection (1001: reconnect and resync), rather than
silently dropping an event or letting one slow peer hold memory without bound.
All outboxes share one ``Budget`` of bytes: a frame that would take the total
past it overflows the outbox holding the most bytes (often the one that does
not read), until the frame fits. So outbound memory is at most
``Budget.limit`` in all and ``max_bytes`` per connection, plus what the socket
layer holds (one frame above websockets' write limit, and the kernel's buffer),
which the writer's drain timeout bounds in time.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Any

from protocol import encode

__all__ = ["Budget", "Hub", "Outbox"]

UNBOUNDED = 2**62
COMPACT_AT = 256  # sent slots an outbox that never drains drops from its list at once


class Budget:
    """The bytes queued in every outbox together, at most ``limit``."""

    def __init__(self, limit: int = UNBOUNDED) -> None:
        self.limit = limit
        self.used = 0
        self.shed = 0  # outboxes overflowed to make room (for tests and metrics)
        self._outboxes: set[Outbox] = set()

    def join(self, outbox: Outbox) -> None:
        self._outboxes.add(outbox)

    def leave(self, outbox: Outbox) -> None:
        self._outboxes.discard(outbox)

    def make_room(self, size: int) -> None:
        """Overflow the fullest outboxes until ``size`` more bytes fit (or none is left)."""
        while self.used + size > self.limit:
            holding = [outbox for outbox in self._outboxes if outbox.queued_bytes]
            if not holding:
                return
            max(holding, key=lambda outbox: outbox.queued_bytes).overflow()
            self.shed += 1


class Outbox:
    """A connection's bounded queue of outbound frames.

    Kept small, since every idle connection has one: the frames are a plain
    list read from ``_head`` (an empty deque alone takes 600 bytes), and a
    reader waits on one future made when it has nothing to take, not on an
    ``asyncio.Event`` with its own deque of waiters.
    """

    __slots__ = (
        "__weakref__",
        "_frames",
        "_head",
        "_owed",
        "_owner",
        "_ready",
        "_scheduled",
        "_waiter",
        "budget",
        "closed",
        "limit",
        "max_bytes",
        "overflowed",
        "queued_bytes",
    )

    def __init__(
        self, limit: int = 1024, max_bytes: int = UNBOUNDED, budget: Budget | None = None
    ) -> None:
        self.limit = limit
        self.max_bytes = max_bytes
        self.budget = budget if budget is not None else Budget()
        self.overflowed = False
        self.closed = False
        self.queued_bytes = 0  # the frames' total size
        self._frames: list[bytes] = []  # queued from self._head on; sent slots hold b""
        self._head = 0
        self._waiter: asyncio.Future[None] | None = None  # a reader, waiting for a frame
        self._ready: Callable[[], None] | None = None  # on_ready's callback
        self._owner: asyncio.Task[Any] | None = None  # its frames wait for its flush()
        self._scheduled = False  # the callback is due in this loop turn
        self._owed = False  # the owner queued frames: its flush() calls back
        self.budget.join(self)

    def on_ready(self, callback: Callable[[], None], owner: asyncio.Task[Any] | None) -> None:
        """Call ``callback`` soon (once per loop turn) after a frame is queued, the outbox
        overflows or closes, unless a ``get`` is waiting (which is woken instead).
        When the task ``owner`` does so, ``callback`` waits for its ``flush()``."""
        self._ready = callback
        self._owner = owner

    def flush(self) -> None:
        """The owner's call once it has answered a request: call back now if it queued
        frames since (or the outbox overflowed or closed)."""
        if self._owed:
            self._owed = False
            if self._ready is not None:
                self._ready()

    def __len__(self) -> int:
        return len(self._frames) - self._head

    def put(self, frame: bytes) -> bool:
        """Queue ``frame``; False (and ``overflowed`` set) when the queue is full or closed."""
        if self.closed or self.overflowed:
            return False
        size = len(frame)
        if len(self) >= self.limit or self.queued_bytes + size > self.max_bytes:
            self.overflow()
            return False
        self.budget.make_room(size)
        if self.overflowed:  # this outbox was the fullest
            return False
        self._frames.append(frame)
        self.queued_bytes += size
        self.budget.used += size
        self._wake()
        return True

    def overflow(self) -> None:
        """Give up on this connection: drop its frames; ``get`` returns None."""
        self.overflowed = True
        self._frames = []
        self._head = 0
        self.budget.used -= self.queued_bytes
        self.queued_bytes = 0
        self._wake()

    async def get(self) -> bytes | None:
        """The next frame; None once the outbox is closed (drained) or overflowed."""
        if not await self._wait():
            return None
        return self._take()

    async def get_batch(self, max_frames: int, max_bytes: int) -> list[bytes] | None:
        """The next frame and those queued behind it, up to ``max_frames`` and (beyond the
        first) ``max_bytes`` in all; None once the outbox is closed (drained) or overflowed.

        The writer sends such a batch in one write to the socket (``connection``): a reply
        and the push queued with it cost one system call, not two.
        """
        if not await self._wait():
            return None
        return self.take_batch(max_frames, max_bytes)

    def take_batch(self, max_frames: int, max_bytes: int) -> list[bytes]:
        """What ``get_batch`` returns, without waiting: empty when nothing is queued."""
        if self._head == len(self._frames):
            return []
        batch = [self._take()]
        size = len(batch[0])
        while len(batch) < max_frames and self._head < len(self._frames):
            size += len(self._frames[self._head])
            if size > max_bytes:
                break
            batch.append(self._take())
        return batch

    async def _wait(self) -> bool:
        """Until a frame is queued (True) or none will be sent (False)."""
        while True:
            if self.overflowed:
                return False
            if self._head < len(self._frames):
                return True
            if self.closed:
                return False
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None

    def _take(self) -> bytes:
        frames = self._frames
        frame = frames[self._head]
        frames[self._head] = b""  # a frame given to the writer is not held here
        self._head += 1
        if self._head == len(frames):  # drained: start the list again
            self._frames = []
            self._head = 0
        elif self._head >= COMPACT_AT and 2 * self._head >= len(frames):
            del frames[: self._head]
            self._head = 0
        self.queued_bytes -= len(frame)
        self.budget.used -= len(frame)
        return frame

    def _wake(self) -> None:
        if self._waiter is not None:
            if not self._waiter.done():
                self._waiter.set_result(None)
        elif self._ready is not None and not self._scheduled:
            owner = self._owner  # (current_task with a loop: no get_running_loop)
            if owner is not None and asyncio.current_task(owner.get_loop()) is owner:
                self._owed = True
            else:
                self._scheduled = True
                asyncio.get_running_loop().call_soon(self._call_ready)

    def _call_ready(self) -> None:
        self._scheduled = False
        if self._ready is not None:
            self._ready()

    def close(self) -> None:
        """No more frames: ``get`` returns what is queued, then None."""
        self.closed = True
        self._wake()

    def release(self) -> None:
        """The connection is gone: return its bytes to the budget (no callback any more)."""
        self._ready = self._owner = None
        self.overflow()
        self.budget.leave(self)


class Hub:
    """Game id -> the outboxes watching it."""

    def __init__(self) -> None:
        self._watchers: dict[int, dict[int, Outbox]] = {}
        self._told: dict[int, int] = {}
        # The other way round, so a connection's games are found without a scan of every
        # watched game (each sign-in asks): outbox id -> its games, in the order opened.
        self._opened: dict[int, dict[int, None]] = {}

    def send(self, outbox: Outbox, message: Mapping[str, Any]) -> None:
        """A reply (or a push) to one connection."""
        outbox.put(encode(message))

    def watch(self, game: int, outbox: Outbox, v: int | None = None) -> None:
        """``outbox`` has ``game`` open, having been sent its state at version ``v``."""
        self._watchers.setdefault(game, {})[id(outbox)] = outbox
        self._opened.setdefault(id(outbox), {})[game] = None
        if v is not None:
            self._told[game] = max(v, self._told.get(game, v))

    def unwatch(self, game: int, outbox: Outbox) -> None:
        opened = self._opened.get(id(outbox))
        if opened is not None:
            opened.pop(game, None)
            if not opened:
                del self._opened[id(outbox)]
        watchers = self._watchers.get(game)
        if watchers is None:
            return
        watchers.pop(id(outbox), None)
        if not watchers:
            del self._watchers[game]
            self._told.pop(game, None)

    def watching(self, game: int, outbox: Outbox) -> bool:
        return id(outbox) in self._watchers.get(game, {})

    def count(self, game: int) -> int:
        """How many connections have ``game`` open."""
        return len(self._watchers.get(game, {}))

    def watched(self) -> list[int]:
        """Every game some connection has open."""
        return list(self._watchers)

    def told(self, game: int) -> int | None:
        """The version of the last push to ``game``'s watchers (None: none since watched)."""
        return self._told.get(game)

    def games_of(self, outbox: Outbox) -> list[int]:
        """The games ``outbox`` has open, in the order it opened them."""
        return list(self._opened.get(id(outbox), ()))

    def push(self, game: int, message: Mapping[str, Any]) -> int:
        """Queue ``message`` for every watcher of ``game``; how many got it."""
        watchers = self._watchers.get(game)
        if not watchers:
            return 0
        if isinstance(message.get("v"), int):
            self._told[game] = message["v"]
        frame = encode(message)
        return sum(outbox.put(frame) for outbox in list(watchers.values()))
