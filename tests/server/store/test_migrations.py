"""Alembic owns the schema: migrations build exactly the models, both ways, from code and CLI."""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect, text
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncEngine

from server.config import schema_revision
from server.sqlite_lock import SqliteLock
from server.store import (
    SchemaForeign,
    SchemaNewer,
    SchemaOutdated,
    SchemaStatus,
    Store,
    TokenTaken,
    hash_token,
    schema,
)
from server.store.models import metadata
from server.store.schema import MIGRATIONS_DIR, head_revision, run_alembic

ROOT = Path(__file__).resolve().parents[3]
TABLES = {
    "players",
    "tokens",
    "issued_tokens",
    "games",
    "game_actions",
    "level_stats",
    "easy_deals",
    "deal_verdicts",
}


def _differences(connection: Connection) -> list[Any]:
    context = MigrationContext.configure(connection, opts={"compare_type": True})
    return list(compare_metadata(context, metadata))


def _tables(connection: Connection) -> set[str]:
    return set(inspect(connection).get_table_names())


async def differences(engine: AsyncEngine) -> list[Any]:
    async with engine.connect() as conn:
        return await conn.run_sync(_differences)


async def tables(engine: AsyncEngine) -> set[str]:
    async with engine.connect() as conn:
        return await conn.run_sync(_tables)


def test_revisions_form_one_line() -> None:
    revisions = sorted(path.name for path in (MIGRATIONS_DIR / "versions").glob("*.py"))
    numbers = [name[:4] for name in revisions]
    assert numbers == [f"{n:04d}" for n in range(1, len(numbers) + 1)]  # 0001, 0002, ...
    assert revisions[:5] == [
        "0001_initial_schema.py",
        "0002_paused_and_easy_deals.py",
        "0003_stored_hints.py",
        "0004_deal_verdicts.py",
        "0005_winnable_games.py",
    ]
    assert head_revision() == numbers[-1]
    assert schema_revision() == head_revision()  # what --version names, read without Alembic


async def test_upgrade_builds_exactly_the_models(store: Store, engine: AsyncEngine) -> None:
    assert await tables(engine) == TABLES | {"alembic_version"}
    assert await differences(engine) == []


async def test_downgrade_to_base_then_upgrade_again(store: Store, engine: AsyncEngine) -> None:
    await run_alembic(engine, "downgrade", "base")
    assert await tables(engine) <= {"alembic_version"}
    assert await store.schema_status() == SchemaStatus.EMPTY
    await store.upgrade()
    assert await differences(engine) == []
    assert await store.schema_status() == SchemaStatus.CURRENT


WHEN = datetime(2026, 11, 30, tzinfo=UTC)


async def insert_first_game(engine: AsyncEngine, time_ms: int = 0) -> None:
    """Player 1 and its unfinished game 7 (hard, deal 5), in the columns of the first
    schema, which every later one keeps: data for a migration to carry over."""
    async with engine.begin() as conn:
        await conn.execute(
            text("INSERT INTO players (id, name, name_key, created_at) VALUES (1, 'a', 'a', :t)"),
            {"t": WHEN},
        )
        await conn.execute(
            text(
                "INSERT INTO games (id, player_id, level, deal, status, version, moves, score,"
                " time_ms, hints, undos, suits_removed, created_at, updated_at)"
                " VALUES (7, 1, 'hard', '5', 'active', 0, 0, 0, :time_ms, 0, 0, 0, :t, :t)"
            ),
            {"t": WHEN, "time_ms": time_ms},
        )


async def test_upgrade_to_0002_keeps_games_and_leaves_them_unpaused(
    store: Store, engine: AsyncEngine
) -> None:
    await run_alembic(engine, "downgrade", "0001")
    await insert_first_game(engine, time_ms=1234)
    await store.upgrade()
    game = await store.get_game(7)
    assert game is not None and game.paused is False and game.time_ms == 1234
    assert await differences(engine) == []


async def test_upgrade_to_0009_remembers_the_working_tokens_as_issued(
    store: Store, engine: AsyncEngine
) -> None:
    """A token working at the upgrade, revoked after it, is never taken up again."""
    await run_alembic(engine, "downgrade", "0008")
    token = "t" * 43
    await insert_first_game(engine)
    async with engine.begin() as conn:
        await conn.execute(
            text("INSERT INTO tokens (token_hash, player_id, created_at) VALUES (:h, 1, :t)"),
            {"h": hash_token(token), "t": WHEN},
        )
    await store.upgrade()
    assert await differences(engine) == []
    assert await store.rotate_token(token) is not None  # revoked, for a new one
    _other, theirs = await store.create_player("b")
    with pytest.raises(TokenTaken):
        await store.rotate_token(theirs, token)


