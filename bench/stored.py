"""Cost that does not grow with the database: an action with many stored games against few.

Fills two SQLite files in a temporary directory (or, with ``--database-url``,
two PostgreSQL databases made beside the one that URL names, dropped at the
end) with ``--few`` (100) and ``--many`` (1,000,000) stored games, each of
its own player, with ``--log`` (5) actions in each game's log; one game in
ten is unfinished, the others ended (resigned). The rows are made by the
database itself (SQLite: a recursive ``WITH`` feeding ``INSERT ... SELECT``
in one transaction without fsync; PostgreSQL: ``generate_series``, then
``VACUUM ANALYZE``; the fill is set-up, not measured), in key order, as a
server that ran for a long time would have them, indexes included. Then,
alternately for ``--rounds`` rounds, ``bench.load`` runs the full server on
each: new players register and play in new games, as on any day, while the
stored games sit in the same tables and indexes. Medians are printed per
database.

The stored games' logs are not replayed (nobody opens them): they are there
for the size of the tables and indexes each action's statements go through.

    python -m bench.stored [--many 1000000] [--few 100] [--log 5] [--rounds 3]
                           [--players 1] [--actions 2000] [--database-url URL]
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import asyncpg
from sqlalchemy.engine import URL, make_url

from bench.common import Parser, at_least, run_main
from bench.load import format_load, run_load

__all__ = ["fill", "run_stored"]

_WHEN = "2026-01-01 00:00:00.000000"  # SQLite's stored form of an aware UTC time


def fill(path: Path, games: int, log: int) -> float:
    """Migrate ``path`` and store ``games`` games of ``log`` actions each; seconds taken."""
    started = time.perf_counter()
    url = f"sqlite+aiosqlite:///{path}"
    migrate = [sys.executable, "-m", "server", "--database-url", url, "--migrate"]
    migrate += ["--data-dir", str(path.parent), "--log-level", "WARNING"]
    subprocess.run(migrate, check=True)
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA synchronous=OFF")
        conn.execute("BEGIN")
        series = (
            f"WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {games})"
        )
        conn.execute(
            f"INSERT INTO players (id, name, name_key, created_at) {series}"
            f" SELECT i, 'stored-' || i, 'stored-' || i, '{_WHEN}' FROM n"
        )
        ended = "i % 10 <> 0"
        conn.execute(
            "INSERT INTO games (id, player_id, level, deal, status, version, moves, score,"
            " time_ms, hints, undos, suits_removed, created_at, updated_at, finished_at,"
            f" lost_reason, paused, winnable, deal_chosen) {series}"
            f" SELECT i, i, 'hard', CAST(i % 5000 + 1 AS TEXT),"
            f" CASE WHEN {ended} THEN 'lost' ELSE 'active' END, {log}, {log}, {5 * log},"
            f" {1000 * log}, 0, 0, 0, '{_WHEN}', '{_WHEN}',"
            f" CASE WHEN {ended} THEN '{_WHEN}' END, CASE WHEN {ended} THEN 'resigned' END,"
            " 0, 0, 0 FROM n"
        )
        seqs = f"s(seq) AS (SELECT 1 UNION ALL SELECT seq + 1 FROM s WHERE seq < {log})"
        conn.execute(
            "INSERT INTO game_actions (game_id, seq, type, card, to_col, t, created_at)"
            f" {series}, {seqs}"
            f" SELECT i, seq, 'move', '4H', 7, 1000 * seq, '{_WHEN}' FROM n, s ORDER BY i, seq"
        )
        conn.execute("COMMIT")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
    return time.perf_counter() - started


async def fill_postgresql(url: URL, games: int, log: int) -> float:
    """Make database ``url.database`` afresh, migrate it, store ``games`` games; seconds."""
    started = time.perf_counter()
    admin = await asyncpg.connect(asyncpg_dsn(url.set(database="postgres")))
    try:
        await admin.execute(f'DROP DATABASE IF EXISTS "{url.database}" WITH (FORCE)')
        await admin.execute(f'CREATE DATABASE "{url.database}"')
    finally:
        await admin.close()
    address = url.render_as_string(hide_password=False)
    migrate = [sys.executable, "-m", "server", "--database-url", address, "--migrate"]
    subprocess.run([*migrate, "--log-level", "WARNING"], check=True)
    conn = await asyncpg.connect(asyncpg_dsn(url))
    try:
        when = "timestamptz '2026-01-01 00:00:00+00'"
        ended = "i % 10 <> 0"
        series = f"generate_series(1, {games}) AS i"
        async with conn.transaction():
            await conn.execute(
                "INSERT INTO players (id, name, name_key, created_at)"
                f" SELECT i, 'stored-' || i, 'stored-' || i, {when} FROM {series}"
            )
            await conn.execute(
                "INSERT INTO games (id, player_id, level, deal, status, version, moves, score,"
                " time_ms, hints, undos, suits_removed, created_at, updated_at, finished_at,"
                " lost_reason, paused, winnable, deal_chosen)"
                f" SELECT i, i, 'hard', (i % 5000 + 1)::text,"
                f" CASE WHEN {ended} THEN 'lost' ELSE 'active' END, {log}, {log}, {5 * log},"
                f" {1000 * log}, 0, 0, 0, {when}, {when},"
                f" CASE WHEN {ended} THEN {when} END, CASE WHEN {ended} THEN 'resigned' END,"
                f" false, false, false FROM {series}"
            )
            await conn.execute(
                "INSERT INTO game_actions (game_id, seq, type, card, to_col, t, created_at)"
                f" SELECT i, seq, 'move', '4H', 7, 1000 * seq, {when}"
                f" FROM {series}, generate_series(1, {log}) AS seq ORDER BY i, seq"
            )
        await conn.execute("VACUUM ANALYZE")
    finally:
        await conn.close()
    return time.perf_counter() - started


async def drop_postgresql(url: URL) -> None:
    admin = await asyncpg.connect(asyncpg_dsn(url.set(database="postgres")))
    try:
        await admin.execute(f'DROP DATABASE IF EXISTS "{url.database}" WITH (FORCE)')
    finally:
        await admin.close()


def asyncpg_dsn(url: URL) -> str:
    """``url`` as asyncpg takes it (no SQLAlchemy driver name)."""
    return url.set(drivername="postgresql").render_as_string(hide_password=False)


async def run_stored(
    many: int,
    few: int,
    log: int,
    rounds: int,
    players: int,
    actions: int,
    database_url: str | None = None,
) -> list[str]:
    with tempfile.TemporaryDirectory() as folder:
        urls: dict[int, str] = {}
        made: list[URL] = []
        try:
            for games in (few, many):
                if database_url is None:
                    path = Path(folder) / f"stored-{games}.db"
                    seconds = fill(path, games, log)
                    size = f"{os.path.getsize(path) / 2**20:,.0f} MiB"
                    urls[games] = f"sqlite+aiosqlite:///{path}"
                else:
                    base = make_url(database_url)
                    url = base.set(database=f"{base.database}_stored_{games}")
                    made.append(url)
                    seconds = await fill_postgresql(url, games, log)
                    size = f"database {url.database}"
                    urls[games] = url.render_as_string(hide_password=False)
                print(f"filled {games:,} games in {seconds:.1f} s ({size})", file=sys.stderr)
            reports: dict[int, list[dict[str, Any]]] = {games: [] for games in urls}
            order = list(urls)
            for round_ in range(rounds):
                for games in order[round_ % 2 :] + order[: round_ % 2]:
                    report = await run_load(players, actions, urls[games])
                    print(f"{games:,} stored games: {format_load(report)}", file=sys.stderr)
                    reports[games].append(report)
        finally:
            for url in made:
                await drop_postgresql(url)
    lines = [
        "| stored games | actions/s | server CPU per action | p50 / p99 |",
        "|---|---|---|---|",
    ]
    medians: dict[int, dict[str, float]] = {}
    for games, each in reports.items():
        med = {k: statistics.median(r[k] for r in each) for k in _FIGURES}
        medians[games] = med
        lines.append(
            f"| {games:,} | {med['actions_per_s']:,.0f} | {med['cpu_us']:,.0f} us "
            f"| {med['median_ms']:.2f} / {med['p99_ms']:.2f} ms |"
        )
    ratio = medians[many]["cpu_us"] / medians[few]["cpu_us"]
    lines.append("")
    lines.append(f"CPU per action with {many:,} stored games: {ratio:.2f}x that with {few:,}.")
    return lines


_FIGURES = ("actions_per_s", "cpu_us", "median_ms", "p99_ms")


def _main(argv: Sequence[str] | None) -> int:
    parser = Parser(prog="python -m bench.stored", description=__doc__)
    parser.add_argument("--many", type=at_least(1), default=1_000_000)
    parser.add_argument("--few", type=at_least(1), default=100)
    parser.add_argument(
        "--log", type=at_least(1), default=5, help="actions in each stored game's log"
    )
    parser.add_argument("--rounds", type=at_least(1), default=3)
    parser.add_argument("--players", type=at_least(1), default=1)
    parser.add_argument("--actions", type=at_least(1), default=2000)
    parser.add_argument(
        "--database-url",
        help="PostgreSQL (postgresql+asyncpg://...): the two databases are made beside this one",
    )
    args = parser.parse_args(argv)
    lines = asyncio.run(
        run_stored(
            args.many,
            args.few,
            args.log,
            args.rounds,
            args.players,
            args.actions,
            args.database_url,
        )
    )
    print("\n".join(lines))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return run_main("python -m bench.stored", _main, argv)


if __name__ == "__main__":
    sys.exit(main())
