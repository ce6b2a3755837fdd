"""Standard streams whose encoding lacks the board's characters: ASCII stand-ins, never a crash."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

from clients.cli.terminal import STAND_IN
from tests.server.conftest import Running

ROOT = Path(__file__).resolve().parents[2]


def scorpion(
    args: list[str], stdin: bytes, env: dict[str, str]
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "clients.cli", *args],
        input=stdin,
        capture_output=True,
        cwd=ROOT,
        env={**os.environ, **env},
        timeout=60,
        check=False,
    )


def test_what_an_encoding_lacks_is_written_as_a_stand_in() -> None:
    assert "10♥ · ⋮ ▒ ä 4♠".encode("ascii", STAND_IN) == b"10H - : # ? 4S"
    assert "10♥ · ä".encode("latin-1", STAND_IN) == "10H · ä".encode("latin-1")


async def test_play_on_an_ascii_output(server: Running, tmp_path: Path) -> None:
    env = {"PYTHONIOENCODING": "ascii", "XDG_CONFIG_HOME": str(tmp_path)}
    env["SCORPION_SERVER"] = server.url
    script = b"ada\nb\xff\n7c 5\nq\n"  # \xff is not ASCII: read as U+FFFD, and play goes on
    args = ["play", "--level", "hard", "--deal", "1"]
    process = await asyncio.to_thread(scorpion, args, script, env)
    assert process.returncode == 0 and process.stderr == b"", process.stderr
    out = process.stdout.decode("ascii")
    assert "     10H      8H      2C      JH      7D      6D      8S\n" in out
    assert "hard - moves 0 - time 0:00 - score 0\n" in out
    assert "unknown command b? (? for help)\nmoved 7C (7 cards) from column 7 to column 5\n" in out


def test_a_message_in_russian_on_an_ascii_output() -> None:
    env = {"PYTHONIOENCODING": "ascii", "XDG_CONFIG_HOME": "/nonexistent"}
    process = scorpion(["--lang", "ru", "play", "--deal", "0"], b"", env)
    assert process.returncode == 2
    assert process.stderr.startswith(b"scorpion: ???????? --deal: '0' ") and b"\n" in process.stderr
