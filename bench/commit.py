"""The store alone: CPU time of one durable commit at a time, without the server.

Creates a player and a game in a fresh SQLite file (or on the PostgreSQL
database of ``--database-url``), then commits ``--commits`` actions to that
game one after another through ``Store.commit`` and prints the wall time and
this process's user and kernel CPU time per commit (``getrusage``: the
database's own processes are not counted). This is the fixed cost a lone
action pays, which group commit shares out under load.

    python -m bench.commit [--commits 2000] [--database-url URL]
"""

from __future__ import annotations

import asyncio
import os
import resource
import sys
import tempfile
import time
from collections.abc import Sequence

from bench.common import Parser, at_least, database_url, run_main
from server.store import GameWrite, Store
from server.store.records import NewAction, Progress

__all__ = ["run_commits"]


def _cpu() -> tuple[float, float]:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime, usage.ru_stime


async def run_commits(commits: int, database_url: str | None) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as folder:
        store = Store.connect(database_url or f"sqlite+aiosqlite:///{folder}/bench.db")
        try:
            await store.upgrade()
            player, _token = await store.create_player("bench-" + os.urandom(4).hex())
            game = await store.create_game(player.id, "hard", 1)
            version = game.version
            user, system = _cpu()
            started = time.perf_counter()
            for n in range(commits):
                action = NewAction("deal", t=n)
                write = GameWrite(game.id, version, Progress(time_ms=n), action, str(n))
                version = (await store.commit(write)).game.version
            elapsed = time.perf_counter() - started
            user_after, system_after = _cpu()
        finally:
            await store.close()
    return {
        "wall_us": elapsed / commits * 1e6,
        "user_us": (user_after - user) / commits * 1e6,
        "system_us": (system_after - system) / commits * 1e6,
    }


def _main(argv: Sequence[str] | None) -> int:
    parser = Parser(prog="python -m bench.commit", description=__doc__)
    parser.add_argument("--commits", type=at_least(1), default=2000)
    parser.add_argument("--database-url", type=database_url, default=None)
    args = parser.parse_args(argv)
    report = asyncio.run(run_commits(args.commits, args.database_url))
    store = "postgresql" if args.database_url else "sqlite"
    print(
        f"{store}: {args.commits:,} lone commits: {report['wall_us']:,.0f} us wall, "
        f"{report['user_us']:,.0f} us user + {report['system_us']:,.0f} us kernel CPU each"
    )
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return run_main("python -m bench.commit", _main, argv)


if __name__ == "__main__":
    sys.exit(main())
