"""The composition root: settings, store, solver pool, service, hub, WebSocket server.

``main()`` is the ``scorpion-server`` console script (and ``python -m
server``). Start-up order: settings (``server.config``), the store and its
schema (SQLite is created or upgraded automatically; PostgreSQL must already
be current, else the server refuses to start and names ``scorpion-server
--migrate``), the solver pool, the easy level's deal pool (``server.easy_pool``: loaded,
then grown in the background), the service and hub, on PostgreSQL the change listener that
hears other nodes' commits (``server.store.notify``), then the listener
(``server.connection.Listener``: subprotocol ``scorpion.v1``, frame limit
MAX_FRAME_BYTES, no compression; the only place that knows ``websockets``).
SIGINT/SIGTERM stop it gracefully: stop accepting, close every connection
with 1001, finish background work, commit what the store has queued, close
the database.

``ScorpionServer`` is the same thing as an object with ``start()``/``stop()``
and the bound ``port``, for tests and embedding.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path

from engine.solver.easy import WinnableDeals
from protocol import CLOSE_GOING_AWAY
from server.config import Settings, load_settings
from server.connection import ConnectionHandler, Listener
from server.easy_pool import EasyDealFinder
from server.hub import Hub
from server.service import GameService
from server.store import SchemaOutdated, Store
from server.store.errors import UPGRADE_HINT
from server.workers import SolverPool

__all__ = ["ScorpionServer", "configure_logging", "main", "migrate", "prepare_store", "run"]

log = logging.getLogger("server")


async def prepare_store(settings: Settings) -> Store:
    """A store on a current schema: SQLite upgraded in place, PostgreSQL checked."""
    if settings.is_sqlite and not settings.database_url:
        Path(settings.data_dir).mkdir(parents=True, exist_ok=True)
    store = Store.connect(settings.store_url, max_batch=settings.commit_batch)
    try:
        if settings.is_sqlite:
            await store.upgrade()
        else:
            await store.check_schema()
    except BaseException:
        await store.close()
        raise
    return store


class ScorpionServer:
    """One running server: ``await start()``, then ``port``, then ``await stop()``."""

    def __init__(self, settings: Settings, *, easy_deals: WinnableDeals | None = None) -> None:
        self.settings = settings
        self.easy_deals = easy_deals
        self.hub = Hub()
        self.store: Store | None = None
        self.solver: SolverPool | None = None
        self.service: GameService | None = None
        self.finder: EasyDealFinder | None = None
        self._listener: Listener | None = None

    @property
    def port(self) -> int:
        assert self._listener is not None, "start() first"
        return self._listener.port

    async def start(self) -> None:
        settings = self.settings
        self.store = await prepare_store(settings)
        self.solver = SolverPool(settings.workers, settings.hint_budget_ms, settings.lost_budget_ms)
        pool = self.easy_deals if self.easy_deals is not None else WinnableDeals()
        self.finder = EasyDealFinder(self.store, self.solver, pool, target=settings.easy_pool)
        await self.finder.load()
        self.service = GameService(
            self.store,
            self.hub,
            self.solver,
            easy_deals=pool,
            cache_size=settings.cache_size,
        )
        await self.store.listen(self.service.remote_changed, self.service.remote_reset)
        handler = ConnectionHandler(self.service, self.hub, settings.queue_size)
        self._listener = await Listener.open(handler, settings.host, settings.port)
        self.finder.start()
        log.info("serving on ws://%s:%d/ (%s store)", settings.host, self.port, self.store.backend)

    async def stop(self) -> None:
        """Close every connection with 1001, then the service, solver and store."""
        if self._listener is not None:
            await self._listener.close()
            self._listener = None
        if self.finder is not None:
            await self.finder.close()
        if self.service is not None:
            await self.service.close()
        if self.solver is not None:
            self.solver.close()
        if self.store is not None:
            await self.store.close()
        log.info("stopped")


async def run(settings: Settings) -> None:
    """Serve until SIGINT or SIGTERM."""
    server = ScorpionServer(settings)
    await server.start()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    try:
        await stop.wait()
        log.info("shutting down: closing connections with %d", CLOSE_GOING_AWAY)
    finally:
        await server.stop()


async def migrate(settings: Settings) -> None:
    store = Store.connect(settings.store_url)
    try:
        if settings.is_sqlite and not settings.database_url:
            Path(settings.data_dir).mkdir(parents=True, exist_ok=True)
        await store.upgrade()
    finally:
        await store.close()


def configure_logging(level: str) -> None:
    """Our loggers at ``level``; the libraries' chatter (SQL, frames) at WARNING at most."""
    logging.basicConfig(
        level=level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    for noisy in ("aiosqlite", "sqlalchemy", "websockets", "asyncio", "alembic"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


def main(argv: Sequence[str] | None = None) -> int:
    """``scorpion-server [--flags]``: serve; ``--migrate``: upgrade the schema and exit."""
    settings = load_settings(argv, os.environ)
    configure_logging(settings.log_level)
    try:
        if settings.migrate:
            asyncio.run(migrate(settings))
            log.info("schema upgraded")
            return 0
        asyncio.run(run(settings))
    except SchemaOutdated as exc:
        print(
            f"scorpion-server: the database schema is not current ({exc}); {UPGRADE_HINT}",
            file=sys.stderr,
        )
        return 2
    return 0
