"""The composition root: settings, store, solver pool, service, hub, WebSocket server.

``main()`` is the ``scorpion-server`` console script (and ``python -m
server``). Start-up order: settings (``server.config``; bad values end the
process with one line each and exit code 2), logging (``server.logs``), the
store and its schema, waiting up to ``db_wait_s`` for a database that does not
answer yet (retrying with doubling pauses, each attempt logged; exit code 1 if
it never does), its (SQLite is created or upgraded automatically; PostgreSQL must already
be current, else the server refuses to start and names ``scorpion-server
--migrate``), the solver pool, the winnable deal pools of every level
(``server.winnable_pools``: loaded, then grown in the background), the
service and hub, on PostgreSQL the change listener that hears other nodes'
commits (``server.store.notify``), then the listener
(``server.connection.Listener``: subprotocol ``scorpion.v1``, frame limit
MAX_FRAME_BYTES, no compression; the only place that knows ``websockets``),
with plain HTTP beside it (``server.http``) and TLS when a certificate is
set. A heartbeat task measures the event loop's lag for ``server.metrics``
and flushes the log's rate-limit counts.
SIGINT, SIGTERM and SIGHUP (unless it was started with SIGHUP ignored, by
nohup) stop it gracefully: stop accepting, close every connection with 1001,
finish background work, commit what the store has queued, close the database.
One during start-up cancels the start there (``run``).

Before any of that the store proves it can be used: another program's
database is refused (``SchemaForeign``), a file or directory that cannot be
written is said at once (``check_writable``, ``SqliteUnwritable``), and only
what waiting may cure is waited for (``may_pass``).

``ScorpionServer`` is the same thing as an object with ``start()``/``stop()``
and the bound ``port``, for tests and embedding.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import gc
import io
import logging
import os
import signal
import sqlite3
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Final, TypeVar

from alembic.script.revision import ResolutionError
from alembic.util import CommandError
from asyncpg.exceptions import ClientConfigurationError
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError

from engine.solver.easy import WinnableDeals
from protocol import CLOSE_GOING_AWAY
from server import descriptors, logs
from server.config import (
    OutputFailed,
    Settings,
    SettingsError,
    limit_settings,
    load_settings,
    origins,
    published_limits,
    requested_log_format,
    setting_label,
    unknown_variables,
)
from server.connection import ConnectionHandler, ConnectionSettings, Listener, handshakes_in_all
from server.http import HttpRoutes
from server.hub import Hub
from server.limits import Limits
from server.logs import configure_logging
from server.loop import run as run_loop
from server.loop import stop_task
from server.metrics import Metrics
from server.service import SERVER_NAME, GameService, shutdown_deadline
from server.sqlite_lock import SqliteInUse, SqliteLock, SqliteUnwritable, real_path
from server.store import (
    SchemaForeign,
    SchemaNewer,
    SchemaOutdated,
    SchemaStatus,
    Store,
    StoreAccessRefused,
    StoreError,
    StoreUnavailable,
)
from server.store.errors import UPGRADE_HINT
from server.webclient import WEB_DIR, WebClient
from server.winnable_pools import WinnableDealFinder, WinnablePools
from server.workers import SolverPool

__all__ = [
    "ListenError",
    "ScorpionServer",
    "configure_logging",
    "main",
    "migrate",
    "prepare_store",
    "run",
]

log = logging.getLogger("server")

HEARTBEAT_S: Final = 0.5

T = TypeVar("T")


class ListenError(Exception):
    """The port cannot be opened (in use, not permitted, no such interface)."""


FIRST_PAUSE_S: Final = 0.5
LONGEST_PAUSE_S: Final = 8.0


async def prepare_store(
    settings: Settings, *, migrating: bool = False, upgrading: Callable[[], None] | None = None
) -> Store:
    """A store on a current schema: SQLite upgraded in place, PostgreSQL checked.

    A database that does not answer is retried for ``db_wait_s`` seconds
    (pauses doubling from FIRST_PAUSE_S to LONGEST_PAUSE_S, each logged); then
    the last ``StoreUnavailable`` is raised. A failure that waiting cannot cure
    (``may_pass``) is raised at once. ``migrating``: upgrade on PostgreSQL too, with
    no bound on a statement (a migration may take long); the connection is still
    bounded by ``db_timeout_ms``. ``upgrading`` is called once an upgrade's transaction
    is open.
    """
    make_sqlite_directory(settings)
    return await _waiting_for_database(
        settings, lambda: _open_store(settings, migrating, upgrading)
    )


async def _waiting_for_database(settings: Settings, attempt: Callable[[], Awaitable[T]]) -> T:
    """``await attempt()``, made again while it raises a ``StoreUnavailable`` that waiting
    may cure (``may_pass``), for up to ``db_wait_s`` seconds (``prepare_store``)."""
    deadline = time.monotonic() + settings.db_wait_s
    pause = FIRST_PAUSE_S
    while True:
        try:
            return await attempt()
        except StoreUnavailable as exc:
            left = deadline - time.monotonic()
            if left <= 0 or not may_pass(exc):
                raise
            pause = min(pause, left)
            reason = _driver_reason(exc)  # "disk is full" said as such, not only "busy"
            log.warning(
                "the database is not available yet (%s); retrying in %.1f s, %.0f s left",
                f"{exc}: {reason}" if reason else exc,
                pause,
                left,
            )
            await asyncio.sleep(pause)
            pause = min(pause * 2, LONGEST_PAUSE_S)


def make_sqlite_directory(settings: Settings) -> None:
    """Make the SQLite file's directory if missing: the data dir on a first run, or the
    directory of a file ``--database-url`` names (serving and ``--migrate`` alike).
    ``SqliteUnwritable`` when it cannot be made."""
    if settings.is_sqlite:
        database = make_url(settings.store_url).database
        if database:
            directory = Path(database).parent
            try:
                directory.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise SqliteUnwritable(f"cannot make {directory} ({_not_made(exc)})") from None
            try:  # SQLite makes its -wal and -shm files there: say so now, not after retries
                with tempfile.TemporaryFile(dir=directory, prefix=".scorpion-"):
                    pass
            except OSError as exc:
                reason = exc.strerror or exc
                if exc.errno == errno.ENOENT and directory.is_dir():  # /proc, say
                    reason = "it takes no new files"
                raise SqliteUnwritable(f"cannot write in {directory} ({reason})") from None
            real_path(database)  # links in a loop: never openable, so not waited for


def _not_made(exc: OSError) -> str:
    """Why ``mkdir`` failed: "File exists" said of a link that leads nowhere (a volume
    not mounted yet) or of links in a loop, the path it could not make named then."""
    where = exc.filename
    if exc.errno == errno.ELOOP:
        return f"{where}: its symbolic links form a loop"
    if exc.errno == errno.EEXIST and where is not None and os.path.islink(where):
        try:
            os.stat(where)
        except OSError as found:
            if found.errno == errno.ELOOP:
                return f"{where}: its symbolic links form a loop"
            target = os.path.join(os.path.dirname(where), os.readlink(where))
            return f"{where} is a symbolic link to {target}, which is not there"
    return str(exc.strerror or exc)


_PASSING_SQLITE_ERRORS: Final = (
    "SQLITE_BUSY",  # another process holds the write lock (a migration, a backup)
    "SQLITE_LOCKED",
    "SQLITE_CANTOPEN",  # the file cannot be opened yet (a volume not mounted yet)
    "SQLITE_IOERR",
    "SQLITE_FULL",
    "SQLITE_PROTOCOL",
)


def may_pass(exc: BaseException) -> bool:
    """Whether waiting may cure ``exc`` (a ``StoreUnavailable`` at start-up).

    PostgreSQL's are waited for (a server starting, a failover), but for the client's
    own configuration (``sslmode=verify-full`` with no root certificate to verify
    with) and a server that refuses the TLS the URL requires: neither changes by
    waiting. SQLite's only when the file is busy or cannot be opened or read for
    now: one that is read-only, or whose schema cannot be made, stays so. What does
    not pass is said at once rather than after ``--db-wait-s`` of retries; nor does
    access refused (``StoreAccessRefused``: no such database, a role refused or
    lacking a grant), which its operator must grant.
    """
    if isinstance(exc, StoreAccessRefused):
        return False
    cause = exc.__cause__
    while cause is not None:
        orig = getattr(cause, "orig", None)
        if isinstance(orig, sqlite3.Error):
            name = str(getattr(orig, "sqlite_errorname", ""))
            return name.startswith(_PASSING_SQLITE_ERRORS)
        if isinstance(cause, ClientConfigurationError) or isinstance(
            orig, ClientConfigurationError
        ):
            return False
        if isinstance(cause, ConnectionError) and "rejected SSL upgrade" in str(cause):
            return False  # asyncpg's words for a server without TLS, asked for it
        cause = cause.__cause__
    return True


async def _open_store(
    settings: Settings, migrating: bool = False, upgrading: Callable[[], None] | None = None
) -> Store:
    timeout = settings.db_timeout_ms / 1000
    if migrating:
        store = Store.connect(settings.store_url, connect_timeout=timeout)
    else:
        store = Store.connect(settings.store_url, max_batch=settings.commit_batch, timeout=timeout)
    try:
        if settings.is_sqlite or migrating:
            before = await store.upgrade(upgrading)
            if not migrating and before is not SchemaStatus.CURRENT:  # --migrate says so itself
                made = "created" if before is SchemaStatus.EMPTY else "upgraded to this version"
                log.info("database schema %s", made)
        else:
            await store.check_schema()
        await store.check_writable()
    except BaseException:
        await store.close()
        raise
    return store


class ScorpionServer:
    """One running server: ``await start()``, then ``port``, then ``await stop()``."""

    def __init__(
        self,
        settings: Settings,
        *,
        easy_deals: WinnableDeals | None = None,
        pools: WinnablePools | None = None,
    ) -> None:
        self.settings = settings
        self.easy_deals = easy_deals
        self.pools = pools
        self.hub = Hub()
        self.store: Store | None = None
        self.solver: SolverPool | None = None
        self.service: GameService | None = None
        self.finder: WinnableDealFinder | None = None
        self.metrics = Metrics()
        self.handler: ConnectionHandler | None = None
        self._listener: Listener | None = None
        self._sqlite_lock: SqliteLock | None = None
        self._heartbeat: asyncio.Task[None] | None = None
        self._descriptors = descriptors.Watch()
        self._exception_handler: descriptors.ExceptionHandler | None = None
        self._handler_before: descriptors.ExceptionHandler | None = None
        self._served = False  # the listener opened: "stopped" means something then

    @property
    def port(self) -> int:
        assert self._listener is not None, "start() first"
        return self._listener.port

    async def start(self) -> None:
        settings = self.settings
        if settings.is_sqlite:
            # Before anything else: one server per file. Its directory first, made as
            # the data dir is named (a link to a volume not mounted yet is refused
            # there): the lock resolves links, and would make the volume's path.
            make_sqlite_directory(settings)
            self._sqlite_lock = SqliteLock(settings.store_url)
            self._sqlite_lock.acquire()
        try:
            await self._start(settings)
        except BaseException:
            if self._sqlite_lock is not None:
                self._sqlite_lock.release()
            raise

    async def _start(self, settings: Settings) -> None:
        self.store = await prepare_store(settings)
        metrics = self.metrics
        self.store.observe_commits(metrics.batch_size.observe, metrics.commit_seconds.observe)
        self.solver = SolverPool(settings.workers, settings.hint_budget_ms, settings.lost_budget_ms)
        self.solver.on_run = lambda kind, seconds: metrics.solver_seconds.labels(kind).observe(
            seconds
        )
        pools = self.pools if self.pools is not None else WinnablePools(self.easy_deals)
        targets = dict.fromkeys(pools.names, settings.winnable_pool) | {"easy": settings.easy_pool}
        self.finder = WinnableDealFinder(self.store, self.solver, pools, targets)
        await self.finder.load()
        self.service = GameService(
            self.store,
            self.hub,
            self.solver,
            pools=pools,
            cache_size=settings.cache_size,
            token_max_age=(
                timedelta(days=settings.token_ttl_days) if settings.token_ttl_days else None
            ),
            max_versions=settings.max_versions,
            history_keep=settings.history_keep,
            max_game_watchers=settings.max_game_watchers,
            limits=published_limits(settings),
        )
        await self.store.listen(
            self.service.remote_changed, self.service.remote_reset, self.service.remote_revoked
        )
        handler = ConnectionHandler(
            self.service,
            self.hub,
            ConnectionSettings.of(settings),
            metrics,
            Limits(limit_settings(settings)),
        )
        self.handler = handler
        self._watch(handler)
        web = WebClient.load(Path(settings.web_dir) if settings.web_dir else WEB_DIR)
        cap = settings.max_connections
        backlog = settings.listen_backlog
        descriptors.raise_limit(descriptors.needed(cap, handshakes_in_all(cap), backlog))
        self._say_failed_accepts()
        routes = HttpRoutes(
            metrics,
            self.store.readiness,
            timeout=settings.db_timeout_ms / 1000,
            name=SERVER_NAME,
            web=web,
        )
        try:
            self._listener = await Listener.open(
                handler,
                settings.host,
                settings.port,
                routes=routes,
                tls=settings.ssl_context(),
                origins=origins(settings),
                keepalive=settings.keepalive_ms / 1000 or None,
                backlog=settings.listen_backlog,
            )
        except (OSError, UnicodeError) as exc:  # UnicodeError: a name the resolver refused
            where = f"{settings.host}:{settings.port}"
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
            raise ListenError(f"cannot listen on {where}: {reason}") from exc
        self._served = True
        self.finder.start()
        self._heartbeat = asyncio.create_task(self._beat(), name="server-heartbeat")
        scheme = "wss" if settings.tls else "ws"
        host = f"[{settings.host}]" if ":" in settings.host else settings.host  # IPv6: [::1]
        log.info(
            "serving on %s://%s:%d/ (%s store)",
            scheme,
            host,
            self.port,
            self.store.backend,
        )
        if web.index is None:
            log.info("the web client is not built (make web, or --web-dir): / says how to get it")

    def _say_failed_accepts(self) -> None:
        """The loop's exception handler says an accept that failed for want of descriptors
        in one line (``descriptors.accept_failed``); ``stop`` puts the one before back."""
        loop = asyncio.get_running_loop()
        before = loop.get_exception_handler()
        self._exception_handler = descriptors.accept_failed(before)
        loop.set_exception_handler(self._exception_handler)
        self._handler_before = before

    def _watch(self, handler: ConnectionHandler) -> None:
        service, solver = self.service, self.solver
        assert service is not None and solver is not None
        self.metrics.watch(
            connections=lambda: handler.open,
            games=service.games_in_memory,
            solver_pending=lambda: solver.pending,
            outbox_bytes=handler.buffered_bytes,
        )

    async def _beat(self) -> None:
        """Measure how late the loop wakes up (its lag); flush the log's repeat counts."""
        while True:
            started = time.monotonic()
            await asyncio.sleep(HEARTBEAT_S)
            self.metrics.loop_lag.observe(max(0.0, time.monotonic() - started - HEARTBEAT_S))
            self._descriptors.check()
            logs.flush()

    async def stop(self) -> None:
        """Close every connection with 1001, then the service, solver and store."""
        await stop_task(self._heartbeat)
        self._heartbeat = None
        if self.service is not None:
            self.service.stop_clocks()  # unless the signal's handler did: not as devices answer
        if self._listener is not None:
            await self._listener.close()
            self._listener = None
        if self.handler is not None:
            await self.handler.close()
        if self.finder is not None:
            await self.finder.close()
        loop = asyncio.get_running_loop()
        deadline = shutdown_deadline()  # one bound for all of the store's work
        if self.service is not None:
            await self.service.close(deadline)
        if self.solver is not None:
            await self.solver.close()
        if self.store is not None:
            await self.store.close(within=max(0.0, deadline - loop.time()))
        if self._sqlite_lock is not None:
            self._sqlite_lock.release()
            self._sqlite_lock = None
        if self._exception_handler is not None and loop.get_exception_handler() is (
            self._exception_handler
        ):
            loop.set_exception_handler(self._handler_before)
        self._exception_handler = None
        if self._served:
            self._served = False
            log.info("stopped")


