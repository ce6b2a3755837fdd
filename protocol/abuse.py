"""The abuse rule: more than ABUSE_LIMIT bad_request errors within
ABUSE_WINDOW_SECONDS on one connection close it with 1008 (policy violation).

``AbuseMeter`` is the rule as a value, without a clock of its own: the
connection passes the time (``time.monotonic()``) with each strike, which keeps
it deterministic under test.
"""

from __future__ import annotations

from collections import deque

from protocol.constants import ABUSE_LIMIT, ABUSE_WINDOW_SECONDS

__all__ = ["AbuseMeter"]


class AbuseMeter:
    """Counts one connection's bad requests over a sliding window."""

    def __init__(self, limit: int = ABUSE_LIMIT, window: float = ABUSE_WINDOW_SECONDS) -> None:
        self.limit = limit
        self.window = window
        self._strikes: deque[float] = deque()

    def strike(self, now: float) -> bool:
        """Record a bad_request at ``now`` (seconds); True once the limit is exceeded."""
        self._strikes.append(now)
        while self._strikes[0] <= now - self.window:
            self._strikes.popleft()
        return len(self._strikes) > self.limit
