"""``python -m clients.cli`` as a process: script mode on a pipe, the config under XDG."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

from tests.server.conftest import Running

ROOT = Path(__file__).resolve().parents[2]


async def scorpion(*args: str, stdin: str, env: dict[str, str]) -> tuple[int, str]:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "clients.cli",
        *args,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        cwd=ROOT,
        env=env,
    )
    out, _ = await asyncio.wait_for(process.communicate(stdin.encode()), 30)
    assert process.returncode is not None
    return process.returncode, out.decode()


async def test_a_piped_script(server: Running, tmp_path: Path) -> None:
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path), "SCORPION_SERVER": server.url}
    env.pop("NO_COLOR", None)
    code, out = await scorpion(
        "play", "--level", "hard", "--deal", "1", stdin="ada\n7c 5\nq\n", env=env
    )
    assert code == 0, out
    assert (tmp_path / "scorpion" / "credentials.json").exists()
    assert "\x1b[" not in out  # not a terminal: plain text
    assert "moved 7♣ (7 cards) from column 7 to column 5" in out
    code, out = await scorpion("games", stdin="", env=env)
    assert code == 0 and "playing" in out