GC_THRESHOLDS: Final = (7_000, 10, 10)
"""The cyclic garbage collector's thresholds while serving (CPython's own: 700, 10, 10).

A collection of the youngest objects runs after that many more allocations than
frees of containers; every tenth also takes the middle generation. A player
coming back makes thousands of objects that stay (the game rebuilt from its
log), and with CPython's 700 the collector ran every few games and took a
quarter of the server's CPU after a restart (``bench.reconnect``: 2,440-2,540
us per player with 700, 1,730-1,890 with 7,000; docs/benchmarks.md). Ten times
as many keeps the longest of those pauses, the middle generation's, to about
70,000 young objects; in steady play CPU per action and p99 did not change.
"""


def tune_collector() -> None:
    """Set up the garbage collector for serving (after start-up, before the first client).

    What start-up allocated (modules, tables, compiled statements) lives as long
    as the process: frozen, out of the collector's way, so that full
    collections walk only newer objects. Then ``GC_THRESHOLDS``.
    """
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)


STOP_SIGNALS: Final = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
"""Each stops the server gracefully, at any time, start-up included (docs/server.md);
SIGHUP and SIGINT only unless the server was started with them ignored (``nohup``, a
supervisor; a shell script's background job, for SIGINT), which is then kept: closing
the terminal, or Ctrl-C meant for the script, must not stop such a server."""