async def test_a_token_an_older_node_issued_is_remembered_once_revoked(
    store: Store, engine: AsyncEngine
) -> None:
    """A node of the version before 0009, serving during an upgrade, issues tokens into
    ``tokens`` alone: once revoked (by a rotation, or signing out everywhere, on a new
    node) such a token was free for anyone to choose, even after every old node had
    stopped."""
    await store.upgrade()
    await insert_first_game(engine)
    rotated, signed_out = "r" * 43, "s" * 43
    async with engine.begin() as conn:  # as the older node writes them
        for token in (rotated, signed_out):
            await conn.execute(
                text("INSERT INTO tokens (token_hash, player_id, created_at) VALUES (:h, 1, :t)"),
                {"h": hash_token(token), "t": WHEN},
            )
    assert await store.rotate_token(rotated) is not None
    assert await store.revoke_tokens(1) == 2  # the signed-out one, and the rotation's new one
    _other, theirs = await store.create_player("b")
    for token in (rotated, signed_out):
        with pytest.raises(TokenTaken):
            await store.rotate_token(theirs, token)


async def test_a_database_the_other_0009_made_is_brought_to_this_one(
    store: Store, engine: AsyncEngine
) -> None:
    """A few commits numbered another design 0009: ``tokens.revoked_at`` marks, no
    ``issued_tokens``. A database one of them migrated was taken as current: nothing to
    migrate, and every registration failed. 0010 makes it this line's 0009."""
    await run_alembic(engine, "downgrade", "0008")
    await insert_first_game(engine)
    working, revoked = "w" * 43, "v" * 43
    async with engine.begin() as conn:  # as that 0009 left it
        await conn.execute(
            text("ALTER TABLE tokens ADD COLUMN revoked_at TIMESTAMP WITH TIME ZONE")
        )
        for token, revoked_at in ((working, None), (revoked, WHEN)):
            await conn.execute(
                text(
                    "INSERT INTO tokens (token_hash, player_id, created_at, revoked_at)"
                    " VALUES (:h, 1, :t, :r)"
                ),
                {"h": hash_token(token), "t": WHEN, "r": revoked_at},
            )
        await conn.execute(text("UPDATE alembic_version SET version_num = '0009'"))
    await store.upgrade()
    assert await store.schema_status() == SchemaStatus.CURRENT
    assert await differences(engine) == []
    assert await store.player_for_token(revoked) is None
    assert (player := await store.player_for_token(working)) is not None and player.id == 1
    _other, theirs = await store.create_player("b")  # registering works again
    for token in (working, revoked):
        with pytest.raises(TokenTaken):
            await store.rotate_token(theirs, token)


async def test_deals_dealt_before_the_upgrade_leave_the_pools(
    store: Store, engine: AsyncEngine
) -> None:
    """Builds before each winnable deal was dealt once left a deal in the pool once
    dealt; its number was shown at the end of its game. Kept by the upgrade, such a
    deal went on being dealt: whoever had read its number knew every face-down card."""
    await run_alembic(engine, "downgrade", "0010")
    await insert_first_game(engine)  # game 7: hard, deal 5
    async with engine.begin() as conn:  # as such a build left them
        await conn.execute(
            text(
                "INSERT INTO games (id, player_id, level, deal, status, version, moves, score,"
                " time_ms, hints, undos, suits_removed, created_at, updated_at, finished_at)"
                " VALUES (8, 1, 'medium', '6', 'won', 0, 0, 0, 0, 0, 0, 4, :t, :t, :t)"
            ),
            {"t": WHEN},
        )
        pooled = [("hard", "5"), ("easy", "6"), ("classic", "6"), ("hard", "9"), ("easy", "10")]
        for level, deal in pooled:
            await conn.execute(
                text("INSERT INTO easy_deals (level, deal, found_at) VALUES (:l, :d, :t)"),
                {"l": level, "d": deal, "t": WHEN},
            )
    await store.upgrade()
    assert await differences(engine) == []
    assert await store.easy_deals("hard") == [9]
    assert await store.easy_deals("easy") == [10]  # medium's games are dealt from easy's pool
    assert await store.easy_deals("classic") == []  # the same number is the same shuffle
    assert await store.easy_deals("medium") == []


