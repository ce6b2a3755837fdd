"""Engines: one async SQLAlchemy engine per store, configured per backend.

Two backends are supported, with the same schema and the same tests:

- SQLite through aiosqlite (the embedded default). Each new connection gets
  ``journal_mode=WAL`` (readers never block the writer), ``foreign_keys=ON``
  (off by default in SQLite), ``busy_timeout`` (wait for the write lock rather
  than fail at once) and ``synchronous=FULL`` (a commit is on disk before it is
  acknowledged; group commit is what keeps that affordable). The driver's
  legacy transaction handling is switched off and SQLAlchemy emits ``BEGIN``
  itself, so reads are repeatable and DDL is transactional. ``BEGIN`` goes
  straight to aiosqlite: one trip to its connection thread instead of three
  (cursor, execute, close), which under load costs more than the statement.
- PostgreSQL through asyncpg (production), with ``pool_pre_ping`` so a
  connection dropped by a failover is replaced instead of failing a request.

A URL without a driver (``sqlite:///x.db``, ``postgresql://...``) gets the
async driver; any other backend is refused.
"""

from __future__ import annotations

import sqlite3
from typing import Any, Final

from sqlalchemy import event
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import OperationalError
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine
from sqlalchemy.util import await_only

__all__ = ["BUSY_TIMEOUT_MS", "SUPPORTED_BACKENDS", "async_url", "create_engine"]

BUSY_TIMEOUT_MS: Final = 5000
SUPPORTED_BACKENDS: Final = {"sqlite": "aiosqlite", "postgresql": "asyncpg"}
_SQLITE_PRAGMAS: Final = (
    "journal_mode=WAL",
    "foreign_keys=ON",
    f"busy_timeout={BUSY_TIMEOUT_MS}",
    "synchronous=FULL",
)


def async_url(url: str | URL) -> URL:
    """``url`` with the async driver of its backend; ValueError for other backends."""
    parsed = make_url(url)
    backend = parsed.get_backend_name()
    if backend not in SUPPORTED_BACKENDS:
        raise ValueError(
            f"unsupported database {backend!r}: use sqlite+aiosqlite or postgresql+asyncpg"
        )
    return parsed.set(drivername=f"{backend}+{SUPPORTED_BACKENDS[backend]}")


def create_engine(url: str | URL, **options: Any) -> AsyncEngine:
    """An engine for ``url`` configured as the module docstring says."""
    parsed = async_url(url)
    if parsed.get_backend_name() == "sqlite":
        engine = create_async_engine(parsed, **options)
        _configure_sqlite(engine)
        return engine
    return create_async_engine(parsed, pool_pre_ping=True, **options)


def _configure_sqlite(engine: AsyncEngine) -> None:
    event.listen(engine.sync_engine, "connect", _on_sqlite_connect)
    event.listen(engine.sync_engine, "begin", _on_sqlite_begin)


def _on_sqlite_connect(dbapi_connection: Any, _record: Any) -> None:
    dbapi_connection.isolation_level = None  # SQLAlchemy, not the driver, emits BEGIN
    cursor = dbapi_connection.cursor()
    try:
        for pragma in _SQLITE_PRAGMAS:
            cursor.execute(f"PRAGMA {pragma}")
    finally:
        cursor.close()


def _on_sqlite_begin(connection: Any) -> None:
    driver = connection.connection.driver_connection  # the aiosqlite connection
    try:
        await_only(driver.execute_fetchall("BEGIN"))
    except (sqlite3.Error, ValueError) as exc:  # ValueError: aiosqlite's "Connection closed"
        raise OperationalError("BEGIN", None, exc) from exc
