"""The SQLite file a store serves, pinned once it is known to be the right one.

SQLite names its files by path: the database, and beside it the write-ahead
log (``-wal``) and its index (``-shm``). A server whose file is removed,
moved or replaced while it runs (a backup put in place with ``mv``, say)
goes on writing through the descriptor it holds, to the old file, but the
log at the path now sits beside another database. SQLite does not write that
log back into a moved file when it closes, and the next process to open the
path reads it as the new file's own: a restored backup came back holding the
old file's rows, or an empty file created at the path lost every write.

``PinnedFile`` keeps the file's (device, inode) from the store's first
connection on (``pin_first``: a file replaced while the server starts is
caught too); ``check`` raises ``DatabaseReplaced`` once the path names
anything else, and the store calls it before each write and each new
connection, and once a second while it serves, so nothing more is written and
no connection opens the file at the path. The store then copies the log into
the old file through a connection that still holds it, and empties it
(``wal_checkpoint(TRUNCATE)``), so the log left at the path holds nothing of
it: at once, and again as the store closes (a write already past its check
may have added to it).

A file overwritten in place (``cp`` onto it) keeps its inode: nothing here
can tell, and what both wrote is mixed. Restore with the server stopped.
"""

from __future__ import annotations

import os
import sqlite3
from typing import Any

from server.store.errors import DatabaseReplaced

__all__ = ["PinnedFile", "open_pinned"]


class PinnedFile:
    """The (device, inode) of the SQLite file at ``path``, once pinned."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._pinned: tuple[int, int] | None = None

    def _found(self) -> tuple[int, int] | None:
        try:
            found = os.stat(self.path)
        except OSError:
            return None
        return found.st_dev, found.st_ino

    def pin_first(self) -> None:
        """After a connection was made: unless pinned already, the file at the path now
        (the one it opened) is the one served from now on."""
        if self._pinned is None:
            self._pinned = self._found()

    @property
    def moved(self) -> bool:
        """Pinned, and the path no longer names that file (removed, moved or replaced)."""
        return self._pinned is not None and self._found() != self._pinned

    def check(self) -> None:
        """Raise ``DatabaseReplaced`` if the file was removed or replaced (``moved``)."""
        if self.moved:
            raise DatabaseReplaced(self.path)

    def opened(self, conn: Any) -> None:
        """A connection was just made (before it, ``check``): the first pins the file;
        one that opened another file than the one pinned is closed, and refused."""
        self.pin_first()
        if self.moved:
            conn.close()
            self.check()


def open_pinned(path: str, pinned: PinnedFile | None) -> sqlite3.Connection:
    """A connection to ``path``, refused once the file pinned left it: before it is
    made (SQLite would create a file where none is), and closed if the file changed
    while it was made."""
    if pinned is not None:
        pinned.check()
    conn = sqlite3.connect(path)
    if pinned is not None:
        pinned.opened(conn)
    return conn
