"""The real ``python -m server`` process: killed mid-game, started again, the game goes on.

The other server tests run the server inside the test process; here it is a
separate operating-system process, so a kill is a real crash: only what the
database committed survives. Every acknowledged action must be among it
(an action is acknowledged only after its commit), and the game continues
where the last acknowledgement left it, undo history included.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest

from server.app import migrate
from server.config import Settings
from tests.server.client import TIMEOUT, Client

SERVING = re.compile(rb"serving on ws://127\.0\.0\.1:(\d+)/")


def server_command(settings: Settings) -> list[str]:
    command = [sys.executable, "-m", "server", "--port", "0", "--data-dir", settings.data_dir]
    command += [
        "--workers",
        "1",
        "--lost-budget-ms",
        "0",
        "--easy-pool",
        "0",
        "--winnable-pool",
        "0",
    ]
    if settings.database_url:
        command += ["--database-url", settings.database_url]
    return command


START_TIMEOUT = 90.0
"""How long a server process may take to serve: its imports alone took 22 to 54 s on a
machine loaded far beyond its cores (a request's ``TIMEOUT`` was too short 5 in 8 times)."""


@asynccontextmanager
async def server_process(
    settings: Settings,
) -> AsyncIterator[tuple[asyncio.subprocess.Process, str]]:
    """A running server process and its URL; killed at the end if still running."""
    process = await asyncio.create_subprocess_exec(
        *server_command(settings),
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert process.stderr is not None
    try:
        async with asyncio.timeout(START_TIMEOUT):
            while (match := SERVING.search(await process.stderr.readline())) is None:
                assert process.returncode is None, "the server exited before serving"
        yield process, f"ws://127.0.0.1:{int(match.group(1))}/"
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


def board(view: dict[str, Any]) -> Any:
    return view["columns"], view["stock"], view["reserve"], view["foundations"]


async def test_a_killed_server_loses_no_acknowledged_action(settings: Settings) -> None:
    if not settings.is_sqlite:
        await migrate(settings)
    async with server_process(settings) as (process, url):
        tom = await Client.connect(url)
        await tom.register("tom")
        game = (await tom.request("new_game", level="hard", deal=1))["game"]
        assert (await tom.request("move", game=game, v=0, card="7C", to=5))["v"] == 1
        after_move = (await tom.request("open_game", game=game))["view"]
        assert (await tom.request("deal", game=game, v=1))["v"] == 2
        after_deal = (await tom.request("open_game", game=game))["view"]
        process.kill()  # no shutdown: whatever was acknowledged must already be on disk
        await process.wait()
        await tom.close()
    async with server_process(settings) as (process, url):
        again = await Client.connect(url)
        welcome = await again.hello(tom.token)
        assert [(g["game"], g["v"]) for g in welcome["games"]] == [(game, 2)]
        opened = (await again.request("open_game", game=game))["view"]
        assert board(opened) == board(after_deal)
        assert (await again.request("undo", game=game, v=2))["v"] == 3
        undone = (await again.request("open_game", game=game))["view"]
        assert board(undone) == board(after_move)
        await again.close()
        process.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(process.wait(), TIMEOUT) == 0


def descendants(pid: int) -> set[int]:
    """Every live process below ``pid`` (read from /proc)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z":
            children.setdefault(int(fields[1]), []).append(int(entry))
    found, todo = set(), [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.add(child)
            todo.append(child)
    return found


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


async def test_a_killed_server_leaves_no_solver_process(settings: Settings) -> None:
    if not os.path.isdir("/proc"):
        pytest.skip("needs /proc to list the server's processes")
    if not settings.is_sqlite:
        pytest.skip("one store is enough: the solver pool does not depend on it")
    async with server_process(settings) as (process, url):
        zoe = await Client.connect(url)
        await zoe.register("zoe")
        game = (await zoe.request("new_game", level="hard", deal=1))["game"]
        assert (await zoe.request("hint", game=game))["type"] == "hint"  # a worker ran it
        workers = descendants(process.pid)
        assert workers, "the solver's worker processes should run below the server"
        process.kill()
        await zoe.close()
        try:
            async with asyncio.timeout(TIMEOUT):
                while {pid for pid in workers if alive(pid)}:
                    await asyncio.sleep(0.05)
        finally:
            left = {pid for pid in workers if alive(pid)}
            for pid in left:
                os.kill(pid, signal.SIGKILL)  # leave nothing behind, even when failing
        assert not left, f"solver processes outlived their server: {left}"
