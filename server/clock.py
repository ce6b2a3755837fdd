"""The play clock of one game (R22), kept by the server, never the client.

``PlayClock`` holds the play time banked so far (``base_ms``) and, while
running, the monotonic instant it last started. The service decides when it
runs (at least one connection has the game open, and it is not paused, and
the game is unfinished) and calls ``start``/``stop``; ``now_ms`` is the play
time to pass to the engine with an action. Time source is injectable for
tests (seconds, monotonic).
"""

from __future__ import annotations

import time
from collections.abc import Callable

__all__ = ["PlayClock"]

Monotonic = Callable[[], float]


class PlayClock:
    def __init__(self, base_ms: int = 0, monotonic: Monotonic = time.monotonic) -> None:
        self.base_ms = base_ms
        self.paused = False
        self._since: float | None = None
        self._monotonic = monotonic

    @property
    def running(self) -> bool:
        return self._since is not None

    def now_ms(self) -> int:
        if self._since is None:
            return self.base_ms
        return self.base_ms + int((self._monotonic() - self._since) * 1000)

    def running_ms(self) -> int:
        """How long it has run since it last started; 0 while stopped."""
        if self._since is None:
            return 0
        return int((self._monotonic() - self._since) * 1000)

    def start(self) -> None:
        if self._since is None:
            self._since = self._monotonic()

    def stop(self, at_ms: int | None = None) -> None:
        """Stop counting; ``at_ms``: at that play time (a finished game's recorded one)."""
        if self._since is not None:
            self.base_ms = self.now_ms() if at_ms is None else at_ms
            self._since = None

    def hold(self, t_ms: int) -> None:
        """Stopped, at ``t_ms`` (the play time the store holds), running or not before."""
        self._since = None
        self.base_ms = t_ms

    def advance_to(self, t_ms: int) -> None:
        """Never show less than ``t_ms`` (the last action's time, after a reload)."""
        if self.now_ms() < t_ms:
            self.base_ms += t_ms - self.now_ms()
