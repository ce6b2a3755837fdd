"""Alembic environment for the Scorpion store (``server.store.models.metadata``).

Two ways in:

- From code (``server.store.schema.run_alembic``): the store passes an open
  synchronous connection in ``config.attributes["connection"]``; migrations run
  on it, inside the caller's transaction and event loop.
- From the CLI (``alembic upgrade head`` at the top of the source tree): the
  URL comes from, in this order, ``config.attributes["url"]``, ``-x url=...``,
  the ``SCORPION_DATABASE_URL`` environment variable, or ``sqlalchemy.url`` in
  ``alembic.ini``; an engine is made by ``server.store.database`` (same SQLite
  pragmas and transaction handling as the server) and driven with
  ``asyncio.run``. ``--sql`` (offline mode) prints the SQL instead.

On PostgreSQL a transaction-scoped advisory lock serialises concurrent
upgrades (two nodes starting at once with ``--migrate``). On SQLite the CLI
takes the file's lock shared, as ``--migrate`` does (``server.sqlite_lock``):
it refuses a file a server serves, whose schema it would change under it.
"""

from __future__ import annotations

import asyncio
import os
from logging.config import fileConfig
from typing import Final, Literal

from alembic import context
from alembic.autogenerate.api import AutogenContext
from alembic.util import CommandError
from sqlalchemy import text
from sqlalchemy.engine import Connection, make_url
from sqlalchemy.pool import NullPool
from sqlalchemy.types import TypeDecorator

from server.sqlite_lock import SqliteInUse, SqliteLock, SqliteUnwritable
from server.store.database import MIGRATION_LOCK, async_url, create_engine, migrating
from server.store.models import metadata

URL_VARIABLE: Final = "SCORPION_DATABASE_URL"

config = context.config


def database_url() -> str:
    """The URL the CLI migrates; a CommandError naming every source when there is none."""
    url = (
        config.attributes.get("url")
        or context.get_x_argument(as_dictionary=True).get("url")
        or os.environ.get(URL_VARIABLE)
        or config.get_main_option("sqlalchemy.url")
    )
    if not url:
        raise CommandError(f"no database URL: pass `-x url=...` or set {URL_VARIABLE}")
    return str(url)


def render_item(kind: str, obj: object, autogen: AutogenContext) -> str | Literal[False]:
    """Autogenerate writes the models' type adapters as their plain SQL types.

    A revision must not import ``server.store.models``: the models change, a
    revision must keep meaning what it said when it was written.
    """
    if kind == "type" and isinstance(obj, TypeDecorator):
        return f"sa.{obj.impl_instance!r}"
    return False


def run_migrations(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=metadata,
        render_as_batch=connection.dialect.name == "sqlite",  # SQLite alters by copying
        transactional_ddl=True,  # true of both backends as server.store.database sets them up
        compare_type=True,
        render_item=render_item,
    )
    with context.begin_transaction():
        if connection.dialect.name == "postgresql":
            connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATION_LOCK})
        context.run_migrations()


async def run_from_cli() -> None:
    url = database_url()
    lock = SqliteLock(url) if make_url(url).get_backend_name() == "sqlite" else None
    if lock is not None:  # as --migrate: not beside a server (server.sqlite_lock)
        try:
            lock.acquire(shared=True)
        except (SqliteInUse, SqliteUnwritable) as exc:
            raise CommandError(str(exc)) from None
    engine = create_engine(url, poolclass=NullPool)
    try:
        async with migrating(engine) as connection:
            await connection.run_sync(run_migrations)
    finally:
        await engine.dispose()
        if lock is not None:
            lock.release()


def run_offline() -> None:
    context.configure(
        url=async_url(database_url()),
        target_metadata=metadata,
        literal_binds=True,
        dialect_opts={"paramstyle": "named"},
    )
    with context.begin_transaction():
        context.run_migrations()


def main() -> None:
    if config.config_file_name is not None and "connection" not in config.attributes:
        fileConfig(config.config_file_name, disable_existing_loggers=False)
    connection = config.attributes.get("connection")
    if context.is_offline_mode():
        run_offline()
    elif connection is not None:
        run_migrations(connection)
    else:
        asyncio.run(run_from_cli())


main()