async def insert_actions(engine: AsyncEngine) -> None:
    """Two actions of game 7 (a deal, then its undo), in the first schema's columns."""
    async with engine.begin() as conn:
        await conn.execute(
            text(
                "INSERT INTO game_actions (game_id, seq, type, t, request_id, created_at)"
                " VALUES (7, 1, 'deal', 2, '1', :t), (7, 2, 'undo', 5786, '2', :t)"
            ),
            {"t": WHEN},
        )
        await conn.execute(text("UPDATE games SET version = 2, undos = 1 WHERE id = 7"))


async def action_count(engine: AsyncEngine) -> int:
    async with engine.connect() as conn:
        return int((await conn.execute(text("SELECT count(*) FROM game_actions"))).scalar_one())


@pytest.mark.parametrize("start", ["0001", "0002", "0004", "0005", "0006"])
async def test_an_upgrade_keeps_every_games_actions(
    store: Store, engine: AsyncEngine, start: str
) -> None:
    """On SQLite a migration alters a table by copying it, then dropping the old one.
    With foreign keys on, that drop of ``games`` deleted every game's actions (ON
    DELETE CASCADE) on an upgrade from 0001 to 0005: the games stayed, and could not
    be restored. Nor may a downgrade lose them."""
    await run_alembic(engine, "downgrade", start)
    await insert_first_game(engine, time_ms=5786)
    await insert_actions(engine)
    await store.upgrade()
    assert await action_count(engine) == 2
    _record, actions = await store.load_game(7, 0)
    assert [action.type for action in actions] == ["deal", "undo"]
    await run_alembic(engine, "downgrade", "0001")
    assert await action_count(engine) == 2
    async with engine.begin() as conn:  # foreign keys are on again for the store
        await conn.execute(text("DELETE FROM games WHERE id = 7"))
    assert await action_count(engine) == 0


async def test_a_reference_broken_before_an_upgrade_does_not_stop_it(
    store: Store, engine: AsyncEngine, caplog: pytest.LogCaptureFixture
) -> None:
    """The check after a migration refused a database whose references were broken
    before it (an action of a game no longer there): the server could then never
    start on it. Only what the migration breaks stops it; what was so is said."""
    if engine.dialect.name != "sqlite":
        pytest.skip("PostgreSQL keeps its foreign keys through a migration")
    await run_alembic(engine, "downgrade", "0005")
    await insert_first_game(engine)
    await insert_actions(engine)
    async with engine.connect() as conn:  # as a hand-made change might have left it
        raw = await conn.get_raw_connection()
        driver: Any = raw.driver_connection
        await driver.execute("PRAGMA foreign_keys=OFF")
        await driver.execute("DELETE FROM games WHERE id = 7")
        await driver.commit()
        await driver.execute("PRAGMA foreign_keys=ON")
    with caplog.at_level(logging.WARNING):
        await store.upgrade()
    assert await action_count(engine) == 2  # kept as they were
    assert "2 rows of game_actions refer to rows that are not there" in caplog.text


async def test_schema_status_from_empty_to_current(empty_store: Store) -> None:
    assert await empty_store.schema_status() == "empty"
    with pytest.raises(SchemaOutdated, match="no schema yet"):
        await empty_store.check_schema()
    await empty_store.upgrade()
    assert await empty_store.schema_status() == "current"
    await empty_store.check_schema()
    await empty_store.upgrade()  # idempotent at head
    assert await empty_store.schema_status() == "current"


async def test_unknown_revision_is_outdated_and_newer(store: Store, engine: AsyncEngine) -> None:
    """A revision these migrations do not know is a newer server's: no upgrade reaches
    it, so the check names it without the upgrade command, and so does the status that
    ``/readyz`` asks for."""
    async with engine.begin() as conn:
        await conn.execute(text("UPDATE alembic_version SET version_num = '0000'"))
    with pytest.raises(SchemaNewer, match="revision 0000"):
        await store.schema_status()
    with pytest.raises(SchemaNewer) as caught:
        await store.check_schema()
    assert caught.value.revision == "0000" and "revision 0000" in str(caught.value)
    assert "--migrate" not in str(caught.value)


async def test_an_older_revision_is_outdated_with_the_upgrade_command(
    store: Store, engine: AsyncEngine
) -> None:
    async with engine.begin() as conn:
        await conn.execute(text("UPDATE alembic_version SET version_num = '0001'"))
    with pytest.raises(SchemaOutdated) as caught:
        await store.check_schema()
    assert "revision 0001" in str(caught.value)
    assert "scorpion-server --migrate" in str(caught.value)