async def run(settings: Settings) -> None:
    """Serve until SIGINT, SIGTERM or SIGHUP.

    A signal during start-up (waiting for the database, say) ends it there: what
    was started is stopped, and ``run`` returns as after serving.
    """
    server = ScorpionServer(settings)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    received: list[str] = []

    def on_signal(signum: signal.Signals) -> None:
        received.append(signum.name)
        if server.service is not None:  # the time played ends now, before any queued request
            server.service.stop_clocks()
        stop.set()

    for signum in STOP_SIGNALS:
        if signum is not signal.SIGTERM and signal.getsignal(signum) is signal.SIG_IGN:
            continue  # ignored by whoever started the server (nohup, a background job): kept
        loop.add_signal_handler(signum, on_signal, signum)
    try:
        if not await _start_unless_stopped(server, stop):
            log.info("%s during start-up: stopping", received[0])
            return
        tune_collector()
        await stop.wait()
        log.info("%s: shutting down, closing connections with %d", received[0], CLOSE_GOING_AWAY)
    finally:
        await server.stop()  # the handlers stay: a second signal changes nothing
        if received:
            _ignore_stop_signals(loop)


def _ignore_stop_signals(loop: asyncio.AbstractEventLoop) -> None:
    """Stopped by a signal, or migrated: one more, from here to the process' end, is
    ignored. The loop's handlers go with the loop, which restored the signals' defaults,
    and a SIGTERM sent while the last lines were written ended the process with it (-15),
    a Ctrl-C after a committed migration with 130."""
    for signum in STOP_SIGNALS:
        if loop.remove_signal_handler(signum):
            signal.signal(signum, signal.SIG_IGN)


