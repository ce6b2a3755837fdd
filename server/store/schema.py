"""Alembic owns the schema: where the migrations are, what state a database is in.

The migrations live in ``server/store/migrations/``, inside the package, so an
installed wheel migrates as a checkout does (the Alembic CLI finds them
through ``alembic.ini``'s ``script_location = server.store:migrations``). From
code they run inside the store's own engine: ``run_alembic`` opens a
transaction, hands its connection to ``migrations/env.py`` through
``Config.attributes["connection"]`` and runs
the command synchronously on it (``AsyncConnection.run_sync``). So the same
call works for SQLite and PostgreSQL, inside an already running event loop,
and the whole upgrade commits or rolls back as one transaction (both
backends have transactional DDL; SQLite's is enabled in ``database``).

``schema_status`` compares the revision stamped in ``alembic_version`` with
this code's head:

- ``empty``: no revision and none of our tables (a new database); on PostgreSQL
  not so for a role without USAGE on the schemas of its search path, which sees no
  table there: refused (``StoreAccessRefused``), naming the schema;
- ``current``: stamped with the head revision;
- ``outdated``: anything else (an older or unknown revision, or our tables
  without a stamp); ``describe_status`` says which, for ``SchemaOutdated``.

``SchemaState.foreign`` tells a database of another program from an empty one:
tables we did not make (``others``; on PostgreSQL not counting those an
extension such as PostGIS owns) and none of ours, or tables named as ours
without a revision. ``upgrade`` refuses such a database (``SchemaForeign``) in
the same transaction as it reads it, rather than adding our tables among the
other program's or failing half-way on a name both use.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Final

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from alembic.util import CommandError
from sqlalchemy import String, bindparam, inspect, text
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncEngine

from server.store.database import MIGRATION_LOCK, migrating
from server.store.errors import SchemaForeign, SchemaNewer, StoreAccessRefused
from server.store.models import metadata
from server.store.records import SchemaStatus

__all__ = [
    "MIGRATIONS_DIR",
    "SchemaState",
    "alembic_config",
    "head_revision",
    "migrate_to",
    "missing_privilege",
    "read_schema_state",
    "run_alembic",
    "unknown_revision",
    "upgrade",
]

MIGRATIONS_DIR: Final = Path(__file__).resolve().with_name("migrations")
_COMMANDS: Final[dict[str, Callable[[Config, str], None]]] = {
    "upgrade": command.upgrade,
    "downgrade": command.downgrade,
}


def alembic_config(connection: Connection | None = None) -> Config:
    """An Alembic config for our migrations, optionally bound to ``connection``."""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    if connection is not None:
        config.attributes["connection"] = connection
    return config


@cache
def head_revision() -> str:
    """The newest revision in ``migrations/versions`` (read once per process)."""
    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    if head is None:
        raise RuntimeError(f"no migrations found in {MIGRATIONS_DIR}")
    return head


@dataclass(frozen=True, slots=True)
class SchemaState:
    """What a database holds: its stamped revisions, whether our tables exist, our head."""

    revisions: tuple[str, ...]
    has_tables: bool
    head: str
    others: tuple[str, ...] = ()  # tables neither ours nor Alembic's (another program's)

    @property
    def status(self) -> SchemaStatus:
        if self.revisions == (self.head,):
            return SchemaStatus.CURRENT
        if not self.revisions and not self.has_tables:
            return SchemaStatus.EMPTY
        return SchemaStatus.OUTDATED

    def describe(self) -> str:
        """Why the schema is not usable, in words for ``SchemaOutdated``."""
        if self.status is SchemaStatus.EMPTY:
            return "the database has no schema yet"
        if not self.revisions:
            return "the database has tables but no Alembic revision"
        known = ", ".join(self.revisions)
        return f"the database schema is at revision {known}; this server needs {self.head}"

    def foreign(self) -> str | None:
        """Why this is another program's database rather than ours or an empty one, or None."""
        if self.has_tables:
            if self.revisions:
                return None
            return (
                "the database has tables named as scorpion-server's but no Alembic revision "
                "(another program's, or made by hand)"
            )
        if not self.others:
            return None
        shown = ", ".join(self.others[:5]) + (", ..." if len(self.others) > 5 else "")
        return (
            f"the database holds another program's tables ({shown}) and none of scorpion-server's"
        )


def unknown_revision(state: SchemaState) -> str | None:
    """A stamped revision these migrations do not know (a newer server's), or None."""
    script = ScriptDirectory.from_config(alembic_config())
    for revision in state.revisions:
        try:
            script.get_revision(revision)
        except CommandError:  # Alembic's "Can't locate revision"
            return revision
    return None