async def test_tables_without_revision_are_outdated(
    empty_store: Store, engine: AsyncEngine
) -> None:
    """Not to be migrated (the upgrade would fail on a table that exists): refused as
    another program's, or hand-made (tests/server/test_hosting.py)."""
    async with engine.begin() as conn:
        await conn.run_sync(metadata.create_all)
    assert await empty_store.schema_status() == SchemaStatus.OUTDATED
    with pytest.raises(SchemaForeign, match="no Alembic revision"):
        await empty_store.check_schema()


async def test_queries_without_schema_say_schema(empty_store: Store) -> None:
    with pytest.raises(SchemaOutdated):
        await empty_store.get_game(1)


async def alembic_cli(*args: str, env: dict[str, str]) -> tuple[int, str]:
    """Run the Alembic CLI at the top of the source tree with exactly ``env``."""
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "alembic", *args,
        cwd=ROOT, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    output, _ = await process.communicate()
    return await process.wait(), output.decode()


async def test_cli_upgrades_and_finds_nothing_to_generate(
    database_url: str, empty_store: Store
) -> None:
    """``alembic upgrade head`` and ``alembic check`` in the source tree, as operators run them."""
    environment = os.environ | {"SCORPION_DATABASE_URL": database_url}
    code, output = await alembic_cli("upgrade", "head", env=environment)
    assert code == 0, output
    assert await empty_store.schema_status() == SchemaStatus.CURRENT
    code, output = await alembic_cli("-x", f"url={database_url}", "check", env=dict(os.environ))
    assert code == 0, output
    assert "No new upgrade operations detected" in output


async def test_cli_does_not_migrate_an_sqlite_file_a_server_serves(tmp_path: Path) -> None:
    """``--migrate`` refused a file a server serves, but ``alembic upgrade`` and
    ``downgrade`` took no lock: they changed the schema under the running server."""
    url = f"sqlite+aiosqlite:///{tmp_path}/scorpion.db"
    environment = os.environ | {"SCORPION_DATABASE_URL": url}
    code, output = await alembic_cli("upgrade", "0010", env=environment)
    assert code == 0, output
    serving = SqliteLock(url)
    serving.acquire()  # as a running server holds it
    try:
        for command in ("upgrade", "downgrade"):
            code, output = await alembic_cli(command, "0009", env=environment)
            assert code != 0, output
            assert "a scorpion-server serves" in output and "stop it before migrating" in output
    finally:
        serving.release()
    code, output = await alembic_cli("upgrade", "head", env=environment)  # stopped: it may
    assert code == 0, output


async def test_cli_without_url_names_the_ways_to_give_one() -> None:
    env = {key: value for key, value in os.environ.items() if key != "SCORPION_DATABASE_URL"}
    code, output = await alembic_cli("current", env=env)
    assert code != 0
    assert "-x url=" in output and "SCORPION_DATABASE_URL" in output


async def test_upgrades_at_once_find_the_schema_as_the_one_before_left_it(
    empty_store: Store, database_url: str
) -> None:
    """Three nodes migrating at once: one upgrades, the others wait for it and then find
    nothing to do. On PostgreSQL each read the schema before taking the lock, found it
    empty, and said "schema upgraded" (SQLite's write lock came first already)."""
    # Each waits for the lock as long as an upgrade may take on a loaded machine (its
    # default 5 s was too short 12 in 30 times under heavy load), and every upgrade ends
    # before the stores close: a first failure left the others migrating into closing
    # stores, whose unclosed connections then failed the next test.
    nodes = [Store.connect(database_url, timeout=60) for _ in range(3)]  # on empty_store's
    try:
        found = await asyncio.gather(*(node.upgrade() for node in nodes), return_exceptions=True)
    finally:
        for node in nodes:
            await node.close()
    assert sorted(map(str, found)) == sorted(
        map(str, [SchemaStatus.EMPTY, SchemaStatus.CURRENT, SchemaStatus.CURRENT])
    ), found


@pytest.mark.parametrize(
    ("setting", "names"),
    [
        ('"$user", public', ["ada", "public"]),
        ("Public, Other", ["public", "other"]),
        ('"a,b", "Say ""hi"""', ["a,b", 'Say "hi"']),
    ],
)
def test_a_search_path_is_read_as_postgresql_reads_it(setting: str, names: list[str]) -> None:
    """A quoted schema name holding a comma was read as two names, neither of them there:
    a role without USAGE on it was told no schema of its search path existed."""
    assert schema._search_path(setting, "ada") == names