async def _start_unless_stopped(server: ScorpionServer, stop: asyncio.Event) -> bool:
    """``server.start()``, cancelled if ``stop`` is set first; whether it started."""
    starting = asyncio.create_task(server.start(), name="server-start")
    stopped = asyncio.create_task(stop.wait(), name="server-stop-wait")
    try:
        await asyncio.wait({starting, stopped}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopped.cancel()
    if starting.done():
        starting.result()  # its failure, if it failed
        return True
    try:
        await stop_task(starting)
    except Exception as exc:  # cut in the middle of a statement, in the driver's words
        log.debug("the start, stopped, ended with %r", exc)
    return False


@contextlib.contextmanager
def _migration_lock(settings: Settings) -> Iterator[None]:
    """What ``--migrate`` and ``--migrate-to`` hold on SQLite: the file's lock, shared
    with other migrations and refused while a server holds it (``server.sqlite_lock``);
    nothing on PostgreSQL, whose migrations lock in the database."""
    if not settings.is_sqlite:
        yield
        return
    make_sqlite_directory(settings)
    lock = SqliteLock(settings.store_url)
    lock.acquire(shared=True)
    try:
        yield
    finally:
        lock.release()


async def migrate(settings: Settings, upgrading: Callable[[], None] | None = None) -> bool:
    """Upgrade the schema (``--migrate``), waiting for the database as serving does;
    False when it was current already (nothing done). ``upgrading``: as ``prepare_store``."""
    with _migration_lock(settings):
        store = await prepare_store(settings, migrating=True, upgrading=upgrading)
        await store.close()
    return store.schema_before is not SchemaStatus.CURRENT


async def migrate_to(settings: Settings, upgrading: Callable[[], None] | None = None) -> str:
    """Take the schema to ``settings.migrate_to``, up or down (``--migrate-to``), under
    the SQLite lock ``--migrate`` takes, waiting for the database as it does; the line
    that says what was done. ``upgrading``: called once the migration's transaction
    is open."""
    revision = settings.migrate_to
    assert revision is not None, "--migrate-to not given"

    async def attempt() -> str | None:
        timeout = settings.db_timeout_ms / 1000
        store = Store.connect(settings.store_url, connect_timeout=timeout)
        try:
            return await store.migrate_to(revision, upgrading)
        finally:
            await store.close()

    with _migration_lock(settings):
        before = await _waiting_for_database(settings, attempt)
    if before == revision:
        return f"schema at revision {revision} already: nothing to do"
    return f"schema migrated from revision {before or '(none)'} to {revision}"


class _Interrupted(Exception):
    """A signal (Ctrl-C's SIGINT, SIGTERM, SIGHUP) stopped ``--migrate``: ``args[0]``;
    ``args[1]``: the database, asked after, said the migration had not committed (False:
    it did not answer, so that is not known)."""


async def _migrate_unless_interrupted(settings: Settings) -> str:
    """``migrate``, or ``migrate_to`` for ``--migrate-to``, cancelled by SIGINT, SIGTERM
    or SIGHUP (each unless ignored, as by a background job or nohup), which then raises
    ``_Interrupted`` whatever the cancelled migration raised on its way out (a connection
    cut in the middle of a statement says so in its own words, which are not the host's
    answer). SIGTERM ended the process at once with status 143 and not a word (the
    transaction rolled back all the same).

    A signal may come as the upgrade commits, or after, while the store closes: the
    migration cannot tell then whether its commit went through, so the database is
    asked, once the upgrade had begun (before, nothing can have been migrated). A
    schema found current is a success (nothing is left to migrate), said so.
    Returns the line to log."""
    task = asyncio.current_task()
    assert task is not None
    interrupted: signal.Signals | None = None
    done = began = False

    def upgrading() -> None:
        nonlocal began
        began = True

    def interrupt(signum: signal.Signals) -> None:
        nonlocal interrupted
        if not done and interrupted is None:  # once committed, a signal changes nothing
            interrupted = signum
            task.cancel()

    loop = asyncio.get_running_loop()
    for signum in STOP_SIGNALS:
        if signal.getsignal(signum) is not signal.SIG_IGN:
            loop.add_signal_handler(signum, interrupt, signum)  # till the loop closes
    try:
        if settings.migrate_to is not None:
            line = await migrate_to(settings, upgrading)
        else:
            upgraded = await migrate(settings, upgrading)
            line = "schema upgraded" if upgraded else "schema current already: nothing to do"
        done = True
        _ignore_stop_signals(loop)  # committed: from here to the process' end too
        return line
    except (Exception, asyncio.CancelledError):
        if interrupted is None:
            raise
        task.uncancel()
        current = await _schema_current(settings) if began else False
        if not current:
            raise _Interrupted(interrupted, current is not None) from None
        _ignore_stop_signals(loop)
        if settings.migrate_to is not None:
            return (
                f"schema at revision {settings.migrate_to} (found so after {interrupted.name}: "
                "the migration had committed, or there was nothing to do)"
            )
        return (
            f"schema current (found so after {interrupted.name}: "
            "the upgrade had committed, or there was nothing to do)"
        )


async def _schema_current(settings: Settings) -> bool | None:
    """Whether the database's schema is this version's (with ``--migrate-to``: at that
    revision), asked anew (within ``--db-timeout-ms``); None when the database does not
    answer."""
    store = Store.connect(settings.store_url, timeout=settings.db_timeout_ms / 1000)
    try:
        if settings.migrate_to is not None:
            return await store.schema_revision() == settings.migrate_to
        return await store.schema_status() is SchemaStatus.CURRENT
    except Exception:
        return None
    finally:
        with contextlib.suppress(Exception):
            await store.close()


def main(argv: Sequence[str] | None = None) -> int:
    """``scorpion-server [--flags]``: serve; ``--migrate``: upgrade the schema and exit.

    Exit codes: 0 stopped by a signal (SIGTERM, SIGINT, SIGHUP; during start-up
    too) or migrated; 1 the database never came up or cannot be used (a file that
    is not a database or cannot be written, a PostgreSQL database that does not
    exist), the data directory cannot be made or written, the port cannot be
    opened, or an unexpected failure (logged); 2 bad settings (an in-memory
    SQLite URL or a directory among them), an outdated schema, one of a revision
    this version does not know, another program's database, or an SQLite file
    another server serves. Each ends in one line, the last one written: in the log's
    format, so a JSON line with ``--log-format json`` (``logs.fatal_line``).

    Ctrl-C before the server takes the signal up (while its settings are read, its
    logging set up) ends it with 130 and nothing printed, as while it loads
    (``server.__main__``).
    """
    try:
        return _main(argv)
    except KeyboardInterrupt:
        return 130


def _main(argv: Sequence[str] | None) -> int:
    _hold_standard_streams()
    fmt = requested_log_format(argv, os.environ)
    try:
        settings = load_settings(argv, os.environ)
    except SettingsError as exc:
        for number, line in enumerate(exc.lines, 1):  # the status on the last line only
            _say(line, fmt, 2 if number == len(exc.lines) else None)
        return 2
    except OutputFailed as exc:  # --help or --version
        if exc.reader_left:  # `--help | head -1`: quietly, as a shell's own tools end
            _quiet_stdout()
            return 141
        _say(str(exc), fmt, 1)
        return 1
    configure_logging(settings.log_level, settings.log_format)
    for line in unknown_variables(os.environ):
        log.warning(line)  # its own text, not "%s": the repeat count would take them as one
    try:
        status, message = _serve_or_migrate(settings)
    except Exception as exc:  # a bug: logged with its frames (no source lines), not a traceback
        log.error("the server failed unexpectedly", exc_info=exc)
        status, message = 1, f"stopped by an unexpected {type(exc).__name__} (logged above)"
    finally:
        logs.reset_logging()  # the counted repeats first: the verdict is the last line
    if message is not None:
        _say(message, settings.log_format, status)
    return status


def _hold_standard_streams() -> None:
    """Open the null device on each of descriptors 0, 1 and 2 that is closed.

    A supervisor may start the server with one closed. Its sockets and files would
    then take those numbers, and uvloop aborts the process when it closes a
    descriptor below 3 (exit 134 after a clean stop); a write meant for stderr could
    land in a client's socket. ``os.open`` takes the lowest free number, so opening
    in order fills the gaps; Python's ``sys`` stream of a closed one is None, and
    is given the null device too, but standard output: only ``--help`` and
    ``--version`` write there, and what they write must not vanish with status 0.
    """
    for fd, name, mode in ((0, "stdin", "r"), (1, "stdout", "w"), (2, "stderr", "w")):
        try:
            os.fstat(fd)
        except OSError:
            opened = os.open(os.devnull, os.O_RDWR)  # the lowest free number: ``fd``
            if opened != fd:
                os.dup2(opened, fd)
                os.close(opened)
        if name == "stdout" and sys.stdout is None:
            sys.stdout = _ClosedOutput()
        elif getattr(sys, name) is None:
            setattr(sys, name, open(fd, mode, closefd=False))  # noqa: SIM115 (for the process' life)


def _quiet_stdout() -> None:
    """The reader of standard output left: what is left in its buffer goes to the
    null device, so the interpreter's flush at exit does not complain of the pipe."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    with contextlib.suppress(AttributeError, OSError, ValueError):
        os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


class _ClosedOutput(io.TextIOBase):
    """``sys.stdout`` when the process started with it closed: a write fails, as it
    would on the closed descriptor (``OutputFailed`` for ``--help``, ``--version``)."""

    def writable(self) -> bool:
        return True

    def write(self, _text: str) -> int:
        raise OSError(errno.EBADF, "it is closed")


def _say(message: str, fmt: str, status: int | None) -> None:
    with contextlib.suppress(OSError):  # standard error full or gone: the status still says
        print(logs.fatal_line(message, fmt, status), file=sys.stderr, flush=True)


def _serve_or_migrate(settings: Settings) -> tuple[int, str | None]:
    """Serve or migrate; the exit status and the line to end with (None: none)."""
    try:
        if settings.migrate or settings.migrate_to is not None:
            log.info("%s", asyncio.run(_migrate_unless_interrupted(settings)))
            return 0, None
        run_loop(run(settings), settings.event_loop)
    except KeyboardInterrupt:  # Ctrl-C during --migrate or --migrate-to: rolled back
        return 130, "interrupted"
    except _Interrupted as stopped:  # a signal during --migrate or --migrate-to: rolled back
        signum, known = signal.Signals(stopped.args[0]), stopped.args[1]
        status = 130 if signum is signal.SIGINT else 128 + signum
        if not known:
            return status, (
                f"interrupted by {signum.name}; the database did not answer after, so "
                "whether the migration committed is not known: run "
                f"{'--migrate' if settings.migrate else '--migrate-to'} again"
            )
        if signum is signal.SIGINT:
            return status, "interrupted"
        return status, f"interrupted by {signum.name}: nothing was migrated"
    except (SchemaNewer, SchemaForeign) as exc:
        return 2, str(exc)
    except SchemaOutdated as exc:
        return 2, f"the database schema is not current ({exc.detail}); {UPGRADE_HINT}"
    except StoreUnavailable as exc:
        reason = _driver_reason(exc)
        if reason and not may_pass(exc):  # not "unavailable or busy": it stays so
            return 1, f"cannot use the database: {reason}"
        detail = f"{exc} ({reason})" if reason else str(exc)
        return 1, f"cannot use the database: {detail}"
    except StoreError as exc:  # refused for good: not a database, no such database, ...
        return 1, f"cannot use the database: {_driver_reason(exc) or exc}"
    except CommandError as exc:  # Alembic cannot upgrade what the database holds
        return 2, _upgrade_problem(exc)
    except SqliteInUse as exc:
        return 2, str(exc)
    except SqliteUnwritable as exc:
        return 1, f"{_database_setting(settings)}: {exc}"
    except (ListenError, OSError) as exc:
        return 1, str(exc)
    return 0, None


def _database_setting(settings: Settings) -> str:
    """The setting that names the SQLite file: ``--database-url`` or ``--data-dir``."""
    return setting_label("database_url" if settings.database_url else "data_dir")


def _driver_reason(exc: BaseException) -> str:
    """The database driver's own words for why ``exc`` happened (its first line), or ''.

    The store's errors say what failed in general terms and chain the cause;
    at start-up the cause is what the operator needs (``file is not a
    database``, ``database "x" does not exist``). It is the driver's message,
    never SQLAlchemy's, which would quote the statement.
    """
    cause = exc.__cause__
    # the deepest, but for the cancellation a timeout ends in (asyncio.timeout's)
    while cause is not None and cause.__cause__ is not None:
        if isinstance(cause, TimeoutError) and isinstance(cause.__cause__, asyncio.CancelledError):
            break
        cause = cause.__cause__
    if isinstance(cause, DBAPIError):
        cause = cause.orig
    if cause is None:
        return ""
    lines = str(cause).strip().splitlines()
    if not lines and isinstance(cause, TimeoutError):  # connected, and nothing answered
        return "no answer within --db-timeout-ms"
    return lines[0] if lines else ""


def _upgrade_problem(exc: CommandError) -> str:
    """One line on why Alembic could not upgrade the schema."""
    if isinstance(exc.__cause__, ResolutionError):
        return str(SchemaNewer(exc.__cause__.argument))
    return f"cannot upgrade the database schema: {exc}"