_EXTENSION_TABLES: Final = text(
    "SELECT c.relname FROM pg_class c JOIN pg_depend d ON d.objid = c.oid "
    "AND d.classid = 'pg_class'::regclass AND d.deptype = 'e' "
    "WHERE c.relnamespace = current_schema()::regnamespace"
)


_SEARCH_PATH: Final = text("SELECT current_schema(), current_setting('search_path'), current_user")
_SCHEMAS_NAMED: Final = text(
    "SELECT n.nspname, has_schema_privilege(n.oid, 'USAGE'), EXISTS (SELECT 1 FROM pg_class c "
    "WHERE c.relnamespace = n.oid AND c.relname = 'alembic_version') "
    "FROM pg_namespace n WHERE n.nspname = ANY(:names)"
).bindparams(bindparam("names", type_=ARRAY(String)))
_PATH_ITEM: Final = re.compile(r'(?:"(?:[^"]|"")*"|[^,"])+')
"""One name of a ``search_path``: a quoted one may hold commas."""


def _search_path(setting: str, user: str) -> list[str]:
    """The schema names ``search_path`` lists, in order, as PostgreSQL reads them:
    quoted ones as they are, unquoted ones in lower case, ``$user`` as the role's name."""
    names = []
    for item in (match.group().strip() for match in _PATH_ITEM.finditer(setting)):
        if len(item) >= 2 and item[0] == item[-1] == '"':
            name = item[1:-1].replace('""', '"')
        else:
            name = item.lower()
        names.append(user if name == "$user" else name)
    return names


def _refuse_unusable_schema(connection: Connection) -> None:
    """PostgreSQL, for a role that sees no table at all: ``StoreAccessRefused`` when that
    is for want of USAGE on a schema of its search path, one holding the database's
    tables (``alembic_version`` among them), or any when it may use none
    (``current_schema()`` is null then). Such a role sees none of the tables there,
    which read as no schema yet: told to run --migrate, it failed with "no schema has
    been selected to create in", or, given a schema of its own earlier in the path,
    made a second, empty copy of every table there."""
    current, setting, user = connection.execute(_SEARCH_PATH).one()
    names = _search_path(setting, user)
    rows = connection.execute(_SCHEMAS_NAMED, {"names": names})
    found = {name: (usable, ours) for name, usable, ours in rows}
    there = [name for name in names if name in found]
    unusable = [name for name in there if not found[name][0]]
    holding = [name for name in unusable if found[name][1]]
    if holding or (current is None and unusable):
        name = (holding or unusable)[0]
        raise StoreAccessRefused(
            f"permission denied: the database role lacks USAGE on schema {name} "
            "(grant it USAGE on the schema as well: without it the role sees none of "
            "the tables there)"
        )
    if current is None:
        raise StoreAccessRefused(f"no schema of the database role's search_path ({setting}) exists")


def _read_state(connection: Connection) -> SchemaState:
    revisions = MigrationContext.configure(connection).get_current_heads()
    tables = set(inspect(connection).get_table_names())
    if not revisions and not tables and connection.dialect.name == "postgresql":
        _refuse_unusable_schema(connection)
    ours = set(metadata.tables) & tables
    others = tables - set(metadata.tables) - {"alembic_version"}
    if others and connection.dialect.name == "postgresql":
        others -= set(connection.execute(_EXTENSION_TABLES).scalars())  # PostGIS and the like
    return SchemaState(tuple(revisions), bool(ours), head_revision(), tuple(sorted(others)))


# What a serving role needs on PostgreSQL (deploy.md): every statement the server makes
# reads or writes the models' tables; the schema's version it only reads.
_TABLE_PRIVILEGES: Final = ("SELECT", "INSERT", "UPDATE", "DELETE")
_TABLE_PRIVILEGES_MISSING: Final = text(
    "SELECT t.name, t.privilege FROM unnest(:tables, :privileges) WITH ORDINALITY"
    " AS t(name, privilege, n) WHERE NOT has_table_privilege(t.name, t.privilege)"
    # granted column by column, on every column, serves as well (DELETE has no columns)
    " AND (t.privilege = 'DELETE' OR EXISTS (SELECT 1 FROM pg_attribute AS a"
    " WHERE a.attrelid = t.name::regclass AND a.attnum > 0 AND NOT a.attisdropped"
    " AND NOT has_column_privilege(a.attrelid, a.attnum, t.privilege)))"
    " ORDER BY t.n"
).bindparams(bindparam("tables", type_=ARRAY(String)), bindparam("privileges", type_=ARRAY(String)))
_SEQUENCES_MISSING: Final = text(
    "SELECT s.name FROM (SELECT pg_get_serial_sequence(t.name, t.col) AS name"
    " FROM unnest(:tables, :columns) AS t(name, col)) AS s"
    " WHERE s.name IS NOT NULL AND NOT has_sequence_privilege(s.name, 'USAGE')"
    " AND NOT has_sequence_privilege(s.name, 'UPDATE') ORDER BY s.name"  # nextval takes either
).bindparams(bindparam("tables", type_=ARRAY(String)), bindparam("columns", type_=ARRAY(String)))


