"""``Store``: the one object the rest of the server holds to reach the database.

Every method is a coroutine that opens a connection from the engine's pool,
runs a few statements from the topic modules (``players``, ``games``,
``writes``, ``stats``, ``schema``) and returns frozen records. Reads run in a
short transaction of their own; each write method is one transaction. Errors
leave as ``StoreError``s (``server.store.errors``).

``commit`` goes through the group committer; its batches of plain actions take
``sqlite_writer`` on an SQLite file (one trip to one thread per batch) and
``pg_writer`` on PostgreSQL (one statement, one round trip, on a held
connection); the rest take the general path (``writes`` through SQLAlchemy).
On an SQLite file, a returning player's reads (``sign_in``, ``game_owner``,
``load_game``, ``restore_game``) take ``sqlite_reader``: a plain connection on the
loop's thread; on PostgreSQL, ``pg_reader``: held connections, a statement each.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator, Sequence
from contextlib import asynccontextmanager, nullcontext
from datetime import UTC, datetime, timedelta
from typing import Any, Final, NamedTuple, TypeAlias

from sqlalchemy import event, text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from server.logs import detached
from server.store import deals, games, notify, players, schema, stats, writes
from server.store.committer import CommitStats, GroupCommitter
from server.store.database import (
    BUSY_TIMEOUT_MS,
    async_url,
    create_engine,
    cut_off,
    sqlite_busy_ms,
    writing,
)
from server.store.errors import (
    DatabaseReplaced,
    NotHearing,
    SchemaForeign,
    SchemaNewer,
    SchemaOutdated,
    StoreAccessRefused,
    StoreError,
    StoreUnavailable,
    TablesLocked,
    WritesFailing,
    translate_errors,
)
from server.store.notify import (
    ChangeListener,
    OnChange,
    OnReset,
    OnRevoked,
    new_node_id,
    notify_changes,
    notify_revoked,
)
from server.store.pg_reader import READS_HELD, PostgresReader
from server.store.pg_writer import PostgresWriter
from server.store.records import (
    ActionRecord,
    Committed,
    GameRecord,
    GameStatus,
    GameWrite,
    LevelStats,
    LoggedAction,
    NewGame,
    PauseState,
    Player,
    SchemaStatus,
    SignIn,
    StoredSnapshot,
)
from server.store.sqlite_file import PinnedFile
from server.store.sqlite_reader import SqliteReader
from server.store.sqlite_writer import SqliteWriter

__all__ = ["Clock", "Store"]

Clock: TypeAlias = Callable[[], datetime]
_TOUCH: Final = text("UPDATE alembic_version SET version_num = version_num")
# PostgreSQL checks a statement's rights, and a read-only transaction, before it touches
# a row: an update of no row of games tells whether moves can be stored. A serving role
# need not have the right to change alembic_version (the schema's owner migrates).
_TOUCH_GAMES: Final = text("UPDATE games SET version = version WHERE false")
# Readiness on PostgreSQL: the locks a move takes, each waited for a short while only.
_TOUCH_ACTIONS: Final = text("INSERT INTO game_actions SELECT * FROM game_actions WHERE false")
_TOUCH_STATS: Final = text("UPDATE level_stats SET games = games WHERE false")
PROBE_LOCK_MS: Final = 500
WRITE_PROBE_S: Final = 0.1  # readiness waits this long for its write, after writes failed
LOCK_NOT_AVAILABLE: Final = "55P03"  # the SQLSTATE of a lock_timeout
_PROBE_LOCK_TIMEOUT: Final = text(f"SET LOCAL lock_timeout = '{PROBE_LOCK_MS}ms'")


TIME_SAVES_PER_TRANSACTION = 256
TOKENS_PER_READ = 1000  # token hashes one read of ``known_tokens`` checks at most
READS_AT_ONCE = 10
"""Reads holding a pooled connection at once at most: the pool has 15 (SQLAlchemy's
5 and 10 more; on PostgreSQL also the ``READS_HELD`` its kept reads hold), and
transactions and the writers need theirs (``_ReadGate``)."""


class _ReadGate:
    """Turns for the pool's connections, first come first served, for reads.

    Why: after a restart thousands of players read at once. Waiting in the pool
    itself, a read gives up after the database timeout and is answered
    ``unavailable``; the client asks again, and the server spends its time on
    requests that fail (10,000 players on PostgreSQL: 160,181 refusals in 200 s,
    21 of them playing). Here a read waits for its turn as long as the reads
    before it go through, and then takes a connection the pool has free.

    While the database is down that queue would only grow: after a read failed
    with ``StoreUnavailable`` one read at a time tries the database (the probe)
    and every other read is answered ``unavailable`` at once, until one
    succeeds. An outage is still answered within the timeout.
    """

    def __init__(self, slots: int) -> None:
        self._slots = asyncio.Semaphore(slots)
        self._down = False  # the last read found the database unavailable
        self._probing = False

    @asynccontextmanager
    async def turn(self, *, pooled: bool = True) -> AsyncIterator[None]:
        """A read's turn; ``pooled=False`` for a read that takes no connection from the
        pool (``pg_reader``'s, which wait for their own connections), with no slot."""
        if self._down and self._probing:
            raise StoreUnavailable("the database is not answering; retry shortly")
        async with self._slots if pooled else nullcontext():
            if self._down and self._probing:  # it went down while this read waited
                raise StoreUnavailable("the database is not answering; retry shortly")
            probe = self._down
            self._probing = self._probing or probe
            try:
                yield
            except StoreUnavailable:
                self._down = True
                raise
            else:
                self._down = False
            finally:
                if probe:
                    self._probing = False


class _TimeSave(NamedTuple):
    game_id: int
    version: int
    time_ms: int
    score: int


def _utc_now() -> datetime:
    return datetime.now(UTC)


log = logging.getLogger(__name__)

FILE_WATCH_S: Final = 1.0
"""How often a store on SQLite looks whether its file left its path (``sqlite_file``)."""


def _refuse_moved_file(engine: AsyncEngine, pinned: PinnedFile) -> None:
    """No connection of ``engine`` opens the path once the file served left it
    (``sqlite_file``): refused before it is made (SQLite would create a file where none
    is), and closed if the file changed while it was made."""

    def before(*_args: Any) -> None:
        pinned.check()

    def after(dbapi_connection: Any, _record: Any) -> None:
        pinned.opened(dbapi_connection)

    event.listen(engine.sync_engine, "do_connect", before)
    event.listen(engine.sync_engine, "connect", after)


class Store:
    """Persistence for players, games, action logs and statistics (package docstring)."""

    def __init__(
        self,
        engine: AsyncEngine,
        *,
        max_batch: int = 64,
        clock: Clock = _utc_now,
        busy_ms: int = BUSY_TIMEOUT_MS,
    ) -> None:
        self._engine = engine
        self._writing = writing(engine)  # on SQLite, transactions that take the lock first
        self.schema_before: SchemaStatus | None = None  # what upgrade() found, once it ran
        self._clock = clock
        self._sqlite_writer: SqliteWriter | None = None
        self._sqlite_reader: SqliteReader | None = None
        path = engine.url.database
        self._sqlite_path: str | None = None
        self._pinned: PinnedFile | None = None  # the file served (sqlite_file)
        self._gone_said = False  # its leaving logged (until it is back)
        self._releasing: asyncio.Task[bool] | None = None  # emptying its log
        self._file_watch: asyncio.Task[None] | None = None  # _watch_file
        if engine.dialect.name == "sqlite" and path and path != ":memory:":
            self._sqlite_path = path
            self._pinned = pinned = PinnedFile(path)
            self._sqlite_writer = SqliteWriter(path, engine.dialect, busy_ms, pinned)
            self._sqlite_reader = SqliteReader(path, engine.dialect, pinned)
            _refuse_moved_file(engine, pinned)
        self.node_id = new_node_id()
        self._pg_writer: PostgresWriter | None = None
        self._pg_reader: PostgresReader | None = None
        if engine.dialect.name == "postgresql":
            self._pg_writer = PostgresWriter(engine, self.node_id)
            self._pg_reader = PostgresReader(engine)
        self._listener: ChangeListener | None = None
        # Games whose last commit from here failed without a definite answer: it may land
        # later, and this node then hears its own notification for them (``notify``).
        self._in_doubt: set[int] = set()
        # Revocations likewise (``_doubt``): a token's hash, or a player's id for all theirs.
        self._revoking: set[int | str] = set()
        self._committer: GroupCommitter[GameWrite, Committed] = GroupCommitter(
            self._write_batch, max_batch=max_batch
        )
        self._reads = _ReadGate(READS_AT_ONCE)
        # SQLite has one writer at a time: the general path's transactions (``_transaction``)
        # wait for it here, in order, rather than in SQLite's busy handler, which polls
        # the lock with growing sleeps, serves no one first, and gave up after the
        # database timeout when many waited on a busy loop (``unavailable``). Each holds
        # the lock across several trips to aiosqlite's thread. The hot path's writer
        # (``sqlite_writer``) and other processes still meet this one at SQLite's lock.
        self._write_turn: asyncio.Lock | None = None
        # Why the last write failed for the database, until one goes through (``readiness``).
        self.write_trouble: str | None = None
        self._write_probe: asyncio.Future[None] | None = None
        if engine.dialect.name == "sqlite":
            self._write_turn = asyncio.Lock()
        self._turns_failed = 0  # write transactions that failed for the database, so far
        self._time_saves: GroupCommitter[_TimeSave, bool] = GroupCommitter(
            self._save_play_times, max_batch=TIME_SAVES_PER_TRANSACTION
        )

    @classmethod
    def connect(
        cls,
        url: str,
        *,
        max_batch: int = 64,
        clock: Clock = _utc_now,
        timeout: float | None = None,
        connect_timeout: float | None = None,
    ) -> Store:
        """A store on ``url`` (``sqlite+aiosqlite:///path`` or ``postgresql+asyncpg://...``).

        Connections open lazily: a wrong URL shows up at the first call as
        ``StoreUnavailable``; call ``check_schema()`` at start-up to find out early.
        ``timeout`` bounds each database step in seconds, ``connect_timeout`` only the
        opening of a connection and the wait for a lock (``database.create_engine``).
        """
        options: dict[str, Any] = {}
        if async_url(url).get_backend_name() == "postgresql":
            # The kept reads' connections come on top of SQLAlchemy's 5 and 10 more.
            options["max_overflow"] = 10 + READS_HELD
        engine = create_engine(url, timeout=timeout, connect_timeout=connect_timeout, **options)
        busy_ms = sqlite_busy_ms(timeout if timeout is not None else connect_timeout)
        return cls(engine, max_batch=max_batch, clock=clock, busy_ms=busy_ms)

    @property
    def reads_batched(self) -> bool:
        """Whether a returning player's reads wait on the network, sent together with
        the others waiting (PostgreSQL's ``pg_reader``), rather than running at once on
        the event loop's thread (SQLite's ``sqlite_reader``)."""
        return self._pg_reader is not None

    @property
    def backend(self) -> str:
        """``"sqlite"`` or ``"postgresql"``."""
        return self._engine.dialect.name

    @property
    def commit_stats(self) -> CommitStats:
        """Transactions and batch sizes of ``commit()`` so far (for metrics and tests)."""
        return self._committer.stats

    def observe_commits(
        self, on_batch: Callable[[float], None], on_commit: Callable[[float], None]
    ) -> None:
        """Report each group-commit batch size and each commit's latency in seconds."""
        self._committer.observe(on_batch, on_commit)

    @property
    def shared(self) -> bool:
        """True when other nodes may write to the same database (PostgreSQL)."""
        return self.backend == "postgresql"

    async def close(self, within: float | None = None) -> None:
        """Stop listening, commit writes already submitted, then close every connection.

        ``within`` (seconds; None: no limit) bounds the wait for those writes, and for the
        reads under way: past it, every connection is cut off, the writes not committed
        are given up and the reads cancelled."""
        loop = asyncio.get_running_loop()
        end = loop.time() + (within or 0.0)
        if self._listener is not None:
            await self._listener.close()
            self._listener = None
        idle = self._committer.idle and self._time_saves.idle
        writes = asyncio.gather(self._committer.close(), self._time_saves.close())
        try:
            await asyncio.wait_for(asyncio.shield(writes), None if idle else within)
        except TimeoutError:
            log.warning("shutdown: the writes not committed in time were given up")
            cut_off(self._engine)
            writes.cancel()
            await asyncio.gather(writes, return_exceptions=True)
        if self._write_probe is not None:
            self._write_probe.cancel()
            await asyncio.gather(self._write_probe, return_exceptions=True)
        if self._file_watch is not None:
            self._file_watch.cancel()
            await asyncio.gather(self._file_watch, return_exceptions=True)
        if self._pinned is not None and self._pinned.moved:
            # Again, whatever was done before: a write past its check when the file
            # left may have added to the log since, and nothing is written now.
            self._file_gone(DatabaseReplaced(self._pinned.path), release=False)
            if self._releasing is not None:
                await asyncio.gather(self._releasing, return_exceptions=True)
            await self._release_log()
        if self._sqlite_writer is not None:
            await self._sqlite_writer.close()
        if self._sqlite_reader is not None:
            self._sqlite_reader.close()
        if self._pg_writer is not None:
            with translate_errors():
                await self._pg_writer.close()
        if self._pg_reader is not None:
            with translate_errors():
                await self._pg_reader.close(None if within is None else max(0.0, end - loop.time()))
        cut_off(self._engine)
        await self._engine.dispose()

    async def listen(
        self, on_change: OnChange, on_reset: OnReset, on_revoked: OnRevoked | None = None
    ) -> None:
        """Hear other nodes' commits (``server.store.notify``); nothing to hear on SQLite.

        ``on_change(game_ids)`` runs for every batch another node commits, and for a
        commit (or pause, or resume) of this node's that was answered ``StoreUnavailable``
        but that landed after all; ``on_revoked(player_id, token_hash)`` for every
        revocation of tokens another node commits (``token_hash`` None: every token of
        the player), and for one of this node's answered so that landed after all;
        ``on_reset()`` after the listening connection was lost and regained.
        """
        if not self.shared or self._listener is not None:
            return
        self._listener = ChangeListener(
            self._engine.url,
            self.node_id,
            on_change,
            on_reset,
            self._in_doubt,
            on_revoked,
            self._revoking,
        )
        await self._listener.start()

    # -- schema ---------------------------------------------------------------

    async def schema_status(self) -> SchemaStatus:
        """The schema's status (``/readyz``); ``DatabaseReplaced`` if the SQLite file
        ``check_writable`` found is no longer at its path, ``SchemaNewer`` if a newer
        server moved the schema on (it is not behind: ``--migrate`` would not help)."""
        self._check_file()
        with translate_errors():
            state = await schema.read_schema_state(self._engine)
        if state.status is SchemaStatus.OUTDATED and state.revisions:
            newer = schema.unknown_revision(state)  # not behind: no --migrate of ours helps
            if newer is not None:
                raise SchemaNewer(newer)
        return state.status

    async def schema_revision(self) -> str | None:
        """The revision the schema is stamped with (None: none, or more than one)."""
        with translate_errors():
            state = await schema.read_schema_state(self._engine)
        return state.revisions[0] if len(state.revisions) == 1 else None

    def _check_file(self) -> None:
        """Raise ``DatabaseReplaced`` once the SQLite file served is no longer at its path
        (``sqlite_file``): before every write, so that none is made."""
        if self._pinned is None:
            return
        try:
            self._pinned.check()
        except DatabaseReplaced as exc:
            self._file_gone(exc)
            raise
        self._gone_said = False  # put back (renamed back): it serves again

    def _file_gone(self, exc: DatabaseReplaced, *, release: bool = True) -> None:
        """The file left its path: writes fail from now on; said once, and the log at the
        path emptied into the old file (in the background, as soon as it can be)."""
        self._wrote(exc)
        if not self._gone_said:
            self._gone_said = True
            log.error("%s", exc)
            if release and (self._releasing is None or self._releasing.done()):
                self._releasing = asyncio.get_running_loop().create_task(self._release_log())

    async def _watch_file(self) -> None:
        """Once a second while serving, whether the SQLite file left its path: a server
        that writes nothing would not know, and a kill -9 would leave the log at the
        path to the file there next."""
        assert self._pinned is not None
        while True:
            await asyncio.sleep(FILE_WATCH_S)
            if self._pinned.moved:
                self._file_gone(DatabaseReplaced(self._pinned.path))

    async def _release_log(self) -> bool:
        """Copy the write-ahead log at the path into the file this store opened (moved
        or removed: the connections made before hold it) and empty it, so that the file
        now at the path never reads it as its own (``sqlite_file``): on the writer's own
        connection, or a pooled one (none is made now). Whether it was done."""
        done = self._sqlite_writer is not None and self._sqlite_writer.release_log()
        if not done:
            try:
                with translate_errors():
                    async with self._engine.connect() as conn:
                        result = await conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
                        busy = result.scalar()
                done = busy == 0
            except StoreError:
                done = False
        if done:
            log.warning(
                "the write-ahead log at %s-wal is emptied into the file the server opened",
                self._sqlite_path,
            )
        else:
            log.error(
                "could not empty %s-wal into the file the server opened: remove it, and %s-shm, "
                "before starting a server on the file now at %s",
                self._sqlite_path,
                self._sqlite_path,
                self._sqlite_path,
            )
        return done

    async def check_schema(self) -> None:
        """Raise ``SchemaOutdated`` (saying how to upgrade) unless the schema is current;
        ``SchemaNewer`` for a revision this code does not know, which no upgrade reaches."""
        with translate_errors():
            state = await schema.read_schema_state(self._engine)
        if state.status is not SchemaStatus.CURRENT:
            foreign = state.foreign()
            if foreign is not None:
                raise SchemaForeign(foreign)
            newer = schema.unknown_revision(state)
            if newer is not None:
                raise SchemaNewer(newer)
            raise SchemaOutdated(state.describe())

    async def upgrade(self, begun: Callable[[], None] | None = None) -> SchemaStatus:
        """Migrate the database to this code's head revision (``alembic upgrade head``);
        ``SchemaForeign`` for another program's database (``schema.upgrade``, which calls
        ``begun`` once its transaction is open). The schema's status before, also kept
        as ``schema_before``."""
        with translate_errors():
            self.schema_before = await schema.upgrade(self._writing, begun)
        return self.schema_before

    async def migrate_to(
        self, revision: str, begun: Callable[[], None] | None = None
    ) -> str | None:
        """Take the schema to ``revision``, up or down (``schema.migrate_to``, which calls
        ``begun`` once its transaction is open); the revision it was at (None: no schema)."""
        with translate_errors():
            return await schema.migrate_to(self._writing, revision, begun)

    async def readiness(self) -> SchemaStatus:
        """``schema_status``; on PostgreSQL, once it is current, also whether a move can
        be stored now: the locks a move's write takes (an update of no row of ``games``
        and of ``level_stats``, an insert of none into ``game_actions``, rolled back),
        each waited for at most ``PROBE_LOCK_MS``. A table locked by another (``LOCK
        TABLE``, a long migration) makes every move wait and fail while reads still
        answer: ``TablesLocked`` then, so a load balancer sends players elsewhere
        (``/readyz``). On either store, after a write failed for the database, also a
        write of its own (``_probe_write``): ``WritesFailing`` until one goes through.
        SQLite's reads answer with its disk full or its lock held by another process.
        On PostgreSQL, last, ``NotHearing`` once the listening connection has been lost
        for ``notify.DEAF_NOT_READY_S``."""
        status = await self.schema_status()
        if status is not SchemaStatus.CURRENT:
            return status
        if self._sqlite_path is None:
            await self._probe_locks()
        await self._probe_write()
        if self._listener is not None:
            deaf = self._listener.deaf_for()
            if deaf >= notify.DEAF_NOT_READY_S:
                raise NotHearing(deaf)
        return status

    async def _probe_write(self) -> None:
        """After a write failed (``write_trouble``): a committed write of nothing, one at
        a time (the schema's version row set to itself on SQLite, which writes a page
        to the WAL; on PostgreSQL an update of no row of ``games``), and
        ``WritesFailing`` unless it, or a move, went through within ``WRITE_PROBE_S``
        (a write takes milliseconds once nothing holds it back). The probe waits no
        longer: on SQLite the write may wait the whole database timeout for the write
        lock; it goes on in the background, and the trouble is gone once it goes
        through."""
        if self.write_trouble is None:
            return
        if self._write_probe is None or self._write_probe.done():
            self._write_probe = detached(self._write_nothing())
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(self._write_probe), WRITE_PROBE_S)
        if self.write_trouble is not None:
            raise WritesFailing(self.write_trouble)

    async def _write_nothing(self) -> None:
        touch = _TOUCH if self._sqlite_path is not None else _TOUCH_GAMES
        with contextlib.suppress(StoreUnavailable):  # kept in write_trouble
            async with self._transaction() as conn:
                await conn.execute(touch)

    async def _probe_locks(self) -> None:
        """PostgreSQL: the locks a move's write takes, each waited for at most
        ``PROBE_LOCK_MS`` (``readiness``)."""
        touches = (_TOUCH_GAMES, _TOUCH_ACTIONS, _TOUCH_STATS)
        with translate_errors():
            async with self._engine.connect() as conn:
                transaction = await conn.begin()
                try:
                    await conn.execute(_PROBE_LOCK_TIMEOUT)
                    for statement in touches:
                        try:
                            await conn.execute(statement)
                        except DBAPIError as exc:
                            if getattr(exc.orig, "sqlstate", None) == LOCK_NOT_AVAILABLE:
                                raise TablesLocked() from None
                            raise
                finally:
                    await transaction.rollback()

    async def check_writable(self) -> None:
        """Raise unless a write can be made: a database file the server may read but not
        write (its mode, a read-only mount) would otherwise answer every move
        ``unavailable``. Writes nothing: one guarded update, rolled back. On SQLite it
        updates the one row of ``alembic_version`` (an update of no row takes no write
        lock); on PostgreSQL no row of ``games``, so a role that may store moves but not
        change the schema's version serves. On PostgreSQL first every privilege the
        server uses, on every table (``schema.missing_privilege``): a role granted its
        rights before an upgrade lacks them on the tables the upgrade made, and would
        answer every request that uses one ``unavailable``; ``StoreAccessRefused``
        names the first one missing."""
        touch = _TOUCH if self._sqlite_path is not None else _TOUCH_GAMES
        missing = None
        with translate_errors():
            async with self._writing.connect() as conn:
                transaction = await conn.begin()
                try:
                    if self._sqlite_path is None:
                        missing = await conn.run_sync(schema.missing_privilege)
                    if missing is None:
                        await conn.execute(touch)
                finally:
                    await transaction.rollback()
        if missing is not None:
            raise StoreAccessRefused(
                f"permission denied: the database role lacks {missing} (grant the serving role "
                "SELECT, INSERT, UPDATE and DELETE on all tables and USAGE on all sequences "
                "again after every schema upgrade)"
            )
        if self._pinned is not None and self._file_watch is None:  # serving now
            self._check_file()  # replaced while the server started: refused
            self._file_watch = asyncio.get_running_loop().create_task(self._watch_file())

    # -- players --------------------------------------------------------------

    async def create_player(self, name: str) -> tuple[Player, str]:
        """A new player and their first token (returned once, stored only hashed).

        ``InvalidName`` (a ValueError) for a bad name, ``NameTaken`` for one in
        use ignoring case.
        """
        cleaned = players.check_name(name)
        now = self._clock()
        async with self._transaction() as conn:
            player = await players.insert_player(conn, cleaned, now)
            token = await players.insert_token(conn, player.id, now)
        return player, token

    async def issue_token(self, player_id: int) -> str:
        """Another token for an existing player (a second device); NotFound if none."""
        async with self._transaction() as conn:
            await players.lock_tokens(conn, player_id)
            return await players.insert_token(conn, player_id, self._clock())

    async def revoke_token(self, token: str) -> bool:
        """Revoke ``token``; False if it was not known (or revoked already). Other nodes
        hear of it with the commit (``notify.SIGN_OUTS``), and sign out their connections
        on it."""
        with self._doubt(self._revoking, players.hash_token(token)):
            return await self._revoke_token(token)

    async def _revoke_token(self, token: str) -> bool:
        async with self._transaction() as conn:
            player_id = await players.delete_token(conn, token)
            if player_id is not None and self.shared:
                await notify_revoked(conn, self.node_id, player_id, players.hash_token(token))
            return player_id is not None

    async def rotate_token(
        self, token: str, new: str | None = None, max_age: timedelta | None = None
    ) -> str | None:
        """Replace ``token`` by a new one for the same player, ``new`` when given (a
        client's own; TokenTaken, and nothing changed, if the store has it already); None
        if ``token`` was not known, or (with ``max_age``) has expired: an expired token
        is never made a fresh one. Other nodes hear that ``token`` was revoked, as from
        ``revoke_token``."""
        with self._doubt(self._revoking, players.hash_token(token)):
            return await self._rotate_token(token, new, max_age)

    async def _rotate_token(
        self, token: str, new: str | None, max_age: timedelta | None
    ) -> str | None:
        issued_after = None if max_age is None else self._clock() - max_age
        async with self._transaction() as conn:
            player = await players.fetch_player_by_token(conn, token, issued_after)
            if player is None:
                return None
            await players.lock_tokens(conn, player.id)  # then the token is read again:
            if await players.delete_token(conn, token) is None:  # revoked meanwhile
                return None
            if self.shared:
                await notify_revoked(conn, self.node_id, player.id, players.hash_token(token))
            return await players.insert_token(conn, player.id, self._clock(), new)

    async def revoke_tokens(self, player_id: int) -> int:
        """Revoke every token of ``player_id`` (sign out everywhere); how many there were.
        Other nodes hear of it with the commit, and sign out the player's connections."""
        with self._doubt(self._revoking, player_id):
            return await self._revoke_tokens(player_id)

    async def _revoke_tokens(self, player_id: int) -> int:
        async with self._transaction() as conn:
            await players.lock_tokens(conn, player_id)  # after a rotation under way, if any
            revoked = await players.delete_tokens(conn, player_id)
            if revoked and self.shared:
                await notify_revoked(conn, self.node_id, player_id)
            return revoked

    async def known_tokens(self, token_hashes: Iterable[str]) -> set[str]:
        """Which of ``token_hashes`` (``players.hash_token``) are of tokens not revoked:
        after notifications of revocations may have been lost (``listen``'s ``on_reset``).
        One read of ``TOKENS_PER_READ`` hashes at most, so many connections take a few."""
        wanted = sorted(set(token_hashes))
        known: set[str] = set()
        for first in range(0, len(wanted), TOKENS_PER_READ):
            async with self._reading() as conn:
                chunk = wanted[first : first + TOKENS_PER_READ]
                known |= await players.fetch_known_hashes(conn, chunk)
        return known

    async def player_for_token(self, token: str, max_age: timedelta | None = None) -> Player | None:
        """The token's player; None if unknown, revoked, or (with ``max_age``) expired."""
        issued_after = None if max_age is None else self._clock() - max_age
        async with self._reading() as conn:
            return await players.fetch_player_by_token(conn, token, issued_after)

    async def sign_in(self, token: str, max_age: timedelta | None = None) -> SignIn | None:
        """``player_for_token``, that player's ``unfinished_games`` and when the token was
        issued, in one read.

        (One connection from the pool instead of two: a server restarting under
        thousands of returning players spends most of its time on such reads.)
        """
        issued_after = None if max_age is None else self._clock() - max_age
        if self._sqlite_reader is not None:
            return self._sqlite_reader.sign_in(players.hash_token(token), issued_after)
        if self._pg_reader is not None:
            async with self._turn(pooled=False):
                return await self._pg_reader.sign_in(players.hash_token(token), issued_after)
        async with self._reading() as conn:
            found = await players.fetch_token(conn, token, issued_after)
            if found is None:
                return None
            player, issued = found
            unfinished = await games.fetch_games(conn, player.id, GameStatus.ACTIVE, None)
            return SignIn(player, unfinished, issued)

    def now(self) -> datetime:
        """The time by the store's clock: what it stamps rows with, and counts a token's
        age by."""
        return self._clock()

    async def get_player(self, player_id: int) -> Player | None:
        async with self._reading() as conn:
            return await players.fetch_player(conn, player_id)

    # -- games ----------------------------------------------------------------

    async def create_game(
        self, player_id: int, level: str, deal: int, *, winnable: bool = False, chosen: bool = False
    ) -> GameRecord:
        """Start a game; ``GameInProgress`` if the player has an unfinished one.

        To abandon that one and start this one atomically (R17), commit a
        ``GameWrite`` with ``ending=Ending.ABANDONED, then_start=NewGame(...)``.
        """
        new_game = NewGame(level, deal, winnable, chosen)
        async with self._transaction() as conn:
            return await games.insert_game(conn, player_id, new_game, self._clock())

    async def game_owner(self, game_id: int) -> int | None:
        """The id of the player whose game it is; None if there is no such game."""
        if self._sqlite_reader is not None:
            return self._sqlite_reader.game_owner(game_id)
        if self._pg_reader is not None:
            async with self._turn(pooled=False):
                return await self._pg_reader.game_owner(game_id)
        async with self._reading() as conn:
            return await games.fetch_owner(conn, game_id)

    async def get_game(self, game_id: int) -> GameRecord | None:
        async with self._reading() as conn:
            return await games.fetch_game(conn, game_id)

    async def list_games(
        self, player_id: int, status: GameStatus | None = None, *, limit: int | None = None
    ) -> list[GameRecord]:
        """The player's games, newest first."""
        wanted = None if status is None else GameStatus(status)
        async with self._reading() as conn:
            return await games.fetch_games(conn, player_id, wanted, limit)

    async def unfinished_games(self, player_id: int) -> list[GameRecord]:
        """The player's active games: at most one (R17), so the list has 0 or 1 items."""
        return await self.list_games(player_id, GameStatus.ACTIVE)

    async def load_actions(self, game_id: int, after_seq: int = 0) -> list[ActionRecord]:
        """The game's log after ``after_seq`` (all of it by default), in order."""
        async with self._reading() as conn:
            return await games.fetch_actions(conn, game_id, after_seq)

    async def load_game(
        self, game_id: int, after_seq: int = 0
    ) -> tuple[GameRecord | None, list[LoggedAction]]:
        """``get_game`` and the log after ``after_seq`` in one read: what a rebuild
        replays of each action (``LoggedAction``, not the whole ``ActionRecord``)."""
        if self._sqlite_reader is not None:
            return self._sqlite_reader.load_game(game_id, after_seq)
        if self._pg_reader is not None:
            async with self._turn(pooled=False):
                return await self._pg_reader.load_game(game_id, after_seq)
        async with self._reading() as conn:
            record = await games.fetch_game(conn, game_id)
            if record is None:
                return None, []
            return record, await games.fetch_log(conn, game_id, after_seq)

    async def restore_game(
        self, game_id: int
    ) -> tuple[GameRecord | None, StoredSnapshot | None, list[LoggedAction]]:
        """``load_game`` from the game's snapshot: the game, its snapshot if its row holds
        one (of a version the game has reached) and the log after it; without one, the
        whole log, as ``load_game(game_id)``. One read: the row and the log as they
        stood together. ``(None, None, [])`` for a missing game."""
        if self._sqlite_reader is not None:
            return self._sqlite_reader.restore_game(game_id)
        if self._pg_reader is not None:
            async with self._turn(pooled=False):
                return await self._pg_reader.restore_game(game_id)
        async with self._reading() as conn:
            return await games.fetch_restore(conn, game_id)

    async def save_snapshots(self, snapshots: Sequence[tuple[int, int, bytes]]) -> int:
        """Keep each (game id, version, data) as its game's snapshot, in one transaction,
        where it is still true and newer (``writes.save_snapshots``): the game is active
        and at that version or later, and holds no snapshot as recent. How many were kept.

        Not announced to other nodes: a snapshot changes what a rebuild reads, not the
        game. ``ValueError`` for a negative version.
        """
        for _game_id, v, _data in snapshots:
            if v < 0:
                raise ValueError(f"a snapshot of negative version {v}")
        if not snapshots:
            return 0
        async with self._transaction() as conn:
            return await writes.save_snapshots(conn, snapshots)

    async def find_retry(self, game_id: int, version: int, request_id: str) -> ActionRecord | None:
        """The action a retried request already stored, if any.

        A client that saw version ``version`` and sends again a request whose
        first attempt was applied finds the game at a later version: if the
        action at ``version + 1`` carries the same request id, the request was
        applied and the service answers with its result instead of ``stale``.
        """
        async with self._reading() as conn:
            action = await games.fetch_action(conn, game_id, version + 1)
        return action if action is not None and action.request_id == request_id else None

    async def save_play_time(self, game_id: int, version: int, time_ms: int, score: int) -> bool:
        """Bank an active game's play time between actions (``writes.save_play_times``).

        False when the game moved on, ended, is paused, or already holds as much time.
        Saves made at the same time share a transaction (a committer of their own,
        like actions): when thousands of connections close at once, or at shutdown,
        each would otherwise wait for a connection of the pool, past the timeout.
        """
        return await self._time_saves.submit(_TimeSave(game_id, version, time_ms, score))

    async def _save_play_times(self, batch: Sequence[_TimeSave]) -> list[bool]:
        async with self._transaction() as conn:
            saved = await writes.save_play_times(conn, batch, self._clock())
            changed = [s.game_id for s, done in zip(batch, saved, strict=True) if done]
            if changed and self.shared:
                await notify_changes(conn, self.node_id, changed)
            return saved

    async def bank_play_times(
        self, saves: Sequence[tuple[int, int, int, int]]
    ) -> dict[int, tuple[int, datetime]]:
        """Bank the play time of games whose clocks run on this node, as ``save_play_time``
        does (each save (game id, version, time_ms, score)), telling no other node; and
        the play time each holds now and since when, by game id, of those still active at
        that version and not paused: more than this node's clock when another node's ran
        longer (``writes.bank_play_times``). A transaction per
        ``TIME_SAVES_PER_TRANSACTION``."""
        held: dict[int, tuple[int, datetime]] = {}
        for first in range(0, len(saves), TIME_SAVES_PER_TRANSACTION):
            async with self._transaction() as conn:
                chunk = saves[first : first + TIME_SAVES_PER_TRANSACTION]
                held |= await writes.bank_play_times(conn, chunk, self._clock())
        return held

    async def set_paused(
        self, game_id: int, paused: bool, banked: tuple[int, int, int] | None = None
    ) -> PauseState | None:
        """Record that the player paused (or resumed) an active game: whether it was
        paused already, and its play time as stored then; None if it is over.

        ``banked``: (version, time_ms, score), the play time reached, saved in the same
        transaction as ``save_play_time`` would (the clock stops with the pause); not
        if the game was paused already (by another node), whose time stands."""
        with self._doubt(self._in_doubt, game_id):
            return await self._set_paused(game_id, paused, banked)

    async def _set_paused(
        self, game_id: int, paused: bool, banked: tuple[int, int, int] | None
    ) -> PauseState | None:
        async with self._transaction() as conn:
            if paused and banked is not None:  # first: a paused game's time is not saved
                await writes.save_play_times(conn, [(game_id, *banked)], self._clock())
            state = await games.set_paused(conn, game_id, paused, self._clock())
            if state is not None and self.shared:
                await notify_changes(conn, self.node_id, [game_id])
            return state

    # -- deals ----------------------------------------------------------------

    async def easy_deals(self, level: str) -> list[int]:
        """The winnable deals found so far for ``level`` (beyond the engine's shipped list)."""
        async with self._reading() as conn:
            return await deals.fetch_easy_deals(conn, level)

    async def add_easy_deal(self, level: str, deal: int) -> bool:
        """Keep a deal the solver won under ``level``; False if it was known."""
        async with self._transaction() as conn:
            return await deals.insert_easy_deal(conn, level, deal, self._clock())

    async def claim_easy_deal(self, level: str, deal: int) -> bool:
        """Take ``deal`` out of ``level``'s pool for one game: True if this call took it.

        One statement, so of several nodes drawing the same deal at once, one gets it.
        """
        async with self._transaction() as conn:
            return await deals.delete_easy_deal(conn, level, deal)

    async def deal_verdict(self, level: str, deal: int) -> str | None:
        """What the solver proved about ``deal`` under ``level`` (won, lost), if anything."""
        async with self._reading() as conn:
            return await deals.fetch_deal_verdict(conn, level, deal)

    async def add_deal_verdict(self, level: str, deal: int, verdict: str) -> bool:
        """Keep a proof about a deal (``"won"`` or ``"lost"``); False if one was kept."""
        if verdict not in ("won", "lost"):
            raise ValueError(f"only a proof is kept, not {verdict!r}")
        async with self._transaction() as conn:
            return await deals.insert_deal_verdict(conn, level, deal, verdict, self._clock())

    async def played_deals(self, player_id: int, level: str) -> set[int]:
        """The deals of every game the player has started on ``level``."""
        async with self._reading() as conn:
            return await deals.fetch_played_deals(conn, player_id, level)

    # -- writes ---------------------------------------------------------------

    async def commit(self, write: GameWrite) -> Committed:
        """Write ``write`` durably, batched with concurrent commits (``committer``).

        Returns once the transaction holding it committed. Raises
        ``VersionConflict`` (nothing written) if the game moved on or finished,
        ``NotFound``, ``GameInProgress`` (``then_start`` while another game is
        active), or ``StoreUnavailable``.
        """
        if not self.shared:  # every action's path: no context manager where there is no doubt
            return await self._committer.submit(write)
        with self._doubt(self._in_doubt, write.game_id):
            return await self._committer.submit(write)

    @contextlib.contextmanager
    def _doubt(self, doubts: set[Any], key: Any) -> Iterator[None]:
        """Put ``key`` in ``doubts`` when the write made in the block fails without a
        definite answer: a refusal is definite; a timeout, a lost connection or a
        cancelled wait is not, the write may land yet, and ``listen`` then tells this node
        of it too. A write of the same key that is answered ends the doubt. (SQLite: one
        node, no notification to hear.)"""
        if not self.shared:
            yield
            return
        try:
            yield
        except BaseException as exc:
            if isinstance(exc, StoreUnavailable) or not isinstance(exc, StoreError):
                doubts.add(key)
            raise
        doubts.discard(key)

    async def append_actions(self, batch: Sequence[GameWrite]) -> list[Committed]:
        """Write ``batch`` in one transaction, all or nothing, without the committer.

        The first refusal is raised and nothing is stored.
        """
        async with self._transaction() as conn:
            outcomes = await writes.apply_writes(conn, batch, self._clock())
            for outcome in outcomes:
                if isinstance(outcome, StoreError):
                    raise outcome
            await self._announce(conn, outcomes)
        return [outcome for outcome in outcomes if isinstance(outcome, Committed)]

    async def _write_batch(self, batch: Sequence[GameWrite]) -> list[writes.WriteOutcome]:
        """The committer's writer: a batch in one transaction, refusals as values."""
        self._check_file()
        if self._sqlite_writer is not None and self._sqlite_writer.takes(batch):
            return await self._written(self._sqlite_writer.write(batch, self._clock()))
        if self._pg_writer is not None and self._pg_writer.takes(batch):
            return await self._written(self._pg_writer.write(batch, self._clock()))
        async with self._transaction() as conn:
            outcomes = await writes.apply_writes(conn, batch, self._clock())
            await self._announce(conn, outcomes)
            return outcomes

    async def _written(
        self, writing: Awaitable[list[writes.WriteOutcome]]
    ) -> list[writes.WriteOutcome]:
        """A hot path's batch (``sqlite_writer``, ``pg_writer``), its failure kept as
        ``_transaction`` keeps one."""
        try:
            with translate_errors():
                outcomes = await writing
        except StoreUnavailable as exc:
            self._wrote(exc)
            raise
        self._wrote(None)
        return outcomes

    async def _announce(self, conn: AsyncConnection, outcomes: Sequence[object]) -> None:
        """Tell other nodes, with this transaction's commit, which games it changed."""
        changed = [outcome.game.id for outcome in outcomes if isinstance(outcome, Committed)]
        if changed and self.shared:
            await notify_changes(conn, self.node_id, changed)

    # -- statistics -----------------------------------------------------------

    async def level_stats(
        self, player_id: int, level: str | None = None, *, winnable: bool | None = None
    ) -> list[LevelStats]:
        """The player's statistics per level (``stats.fetch_level_stats``).

        For a given ``level`` the random deals' row always comes first; with
        ``winnable`` as well, exactly that one row.
        """
        async with self._reading() as conn:
            return await stats.fetch_level_stats(conn, player_id, level, winnable)

    # -- connections ----------------------------------------------------------

    @asynccontextmanager
    async def _transaction(self) -> AsyncIterator[AsyncConnection]:
        """A connection in a transaction that commits unless the block raises (on SQLite,
        holding the write lock from its start: ``database.writing``; after the store's
        other write transactions before it, ``_write_turn``)."""
        async with self._turn_to_write():
            try:
                self._check_file()
                with translate_errors():
                    async with self._writing.begin() as conn:
                        yield conn
            except StoreUnavailable as exc:
                self._turns_failed += 1
                self._wrote(exc)
                raise
            self._wrote(None)

    @asynccontextmanager
    async def _turn_to_write(self) -> AsyncIterator[None]:
        """The write turn (``_write_turn``). When a write ahead fails for the database
        (SQLite's lock held by another process past the timeout, a full disk) while this
        one waits, this one fails too, at once: each waited its own timeout after the
        one before, and the waits added up (the twelfth of twelve registrations answered
        ``unavailable`` after 55 s; a stop waited 86 s for the queue)."""
        turn = self._write_turn
        if turn is None:
            yield
            return
        failed_before = self._turns_failed
        await turn.acquire()
        try:
            if self._turns_failed != failed_before:
                raise StoreUnavailable("the database is unavailable or busy (a write ahead failed)")
            yield
        finally:
            turn.release()

    def _wrote(self, failure: StoreUnavailable | None) -> None:
        """Keep whether the last write went through (``write_trouble``); the driver's
        own words, where there are some ("database or disk is full")."""
        if failure is None:
            self.write_trouble = None
            return
        orig = getattr(failure.__cause__, "orig", None)
        self.write_trouble = str(orig or failure) or type(orig or failure).__name__

    @asynccontextmanager
    async def _reading(self) -> AsyncIterator[AsyncConnection]:
        """A connection whose transaction is rolled back at the end (reads only),
        taken in turn (``_ReadGate``)."""
        async with self._turn(), self._engine.connect() as conn:
            yield conn

    @asynccontextmanager
    async def _turn(self, *, pooled: bool = True) -> AsyncIterator[None]:
        """A read's turn (``_ReadGate``), its errors translated (``translate_errors``)."""
        async with self._reads.turn(pooled=pooled):
            with translate_errors():
                yield
