"""The store's exception tree, and the one place database errors are translated.

::

    StoreError                 anything the store cannot do; never carries SQL
    ├── NameTaken              create_player: the name is in use, ignoring case
    ├── NotFound               no such player or game
    ├── GameInProgress         create_game: the player has an unfinished game (R17)
    ├── VersionConflict        a write was computed from a version that is no longer current
    ├── SchemaOutdated         the schema is not at this code's head revision
    ├── SchemaNewer            ... but at a revision this code does not know
    ├── SchemaForeign          the database holds another program's tables, not ours
    └── StoreUnavailable       the database cannot be reached, is busy, or the store is closed
        └── DatabaseReplaced   the SQLite file was removed or replaced while the server ran

Callers see only these. ``translate_errors()`` maps SQLAlchemy and driver
exceptions to the most specific of them with ``raise ... from exc``: the
message is ours and never quotes SQL or parameters; the chained cause keeps the
detail for the server's log, which is the only place it belongs.

Invalid input that no database would accept (an empty name, a negative deal)
raises ``ValueError`` before any SQL runs: that is the caller's bug, not a
store failure.
"""

from __future__ import annotations

from types import TracebackType
from typing import Final, Literal

from sqlalchemy import exc as sa_exc

__all__ = [
    "UPGRADE_HINT",
    "DatabaseReplaced",
    "GameInProgress",
    "NameTaken",
    "NotFound",
    "NotHearing",
    "SchemaForeign",
    "SchemaNewer",
    "SchemaOutdated",
    "StoreConflict",
    "StoreError",
    "StoreUnavailable",
    "VersionConflict",
    "WritesFailing",
    "integrity_kind",
    "translate_errors",
]

UPGRADE_HINT: Final = (
    "run `scorpion-server --migrate`, or `alembic upgrade head` in the source tree "
    "with SCORPION_DATABASE_URL set"
)


class StoreError(Exception):
    """Base of every error the store raises on purpose."""


class NameTaken(StoreError):
    """Another player already has this name, compared ignoring case."""

    def __init__(self, name: str) -> None:
        self.name = name
        super().__init__(f"the name {name!r} is taken")


class TokenTaken(StoreError):
    """A token a client made for itself (``rotate_token``'s) is one the store has already."""

    def __init__(self) -> None:
        super().__init__("that token is in use")


class NotFound(StoreError):
    """The player or game a call names does not exist."""

    def __init__(self, kind: str, ident: int) -> None:
        self.kind = kind
        self.ident = ident
        super().__init__(f"no {kind} {ident}")


class GameInProgress(StoreError):
    """The player already has an unfinished game.

    R17: starting a new game abandons the unfinished one, so a player has at
    most one; a ``GameWrite`` ending it with ``then_start`` does both at once.
    """

    def __init__(self, player_id: int) -> None:
        self.player_id = player_id
        super().__init__(f"player {player_id} has an unfinished game")


class VersionConflict(StoreError):
    """A write expected ``expected`` but the game is at ``current`` (or finished).

    Another writer (a second node, a second device) got there first: the
    caller reloads the game and retries or answers ``stale``. Nothing of the
    rejected write was stored. ``current`` and ``status`` are the game's
    version and status as the store saw them, when it could tell.
    """

    def __init__(
        self, game_id: int, expected: int, current: int | None = None, status: str | None = None
    ) -> None:
        self.game_id = game_id
        self.expected = expected
        self.current = current
        self.status = status
        where = "has moved on" if current is None else f"is at version {current}"
        state = "" if status in (None, "active") else f" and is {status}"
        super().__init__(f"game {game_id} {where}{state}; the write expected version {expected}")


class GamePaused(StoreError):
    """A write of an action found its game paused: nothing of it was stored.

    The pause was made after the writer last read the game, on another node or
    another device (a node that has not heard of it yet). A write that ends the
    game without an action (resign, abandon) is not refused: a paused game may
    be given up. ``version`` is the game's, unchanged: a pause moves no version.
    """

    def __init__(self, game_id: int, version: int) -> None:
        self.game_id = game_id
        self.version = version
        super().__init__(f"game {game_id} is paused at version {version}; nothing was written")


class SchemaOutdated(StoreError):
    """The database schema is missing or not at the head revision of this code."""

    def __init__(self, detail: str) -> None:
        self.detail = detail
        super().__init__(f"{detail}: {UPGRADE_HINT}")


class SchemaNewer(StoreError):
    """The schema is at a revision this code does not know: a newer server's (or another
    program's). No upgrade reaches it."""

    def __init__(self, revision: str) -> None:
        self.revision = revision
        super().__init__(
            f"the database schema is at revision {revision}, which this scorpion-server "
            "does not know: a newer scorpion-server (or another program) made it; run that "
            "version, or restore a backup"
        )