def missing_privilege(connection: Connection) -> str | None:
    """PostgreSQL: the first privilege the connection's role lacks among those the
    server uses, in words (``INSERT on table issued_tokens``), or None. Each table of
    the models, whichever migration added it: a role granted its rights before an
    upgrade has none on a table the upgrade made, and would answer every request that
    uses it ``unavailable``."""
    wanted = [(name, right) for name in metadata.tables for right in _TABLE_PRIVILEGES]
    wanted.append(("alembic_version", "SELECT"))
    tables, privileges = zip(*wanted, strict=True)
    found = connection.execute(
        _TABLE_PRIVILEGES_MISSING, {"tables": list(tables), "privileges": list(privileges)}
    ).first()
    if found is not None:
        return f"{found.privilege} on table {found.name}"
    counters = [
        (name, table.autoincrement_column.name)
        for name, table in metadata.tables.items()
        if table.autoincrement_column is not None
    ]
    sequence = connection.execute(
        _SEQUENCES_MISSING,
        {"tables": [name for name, _ in counters], "columns": [col for _, col in counters]},
    ).scalar()
    return None if sequence is None else f"USAGE (or UPDATE) on sequence {sequence}"


async def read_schema_state(engine: AsyncEngine) -> SchemaState:
    async with engine.connect() as connection:
        return await connection.run_sync(_read_state)


async def upgrade(engine: AsyncEngine, begun: Callable[[], None] | None = None) -> SchemaStatus:
    """``alembic upgrade head`` in one transaction, unless the database is another
    program's (``SchemaForeign``, module docstring); the schema's status before it
    (``CURRENT``: there was nothing to do). Give it ``database.writing(engine)``:
    on SQLite the transaction then takes the write lock first, so two upgrades at once
    wait for each other instead of one failing with "database is locked". ``begun``
    is called once the transaction is open: from then, a commit may go through."""

    def run(connection: Connection) -> SchemaStatus:
        if begun is not None:
            begun()
        if connection.dialect.name == "postgresql":
            # The lock first: read before it, three nodes migrating at once each found
            # the schema behind and said "schema upgraded"; the later two did nothing.
            connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATION_LOCK})
        state = _read_state(connection)
        problem = state.foreign()
        if problem is not None:
            raise SchemaForeign(problem)
        command.upgrade(alembic_config(connection), "head")
        return state.status

    async with migrating(engine) as connection:
        return await connection.run_sync(run)


async def migrate_to(
    engine: AsyncEngine, revision: str, begun: Callable[[], None] | None = None
) -> str | None:
    """``alembic upgrade`` or ``downgrade`` to ``revision``, whichever leads there, in one
    transaction (``scorpion-server --migrate-to``); the revision before (None: no schema).
    Refused, as ``upgrade`` refuses, for another program's database (``SchemaForeign``),
    and for a revision these migrations do not know (``SchemaNewer``): only the version
    that made it has the way back. Revisions are numbered in one line, so the numbers
    say which way to go. ``begun``: as ``upgrade``'s."""

    def run(connection: Connection) -> str | None:
        if begun is not None:
            begun()
        if connection.dialect.name == "postgresql":
            connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATION_LOCK})
        state = _read_state(connection)
        problem = state.foreign()
        if problem is not None:
            raise SchemaForeign(problem)
        newer = unknown_revision(state)
        if newer is not None:
            raise SchemaNewer(newer)
        before = state.revisions[0] if state.revisions else None
        if before is None or before < revision:
            command.upgrade(alembic_config(connection), revision)
        elif before > revision:
            command.downgrade(alembic_config(connection), revision)
        return before

    async with migrating(engine) as connection:
        return await connection.run_sync(run)


async def run_alembic(engine: AsyncEngine, name: str, revision: str) -> None:
    """Run ``alembic <name> <revision>`` (upgrade, downgrade) in one transaction."""

    def run(connection: Connection) -> None:
        _COMMANDS[name](alembic_config(connection), revision)

    async with migrating(engine) as connection:
        await connection.run_sync(run)
