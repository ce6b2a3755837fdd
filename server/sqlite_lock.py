"""One server process per SQLite file.

Why: SQLite has no change notifications (``server.store.notify`` needs
PostgreSQL), so a second server on the same file would serve its own cached
games and never hear the first one's moves: two devices would silently see
two different games. Several nodes need PostgreSQL; on SQLite, one process.

How: the server holds an exclusive ``flock`` on ``<database>.lock`` beside
the file for as long as it runs. A second process asking for it is refused at
once (``SqliteInUse``, one line at start-up, exit 2). The operating system
drops the lock when the holder exits in any way, SIGKILL included, so a crash
never leaves a stale lock behind. ``--migrate`` takes it shared: migrations
may run together (each finds the schema as the one before left it), but not
beside a server, whose schema a newer version's migration would change under
it; and a server does not start while one runs.

The lock file is named after the database file's real path (symbolic links
resolved), so a server given a link to the file takes the same lock as one
given the file. A directory where the lock file cannot be made (no write
permission, a read-only mount) is ``SqliteUnwritable``: the database could not
be written there either.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path

from sqlalchemy.engine import make_url

__all__ = ["SqliteInUse", "SqliteLock", "SqliteUnwritable", "real_path"]


class SqliteInUse(Exception):
    """Another server process already serves this SQLite file."""


class SqliteUnwritable(Exception):
    """The database's directory cannot be made, or the lock file cannot be made in it."""


def real_path(database: str) -> Path:
    """``database``'s path with its symbolic links resolved; ``SqliteUnwritable`` for
    links that lead back to themselves, where no file can ever be."""
    try:
        return Path(database).resolve()
    except (OSError, RuntimeError):  # Python 3.11 says RuntimeError("Symlink loop ...")
        loop = f"cannot follow {database}: its symbolic links form a loop"
        raise SqliteUnwritable(loop) from None


class SqliteLock:
    """A lock on one SQLite database file, held until ``release()``: exclusive (a
    server), or ``shared`` with other holders that ask it shared (``--migrate``)."""

    def __init__(self, url: str) -> None:
        database = make_url(url).database
        # The real file: a symbolic link to it must not get a lock of its own.
        self.path = None if not database or database == ":memory:" else real_path(database)
        self._fd: int | None = None

    def acquire(self, shared: bool = False) -> None:
        if self.path is None or self._fd is not None:
            return
        lock_path = self.path.with_name(self.path.name + ".lock")
        try:
            fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            # The lock file itself when it is there (read-only, a directory), else where
            # it would be made.
            there = os.path.lexists(lock_path)
            what = f"open {lock_path}" if there else f"write in {lock_path.parent}"
            raise SqliteUnwritable(f"cannot {what} ({exc.strerror or exc})") from None
        try:
            fcntl.flock(fd, (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            if shared:
                raise SqliteInUse(
                    f"a scorpion-server serves {self.path}: stop it before migrating"
                ) from None
            raise SqliteInUse(
                f"another scorpion-server already serves {self.path}, or migrates it "
                f"(one process per SQLite file; several nodes need PostgreSQL)"
            ) from None
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)  # closing the descriptor drops the lock
            self._fd = None