class SchemaForeign(StoreError):
    """The database holds tables this server did not make, and not its schema: another
    program's database, given by mistake. Neither served nor migrated: an upgrade would
    add this server's tables among the other program's, or fail half-way on a name both use."""

    def __init__(self, detail: str) -> None:
        self.detail = detail
        super().__init__(
            f"{detail}; give scorpion-server a database of its own (an empty one: "
            "--migrate, or on SQLite the first start, makes the schema)"
        )


class StoreUnavailable(StoreError):
    """The database cannot be used right now; retrying later may succeed."""


class StoreAccessRefused(StoreUnavailable):
    """The database refuses this server until its operator acts: the database named
    does not exist (renamed, dropped), the role may not log in or its password is
    refused, or it lacks a privilege. While serving, an outage like another (access
    may come back at any moment); at start-up said at once, as waiting does not cure it."""


class StoreConflict(StoreUnavailable):
    """The database gave the transaction up for a conflict with a concurrent one (a
    deadlock, a serialization failure): nothing of it was kept, and the same work may
    succeed at once (the group committer retries each write alone)."""


def integrity_kind(exc: sa_exc.IntegrityError) -> str:
    """Which constraint ``exc`` broke: 'unique', 'foreign_key', 'check', 'not_null' or ''.

    Read from the driver's structured error (PostgreSQL's SQLSTATE, SQLite's
    extended result code name), never parsed out of the message.
    """
    orig = exc.orig
    sqlstate = getattr(orig, "sqlstate", None)
    if sqlstate is not None:
        return _PG_KINDS.get(str(sqlstate), "")
    name = str(getattr(orig, "sqlite_errorname", ""))
    return _SQLITE_KINDS.get(name, "")


_PG_KINDS: Final = {
    "23505": "unique",
    "23503": "foreign_key",
    "23514": "check",
    "23502": "not_null",
}
_SQLITE_KINDS: Final = {
    "SQLITE_CONSTRAINT_UNIQUE": "unique",
    "SQLITE_CONSTRAINT_PRIMARYKEY": "unique",
    "SQLITE_CONSTRAINT_FOREIGNKEY": "foreign_key",
    "SQLITE_CONSTRAINT_CHECK": "check",
    "SQLITE_CONSTRAINT_NOTNULL": "not_null",
}
_UNDEFINED_STATES: Final = frozenset({"42P01", "42703"})  # undefined table, undefined column

# SQLSTATEs after which nothing of the statement's transaction was kept and a
# later attempt may succeed: PostgreSQL refused or dropped the work for a reason
# of its own (shutting down, starting up, failing over, overloaded, timed out).
_TRANSIENT_CLASSES: Final = frozenset(
    {
        "08",  # connection exception
        "53",  # insufficient resources: too many connections, disk full, out of memory
        "57",  # operator intervention: shutting down (57P01..57P03), statement timeout (57014)
        "58",  # system error: I/O error
    }
)
_TRANSIENT_STATES: Final = frozenset(
    {
        "40001",  # serialization failure
        "40P01",  # deadlock detected
        "55P03",  # lock not available (lock_timeout)
        "55000",  # object not in prerequisite state: a database not accepting connections now
        "25006",  # read-only transaction: a standby, mid-failover
        "25P03",  # idle-in-transaction timeout
    }
)


def _missing_schema(exc: sa_exc.DBAPIError) -> bool:
    """True when the statement failed because a table or column it names does not exist:
    no schema yet, or one taken back (``alembic downgrade``) under a running server."""
    if getattr(exc.orig, "sqlstate", None) in _UNDEFINED_STATES:
        return True
    reason = str(exc.orig)  # SQLite has no finer code for these
    return "no such table" in reason or "no such column" in reason


_CONFLICT_STATES: Final = frozenset({"40001", "40P01"})  # serialization failure, deadlock
# SQLSTATEs of access refused (``StoreAccessRefused``), by the class or the state
_ACCESS_REFUSALS: Final = {
    "28": "the database refused this server's role (a login or password not accepted)",
    "3D000": "the database named does not exist",
    "42501": "the database role lacks a privilege this needs",
}


def _access_refusal(sqlstate: str) -> StoreAccessRefused | None:
    words = _ACCESS_REFUSALS.get(sqlstate) or _ACCESS_REFUSALS.get(sqlstate[:2])
    return None if words is None else StoreAccessRefused(words)


def _sqlstate(exc: sa_exc.DBAPIError) -> str:
    return str(getattr(exc.orig, "sqlstate", None) or "")


