"""File descriptors: the process's limit raised at start, and said when short.

Every socket is a file descriptor, and so are the database's files and
connections, the solver workers' pipes and the log. A process that has none
left cannot accept a connection (asyncio retries a second later, uvloop
accepts it and drops it at once), nor open anything else: SQLite answered a
signed-in player's ``new_game`` with ``unavailable`` (``SQLITE_CANTOPEN``),
and nothing said why. The caps on sockets (``--max-connections``, and the
sockets still in their handshakes, ``server.connection.SocketGate``) bound
what clients can hold; the limit must leave room for them:

- ``raise_limit`` raises the soft ``RLIMIT_NOFILE`` to the hard limit at start
  (1024 is the usual soft limit, under systemd too) and logs a warning when it
  is still below what the caps need (``needed``);
- ``Watch`` (twice a second) logs a warning, its repeats summed by the log, when
  few are left; ``accept_failed`` is the loop's
  exception handler that says a failed accept in one line (asyncio's own logged
  each with its traceback, at most once a second).
"""

from __future__ import annotations

import asyncio
import errno
import fcntl
import logging
import os
import resource
from collections.abc import Callable
from typing import Any, Final

__all__ = [
    "RESERVED",
    "ExceptionHandler",
    "Watch",
    "accept_failed",
    "in_use",
    "needed",
    "raise_limit",
]

log = logging.getLogger(__name__)

RESERVED: Final = 128
"""Descriptors the server needs besides its clients' sockets: the listening socket, the
database's files or connections, the solver workers' pipes, the log, the web client's
files as they are read."""

SPARE: Final = 32
"""So few descriptors left is said (``Watch``): a burst of connections takes the rest."""

_OUT_OF_DESCRIPTORS: Final = frozenset({errno.EMFILE, errno.ENFILE})


def needed(max_connections: int, handshakes: int, backlog: int) -> int:
    """Descriptors the server may need: every connection its caps let in, every socket
    still in its handshake, the connections accepted at once before any is counted (the
    standard asyncio loop accepts up to the listen ``backlog``'s count in one go), and
    ``RESERVED``."""
    return max_connections + handshakes + backlog + RESERVED


def raise_limit(need: int) -> int:
    """Raise the soft ``RLIMIT_NOFILE`` to the hard limit (to ``need`` when the hard one
    is unlimited); the soft limit now. A warning says when it is below ``need``."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return need
    target = max(soft, need) if hard == resource.RLIM_INFINITY else hard
    if soft < target:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (OSError, ValueError) as exc:  # a container that forbids it
            log.debug("could not raise the file descriptor limit to %d: %s", target, exc)
    if soft < need:
        log.warning(
            "this process may open %d file descriptors (its hard limit: %s), fewer than the "
            "%d its caps need (--max-connections, the sockets in their handshakes, "
            "--listen-backlog and %d for the database, workers and log): connections and "
            "files will fail when "
            "they run out; raise the limit (ulimit -n, systemd's LimitNOFILE=) or lower "
            "--max-connections",
            soft,
            "unlimited" if hard == resource.RLIM_INFINITY else hard,
            need,
            RESERVED,
        )
    return soft


def in_use() -> int | None:
    """How many descriptors this process has open (None where the system does not say);
    all it may have when there is none left for the listing itself."""
    for directory in ("/proc/self/fd", "/dev/fd"):
        try:
            return len(os.listdir(directory)) - 1  # the listing's own
        except OSError as exc:
            if exc.errno in _OUT_OF_DESCRIPTORS:
                return resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    return None


class Watch:
    """Says, in a warning, when fewer than ``SPARE`` descriptors are left (``check``, as
    often as the caller likes). Each check asks whether the descriptor numbered the
    limit less ``SPARE`` is open, one system call: the kernel gives out the lowest free
    number, so that one is taken only once nearly all were; only then are they counted
    (a directory listing of them all)."""

    def __init__(self, taken: Callable[[int], bool] | None = None) -> None:
        self._taken = taken if taken is not None else _taken

    def check(self) -> None:
        limit = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        if limit == resource.RLIM_INFINITY or limit <= SPARE or not self._taken(limit - SPARE):
            return
        used = in_use()
        if used is None or used < limit - SPARE:
            return
        log.warning(
            "%d of the %d file descriptors this process may open are in use: new "
            "connections and files fail once they run out (raise the limit or lower "
            "--max-connections)",
            used,
            limit,
        )


def _taken(number: int) -> bool:
    """Whether the descriptor ``number`` is open."""
    try:
        fcntl.fcntl(number, fcntl.F_GETFD)
    except OSError:
        return False
    return True


ExceptionHandler = Callable[[asyncio.AbstractEventLoop, dict[str, Any]], object]


def accept_failed(before: ExceptionHandler | None) -> ExceptionHandler:
    """The loop's exception handler: an error for want of descriptors (an accept that
    failed, or uvloop's listener) in one warning line, without a traceback, its repeats
    summed by the log; anything else to ``before`` (the loop's own when None)."""

    def handle(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> object:
        exc = context.get("exception")
        if not isinstance(exc, OSError) or exc.errno not in _OUT_OF_DESCRIPTORS:
            if before is None:
                return loop.default_exception_handler(context)
            return before(loop, context)
        log.warning(
            "could not accept a connection: %s (the process has no file descriptors left; "
            "raise the limit or lower --max-connections)",
            exc.strerror or exc,
        )
        return None

    return handle
