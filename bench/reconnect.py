"""After a restart: many players with unfinished games reconnecting at once.

Builds an SQLite database in a temporary directory: one player plays a game
of ``--log`` (100) actions through the full server (on ``DEAL``, a deal such as
the server draws; a legal move and its undo, alternately, as ``bench.load``
plays), then SQLite copies that player,
game and log ``--players`` times (each copy with a token of its own). The
template server stops as a server does at a restart, writing the game's
snapshot (``server.live``, "Snapshots"), and the copies keep it; with
``--crash`` it is killed instead, and the copies keep the snapshot that the
game's last 50th action carried (with ``--log 149``, 49 actions to replay
after the 100th's: the most a crash leaves); with ``--no-snapshots`` they have none, as for
games stored before snapshots. Then the server starts
afresh on that file, so no game is in its memory, and every player, at once:
connects, says ``hello`` with its token (the welcome lists its unfinished game)
and sends ``open_game``, which has the server read the game and restore its
snapshot (or, without one, read its whole log and replay it through the
engine). A player is playing again when the ``game`` reply arrives.

The clients start a hundred at a time, one turn of their event loop apart
(``STARTED_TOGETHER``), all within the first second or two. Started all in
one turn, every one of them had made its socket before any sent its
handshake, and the server stood idle for the clients' first three seconds:
the convoy of one client process, not of players on machines of their own.

Reported: the time from the first connection to the last player playing
(and to the last connection open), games opened per second, each player's
``open_game`` time (from sending it to the reply) p50 / p99, and the server's
CPU time per player over the whole phase (``SCORPION_BENCH_PYSPY=FILE`` samples
it, as for ``bench.load``).
All the clients run in this process on one core (core 1 when there are
two), the server on the other: on a machine this small the clients'
own handshakes take part of the time, so their CPU time over the phase is
reported too (when it is near the wall time, the clients bound the run, not
the server). They are ``bench.wsclient``'s lean clients, not ``websockets``'
own, which cost as much CPU per connection as the server's whole work for a
returning player did. ``--target echo`` sends the same clients, the same
frames, against the ceiling (``bench.echo``: the same library, subprotocol
and listen backlog as the server, answering each frame with a small map and
reading nothing): what a storm of this many connections costs the stack
alone on this machine. The server's ``hello`` deadline is
lifted for the run (the clients, not the players, are slow to say hello).
A request answered ``unavailable`` (the store's connections all busy past
the database timeout) is resent after 0.5 s, as the protocol asks, and a
connection the server closed before its handshake ended (the server's
handshake deadline, 10 s) is opened again after 0.5 s, as clients do; the
report counts both.

    python -m bench.reconnect [--players 10000] [--log 100] [--within 600] [--database-url URL]
                              [--target server|echo]

With ``--database-url postgresql+asyncpg://...`` the same runs on PostgreSQL, in
a database made beside the one named (``<name>_reconnect``, dropped at the end),
the copies made by PostgreSQL itself.

Those not playing after ``--within`` seconds are given up on and counted.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import secrets
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import asyncpg
import msgpack
from sqlalchemy.engine import URL, make_url
from websockets.asyncio.client import connect
from websockets.typing import Subprotocol

from bench import wsclient
from bench.common import Parser, percentile, run_main
from bench.load import (
    Player,
    cpu_seconds,
    first_move,
    free_port,
    sampled,
    server_command,
    started,
    wait_for_port,
)
from bench.stored import asyncpg_dsn, drop_postgresql
from bench.wsclient import LeanConnection
from protocol import SUBPROTOCOL, encode

__all__ = ["run_reconnect"]

TIMEOUT_S = 600.0
STARTED_TOGETHER = 100
"""Clients started in one turn of the loop; the next hundred start a turn later, so the
first are connecting while the rest start (all within the clients' first second or two)."""
DEAL = 3_141_592_653_589
"""The template game's deal: a number such as the server draws for a new game (from 1 to
2**53, so nearly always from 32000 up, where the deal is laid out by the Mersenne
Twister, not the LCG of the classic deals); every rebuild lays the deal out again."""
_OPTIONS: dict[str, Any] = {"lost_budget_ms": 0, "easy_pool": 0, "winnable_pool": 0}
_OPTIONS |= {"hello_timeout_ms": 600_000, "cache_size": 1_000_000}
SNAPSHOT_COLUMNS = {"snapshot", "snapshot_v"}
FORGET_SNAPSHOTS = "UPDATE games SET snapshot = NULL, snapshot_v = NULL"
COUNT_SNAPSHOTS = "SELECT count(*), max(snapshot_v) FROM games WHERE snapshot IS NOT NULL"


async def _template(url: str, log: int) -> None:
    """One player and one game of ``log`` actions, played through the server."""
    ws = await connect(url, subprotocols=[Subprotocol(SUBPROTOCOL)], compression=None)
    player = Player(ws)
    await player.request("hello", protocol=1, client="bench", locale="en")
    await player.request("register", name="template")
    game = await player.request("new_game", level="hard", deal=DEAL)
    player.game, player.v = game["game"], game["v"]
    await player.play(log, first_move(DEAL))
    await ws.close()


def _copy(path: Path, players: int, snapshots: bool) -> tuple[list[str], int, int | None]:
    """Copy the template player, game and log until there are ``players``: their tokens,
    how many games have a snapshot (none unless ``snapshots``), and its version."""
    tokens = [secrets.token_urlsafe(32) for _ in range(players)]
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA synchronous=OFF")
        conn.execute("BEGIN")
        ((player,),) = conn.execute("SELECT id FROM players").fetchall()
        ((game,),) = conn.execute("SELECT id FROM games").fetchall()
        conn.execute("DELETE FROM tokens")
        stored = [row[1] for row in conn.execute("PRAGMA table_info(games)")]
        if set(stored) >= SNAPSHOT_COLUMNS and not snapshots:
            conn.execute(FORGET_SNAPSHOTS)
        last = players - 1
        series = f"WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {last})"
        conn.execute(
            f"INSERT INTO players (id, name, name_key, created_at) {series}"
            f" SELECT {player} + i, 'again-' || i, 'again-' || i, created_at FROM players, n"
        )
        columns = [row[1] for row in conn.execute("PRAGMA table_info(games)")]
        copied = ", ".join(
            f"{game} + i" if c == "id" else f"{player} + i" if c == "player_id" else c
            for c in columns
        )
        conn.execute(
            f"INSERT INTO games ({', '.join(columns)}) {series} SELECT {copied} FROM games, n"
        )
        columns = [row[1] for row in conn.execute("PRAGMA table_info(game_actions)")]
        copied = ", ".join(f"{game} + i" if c == "game_id" else c for c in columns)
        conn.execute(
            f"INSERT INTO game_actions ({', '.join(columns)}) {series}"
            f" SELECT {copied} FROM game_actions, n ORDER BY i, seq"
        )
        conn.executemany(
            "INSERT INTO tokens (token_hash, player_id, created_at)"
            " SELECT ?, ?, created_at FROM players WHERE id = ?",
            [
                (hashlib.sha256(token.encode()).hexdigest(), player + n, player + n)
                for n, token in enumerate(tokens)
            ],
        )
        conn.execute("COMMIT")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        restored, at = 0, None
        if set(stored) >= SNAPSHOT_COLUMNS:
            ((restored, at),) = conn.execute(COUNT_SNAPSHOTS).fetchall()
    finally:
        conn.close()
    return tokens, restored, at


RETRY_S = 0.5  # a client's pause before resending a request answered ``unavailable``


async def _request(ws: LeanConnection, message: dict[str, Any]) -> tuple[dict[str, Any], int]:
    """The reply to ``message``, resent while the answer is ``unavailable``; and the retries."""
    retries = 0
    while True:
        await ws.send(encode(message))
        while True:
            reply: dict[str, Any] = msgpack.unpackb(await ws.recv(), raw=False)
            if reply.get("re") == message["id"]:
                break
        if reply["type"] != "error":
            return reply, retries
        if reply.get("code") != "unavailable":
            raise RuntimeError(f"{message['type']}: {reply}")
        retries += 1
        await asyncio.sleep(RETRY_S)


async def _come_back(
    port: int, token: str, log: int, echo: bool
) -> tuple[float, float, int, float, LeanConnection]:
    """Connect, hello, open the unfinished game: open_game seconds, when playing, retries,
    when connected. Against the ``echo`` ceiling the same frames go, and the answers are
    not checked."""
    reconnects = 0
    while True:
        try:
            ws = await wsclient.connect("127.0.0.1", port, SUBPROTOCOL)
            break
        except (OSError, TimeoutError):  # the server's handshake deadline, a refusal
            reconnects += 1
            await asyncio.sleep(RETRY_S)
    connected = time.perf_counter()
    hello = {"type": "hello", "id": 1, "protocol": 1, "client": "bench", "locale": "en"}
    welcome, retried = await _request(ws, hello | {"token": token})
    (game,) = [{"game": 1}] if echo else welcome["games"]
    sent = time.perf_counter()
    opened, again = await _request(ws, {"type": "open_game", "id": 2, "game": game["game"]})
    playing = time.perf_counter()
    if not echo and opened["v"] != log:
        raise RuntimeError(f"game {game['game']} opened at v{opened['v']}, not v{log}")
    return playing - sent, playing, reconnects + retried + again, connected, ws


async def _copy_postgresql(
    url: URL, players: int, snapshots: bool
) -> tuple[list[str], int, int | None]:
    """``_copy`` on PostgreSQL: the template player, game and log copied by the database."""
    tokens = [secrets.token_urlsafe(32) for _ in range(players)]
    conn = await asyncpg.connect(asyncpg_dsn(url))
    try:
        async with conn.transaction():
            player = await conn.fetchval("SELECT id FROM players")
            game = await conn.fetchval("SELECT id FROM games")
            await conn.execute("DELETE FROM tokens")
            stored = set(await _columns(conn, "games"))
            if stored >= SNAPSHOT_COLUMNS and not snapshots:
                await conn.execute(FORGET_SNAPSHOTS)
            # Copy i gets id i, or i + 1 from the template's id on (ids are 32-bit for players).
            series = f"generate_series(1, {players - 1}) AS i"
            new_player = f"(i + (i >= {player})::int)"
            await conn.execute(
                "INSERT INTO players (id, name, name_key, created_at)"
                f" SELECT {new_player}, 'again-' || i, 'again-' || i, created_at"
                f" FROM players, {series}"
            )
            columns = await _columns(conn, "games")
            copied = ", ".join(
                f"(i + (i >= {game})::int)" if c == "id" else new_player if c == "player_id" else c
                for c in columns
            )
            await conn.execute(
                f"INSERT INTO games ({', '.join(columns)}) SELECT {copied} FROM games, {series}"
            )
            columns = await _columns(conn, "game_actions")
            copied = ", ".join(
                f"(i + (i >= {game})::int)" if c == "game_id" else c for c in columns
            )
            await conn.execute(
                f"INSERT INTO game_actions ({', '.join(columns)})"
                f" SELECT {copied} FROM game_actions, {series} ORDER BY i, seq"
            )
            ids = [player] + [n + (n >= player) for n in range(1, players)]
            await conn.executemany(
                "INSERT INTO tokens (token_hash, player_id, created_at) VALUES ($1, $2, now())",
                [
                    (hashlib.sha256(token.encode()).hexdigest(), id_)
                    for token, id_ in zip(tokens, ids, strict=True)
                ],
            )
        await conn.execute("VACUUM ANALYZE")
        restored, at = 0, None
        if stored >= SNAPSHOT_COLUMNS:
            counted = await conn.fetchrow(COUNT_SNAPSHOTS)
            assert counted is not None  # an aggregate's one row
            restored, at = counted
    finally:
        await conn.close()
    return tokens, restored, at


async def _columns(conn: asyncpg.Connection, table: str) -> list[str]:
    rows = await conn.fetch(
        "SELECT column_name FROM information_schema.columns WHERE table_name = $1"
        " ORDER BY ordinal_position",
        table,
    )
    return [row[0] for row in rows]


async def _fresh_postgresql(url: URL) -> None:
    await drop_postgresql(url)
    admin = await asyncpg.connect(asyncpg_dsn(url.set(database="postgres")))
    try:
        await admin.execute(f'CREATE DATABASE "{url.database}"')
    finally:
        await admin.close()


async def run_reconnect(
    players: int,
    log: int,
    within: float = TIMEOUT_S,
    database_url: str | None = None,
    source: str | None = None,
    wrapper: list[str] | None = None,
    timed: Callable[[int], contextlib.AbstractContextManager[None]] | None = None,
    target: str = "server",
    snapshots: bool = True,
    crash: bool = False,
) -> dict[str, Any]:
    """One storm of ``players`` on SQLite, or in a database beside ``database_url``;
    or, ``target="echo"``, the same clients' storm against the ceiling (``bench.echo``).
    Without ``snapshots`` the games are stored with none: each is rebuilt from its whole
    log. With ``crash`` the template's server is killed (SIGKILL) after its last
    action, not stopped: its game keeps only the snapshot its actions' commits carried.

    As ``bench.load.run_load``: ``source``, a tree whose server is run instead of
    this checkout's; ``wrapper``, a command the storm's server runs under; and
    ``timed(pid)``, a context entered around the storm instead of ``sampled``.
    """
    if target == "echo":
        tokens = [secrets.token_urlsafe(32) for _ in range(players)]
        port = free_port()
        command = [*(wrapper or []), sys.executable, "-m", "bench.echo", "--port", str(port)]
        report = await _storm(command, port, tokens, log, within, True, source, timed, wrapper)
        return report | {"store": "none", "target": "echo"}
    made = None
    if database_url is not None:
        base = make_url(database_url)
        made = base.set(database=f"{base.database}_reconnect")
        await _fresh_postgresql(made)
    try:
        with tempfile.TemporaryDirectory() as data:
            path = Path(data) / "reconnect.db"
            url = f"sqlite+aiosqlite:///{path}"
            if made is not None:
                url = made.render_as_string(hide_password=False)
            port = free_port()
            with started(server_command(port, data, url, _OPTIONS, source), source) as template:
                await wait_for_port(port, time.monotonic() + 30)
                await _template(f"ws://127.0.0.1:{port}/", log)
                if crash:
                    template.kill()
                    template.wait()
            if made is None:
                tokens, restored, at = _copy(path, players, snapshots)
            else:
                tokens, restored, at = await _copy_postgresql(made, players, snapshots)
            port = free_port()
            command = [*(wrapper or []), *server_command(port, data, url, _OPTIONS, source)]
            report = await _storm(command, port, tokens, log, within, False, source, timed, wrapper)
            store = "sqlite" if made is None else "postgresql"
            return report | {"store": store, "snapshots": restored, "snapshot_v": at}
    finally:
        if made is not None:
            await drop_postgresql(made)


async def _storm(
    command: list[str],
    port: int,
    tokens: list[str],
    log: int,
    within: float,
    echo: bool,
    source: str | None,
    timed: Callable[[int], contextlib.AbstractContextManager[None]] | None,
    wrapper: list[str] | None,
) -> dict[str, Any]:
    """Every player of ``tokens`` coming back at once to the server ``command`` starts
    (under ``wrapper``, such as valgrind, it may take minutes to start)."""
    with started(command, source) as server:
        await wait_for_port(port, time.monotonic() + (600 if wrapper else 30))
        with (timed or sampled)(server.pid):
            user, system = cpu_seconds(server.pid)
            main = sum(cpu_seconds(server.pid, server.pid))  # the event loop's thread
            clients = time.process_time()
            began = time.perf_counter()
            tasks = []
            for start in range(0, len(tokens), STARTED_TOGETHER):
                for token in tokens[start : start + STARTED_TOGETHER]:
                    tasks.append(asyncio.create_task(_come_back(port, token, log, echo)))
                await asyncio.sleep(0)  # let those begin before making more
            done, pending = await asyncio.wait(tasks, timeout=within)
            user_after, system_after = cpu_seconds(server.pid)
            main = sum(cpu_seconds(server.pid, server.pid)) - main
            clients = time.process_time() - clients
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        results = [task.result() for task in done]  # a failure other than a retry raises
        await asyncio.gather(*(ws.close() for *_figures, ws in results))
    opens = sorted(result[0] * 1000 for result in results)
    cpu = user_after - user + system_after - system
    players = len(tokens)
    return {
        "target": "server",
        "players": players,
        "log": log,
        "playing": len(results),
        "within_s": within,
        "all_playing_s": None if pending else round(max(r[1] for r in results) - began, 2),
        "all_connected_s": round(max((r[3] for r in results), default=began) - began, 2),
        "open_p50_ms": round(statistics.median(opens), 1) if opens else None,
        "open_p99_ms": round(percentile(opens, 0.99), 1) if opens else None,
        "cpu_s": round(cpu, 1),
        "cpu_us": round(cpu / max(len(results), 1) * 1e6),
        "loop_us": round(main / max(len(results), 1) * 1e6),
        "clients_cpu_s": round(clients, 1),
        "clients_us": round(clients / max(len(results), 1) * 1e6),
        "retries": sum(result[2] for result in results),
    }


def format_reconnect(report: dict[str, Any]) -> str:
    echo = report["target"] == "echo"
    players = report["players"]
    if echo:
        head = f"echo: {players:,} clients, as many as players, "
    else:
        head = f"{report['store']}: {players:,} {_plural(players, 'player')} with unfinished games "
        head += f"of {report['log']} actions "
        restored = report.get("snapshots", 0)
        at = report.get("snapshot_v")
        if not restored:
            head += "and no snapshots (each rebuilt from its whole log) "
        elif restored == players and at == report["log"]:
            head += "with snapshots (as after a restart) "
        elif restored == players:
            head += f"with snapshots of version {at} (as after a crash) "
        else:
            head += f"({restored:,} with a snapshot) "
    if report["all_playing_s"] is not None:
        games_per_s = players / report["all_playing_s"]
        what = "answered" if echo else "playing"
        head += f"reconnecting at once: all {what} after {report['all_playing_s']} s "
        head += f"({games_per_s:,.0f} {'clients' if echo else 'games'}/s; the last connection "
        head += f"open after {report['all_connected_s']} s)"
    else:
        head += f"reconnecting at once: {report['playing']:,} playing after {report['within_s']} s"
    second = "second request" if echo else "open_game"
    return (
        f"{head}, {second} p50 {report['open_p50_ms']} ms, p99 {report['open_p99_ms']} ms, "
        f"{report['cpu_s']} s of server CPU ({report['cpu_us']:,} us per "
        f"{'client' if echo else 'player playing'}, "
        f"{report['loop_us']:,} us of it on the main thread; the clients "
        f"{report['clients_cpu_s']} s on their core, {report['clients_us']:,} us each), "
        f"{report['retries']:,} connections or requests tried again"
        f"{'' if echo else ' (by those playing)'}"
    )


def _plural(count: int, word: str) -> str:
    return word if count == 1 else f"{word}s"


def _main(argv: Sequence[str] | None) -> int:
    parser = Parser(prog="python -m bench.reconnect", description=__doc__)
    parser.add_argument("--players", type=int, default=10_000)
    parser.add_argument("--log", type=int, default=100, help="actions in each unfinished game")
    parser.add_argument("--within", type=float, default=TIMEOUT_S, help="seconds to wait at most")
    parser.add_argument(
        "--database-url",
        help="PostgreSQL (postgresql+asyncpg://...): the database is made beside this one",
    )
    parser.add_argument(
        "--no-snapshots",
        action="store_true",
        help="store the games without snapshots: each rebuilt from its whole log",
    )
    parser.add_argument(
        "--crash",
        action="store_true",
        help="kill the template's server (SIGKILL) after its last action: only the snapshot"
        " its actions' commits carried (every 50th action) is kept",
    )
    parser.add_argument(
        "--target",
        choices=("server", "echo"),
        default="server",
        help="echo: the same clients' storm against the ceiling (bench.echo)",
    )
    args = parser.parse_args(argv)
    if args.database_url and not args.database_url.startswith("postgresql"):
        parser.error("--database-url takes a PostgreSQL URL (SQLite is the default)")
    if args.players < 1 or args.log < 1:
        parser.error("--players and --log are at least 1")
    if args.target == "echo" and args.database_url:
        parser.error("--target echo has no store: leave out --database-url")
    report = asyncio.run(
        run_reconnect(
            args.players,
            args.log,
            args.within,
            args.database_url,
            target=args.target,
            snapshots=not args.no_snapshots,
            crash=args.crash,
        )
    )
    print(format_reconnect(report))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return run_main("python -m bench.reconnect", _main, argv)


if __name__ == "__main__":
    sys.exit(main())