def _transient_sqlstate(exc: sa_exc.DBAPIError) -> bool:
    """True when PostgreSQL's SQLSTATE says the work was refused for now, not for good."""
    sqlstate = _sqlstate(exc)
    return sqlstate in _TRANSIENT_STATES or sqlstate[:2] in _TRANSIENT_CLASSES


def _translate(exc: Exception) -> StoreError | None:
    """The public error for a database-layer exception, or None if it is not one."""
    if isinstance(exc, sa_exc.DBAPIError) and _missing_schema(exc):
        return SchemaOutdated("the database has no schema, or an incomplete or older one")
    if isinstance(exc, sa_exc.DBAPIError) and _transient_sqlstate(exc):
        if getattr(exc.orig, "sqlstate", None) in _CONFLICT_STATES:
            return StoreConflict("the database gave the work up for a concurrent one")
        return StoreUnavailable("the database refused the work for now")
    # The operator's to fix (the database's name, the role's login or grants), not the
    # client's nor a bug: retry later. Raised when a statement runs, or, unwrapped by
    # SQLAlchemy, while the pool connects.
    sqlstate = _sqlstate(exc) if isinstance(exc, sa_exc.DBAPIError) else ""
    refused = _access_refusal(sqlstate or str(getattr(exc, "sqlstate", None) or ""))
    if refused is not None:
        return refused
    if isinstance(exc, sa_exc.IntegrityError):
        return StoreError("the database refused the change as inconsistent")
    if isinstance(exc, sa_exc.DBAPIError) and exc.connection_invalidated:
        return StoreUnavailable("the connection to the database was lost")
    if isinstance(exc, (sa_exc.OperationalError, sa_exc.InterfaceError)):
        return StoreUnavailable("the database is unavailable or busy")
    if isinstance(exc, (sa_exc.TimeoutError, OSError, TimeoutError)):
        return StoreUnavailable("the database cannot be reached")
    if type(exc).__module__.startswith("asyncpg."):
        # The driver's own error, unwrapped: raised while the pool set a new connection
        # up (the dialect's codecs, the statement timeout), which a terminated backend
        # cuts short. Statements' errors reach here wrapped, as DBAPIError.
        return StoreUnavailable("the connection to the database was lost")
    if isinstance(exc, sa_exc.SQLAlchemyError):
        return StoreError("the database reported an error")
    return None


class _Translating:
    """``translate_errors``' context: a class, since it wraps every write and read
    (a generator's context manager makes a generator and two more objects per use)."""

    __slots__ = ()

    def __enter__(self) -> None:
        return None

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> Literal[False]:
        if not isinstance(exc, Exception) or isinstance(exc, StoreError):
            return False  # nothing raised, a store error already, or not an error to map
        public = _translate(exc)
        if public is None:
            return False
        raise public from exc


_TRANSLATING: Final = _Translating()


def translate_errors() -> _Translating:
    """Re-raise database exceptions inside the ``with`` block as ``StoreError``s."""
    return _TRANSLATING


class TablesLocked(StoreUnavailable):
    """A table a move writes was held by another transaction's lock past the readiness
    probe's short wait (``Store.readiness``): moves would wait and fail."""

    def __init__(self) -> None:
        super().__init__(
            "a table a move writes (games, game_actions or level_stats) is locked by another "
            "transaction"
        )


class NotHearing(StoreUnavailable):
    """PostgreSQL: the node's listening connection (``notify.ChangeListener``) has been
    lost for ``notify.DEAF_NOT_READY_S`` and not made again, while its pool may still
    answer: other nodes' moves and sign-outs do not reach its connections."""

    def __init__(self, seconds: float) -> None:
        super().__init__(
            f"not hearing other nodes' changes for {seconds:.0f} s "
            "(the connection that listens for them is lost)"
        )


class WritesFailing(StoreUnavailable):
    """The store's last write failed for the database (``StoreUnavailable``: a full disk,
    a lock held by another process, a privilege taken away) and no write went through
    since, nor the readiness probe's own (``Store.readiness``): moves fail while reads
    may still answer."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"writes are failing ({reason})")


class DatabaseReplaced(StoreUnavailable):
    """The SQLite file the server opened is no longer at its path: deleted, moved or
    replaced (a restore while it runs). The server writes no more (``sqlite_file``), and
    what it wrote before is in the old file (where a ``mv`` put it, or gone with it),
    not in the one at the path."""

    def __init__(self, path: str) -> None:
        self.path = path
        super().__init__(
            f"the database file {path} was removed or replaced while the server runs; "
            "it writes no more: stop it, and start it again on the file wanted there"
        )
