"""Standard streams whose encoding lacks the board's characters: ASCII stand-ins, never a crash."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from clients.cli.terminal import STAND_IN, locale_encoding
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


def _locale_env(tmp_path: Path, server: Running, **env: str) -> dict[str, str]:
    """The environment of a user who set ``env`` (and no Python encoding of their own)."""
    cleared = {name: "" for name in ("LANG", "LC_ALL", "LC_CTYPE", "LC_MESSAGES")}
    for name in ("PYTHONIOENCODING", "PYTHONUTF8"):
        cleared[name] = ""
    return {**cleared, "XDG_CONFIG_HOME": str(tmp_path), "SCORPION_SERVER": server.url, **env}


def _scorpion_in(
    args: list[str], stdin: bytes, env: dict[str, str]
) -> subprocess.CompletedProcess[bytes]:
    """``scorpion`` with ``env`` as given: variables set to "" are left out, as unset."""
    whole = {name: value for name, value in {**os.environ, **env}.items() if value != ""}
    return subprocess.run(
        [sys.executable, "-m", "clients.cli", *args],
        input=stdin,
        capture_output=True,
        cwd=ROOT,
        env=whole,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize(
    "env", [{"LC_ALL": "C"}, {"LANG": "C"}, {"LC_CTYPE": "POSIX"}, {}], ids=str
)
async def test_the_c_locale_gets_the_stand_ins(
    server: Running, tmp_path: Path, env: dict[str, str]
) -> None:
    """Python writes UTF-8 under the C locale (its UTF-8 mode), but the user's terminal is
    ASCII: the suits are the letters a move is typed with, as docs/cli.md says."""
    args = ["play", "--level", "hard", "--deal", "1"]
    process = await asyncio.to_thread(
        _scorpion_in, args, b"ada\n7c 5\nq\n", _locale_env(tmp_path, server, **env)
    )
    assert process.returncode == 0 and process.stderr == b"", process.stderr
    out = process.stdout.decode("ascii")  # nothing but ASCII
    assert "     10H      8H      2C      JH      7D      6D      8S\n" in out
    assert "hard - moves 0 - time 0:00 - score 0\n" in out


@pytest.mark.parametrize(
    "env",
    [
        {"LC_ALL": "C.UTF-8"},
        {"LANG": "C.UTF-8"},
        {"LC_ALL": "C", "PYTHONUTF8": "1"},  # asked for by the user: kept
        {"LC_ALL": "C", "PYTHONIOENCODING": "utf-8"},
    ],
    ids=str,
)
async def test_a_utf8_locale_gets_the_suit_symbols(
    server: Running, tmp_path: Path, env: dict[str, str]
) -> None:
    env = _locale_env(tmp_path, server, **env)
    args = ["play", "--level", "hard", "--deal", "1"]
    process = await asyncio.to_thread(_scorpion_in, args, b"ada\nq\n", env)
    assert process.returncode == 0 and process.stderr == b"", process.stderr
    assert "     10♥      8♥      2♣      J♥      7♦      6♦      8♠\n" in process.stdout.decode()


async def test_json_under_the_c_locale_keeps_every_letter(server: Running, tmp_path: Path) -> None:
    """JSON escapes what the output cannot hold (``\\u00e4``) rather than losing it to ``?``."""
    env = _locale_env(tmp_path, server, LC_ALL="C")
    args = ["--json", "--lang", "fi", "play", "--level", "hard", "--deal", "1"]
    process = await asyncio.to_thread(_scorpion_in, args, b"ada\nq\n", env)
    assert process.returncode == 0 and process.stderr == b"", process.stderr
    lines = [json.loads(line) for line in process.stdout.decode("ascii").splitlines()]
    texts = [line["text"] for line in lines if line.get("type") == "notice"]
    assert texts[0].startswith("rekisteröity nimellä ada; "), texts


# Locales this machine lacks (the C library cannot load them): their names still say UTF-8.
@pytest.mark.parametrize(
    "env",
    [
        {"LANG": "ru_RU.UTF-8"},
        {"LC_ALL": "fi_FI.UTF-8"},
        {"LC_CTYPE": "ru_RU.utf8"},
        {"LC_CTYPE": "fi_FI.UTF-8", "LANG": "C"},
        {"LANG": "xx_XX.UTF-8"},
    ],
    ids=str,
)
async def test_a_utf8_locale_the_machine_lacks_gets_every_letter(
    server: Running, tmp_path: Path, env: dict[str, str]
) -> None:
    """The terminal's encoding is the one the user's locale names, installed or not."""
    env = _locale_env(tmp_path, server, **env)
    args = ["--lang", "ru", "play", "--level", "hard", "--deal", "1"]
    process = await asyncio.to_thread(_scorpion_in, args, b"ada\nq\n", env)
    assert process.returncode == 0 and process.stderr == b"", process.stderr
    out = process.stdout.decode()
    assert "     10♥      8♥      2♣      J♥      7♦      6♦      8♠\n" in out
    assert " · ходы 0 · " in out, out


@pytest.mark.parametrize(
    "env",
    [
        {"LC_ALL": "C", "LANG": "ru_RU.UTF-8"},  # LC_ALL wins
        {"LC_CTYPE": "POSIX", "LANG": "fi_FI.UTF-8"},  # LC_CTYPE before LANG
        {"LANG": "ru_RU"},  # no encoding named: nothing beyond ASCII is sure
    ],
    ids=str,
)
async def test_a_locale_naming_no_utf8_stays_ascii(
    server: Running, tmp_path: Path, env: dict[str, str]
) -> None:
    env = _locale_env(tmp_path, server, **env)
    args = ["--lang", "ru", "play", "--level", "hard", "--deal", "1"]
    process = await asyncio.to_thread(_scorpion_in, args, b"ada\nq\n", env)
    assert process.returncode == 0 and process.stderr == b"", process.stderr
    out = process.stdout.decode("ascii")
    assert "     10H      8H      2C      JH      7D      6D      8S\n" in out


async def test_a_locale_the_machine_lacks_names_another_encoding(
    server: Running, tmp_path: Path
) -> None:
    env = _locale_env(tmp_path, server, LANG="ru_RU.KOI8-R")
    args = ["--lang", "ru", "play", "--level", "hard", "--deal", "1"]
    process = await asyncio.to_thread(_scorpion_in, args, b"ada\nq\n", env)
    assert process.returncode == 0 and process.stderr == b"", process.stderr
    out = process.stdout.decode("koi8-r")
    # KOI8-R has no suit symbols
    assert "     10H      8H      2C      JH      7D      6D      8S\n" in out
    assert " · ходы 0 · " in out, out


def test_the_encoding_a_locale_names() -> None:
    assert locale_encoding("ru_RU.UTF-8") == locale_encoding("fi_FI.utf8") == "utf-8"
    assert locale_encoding("sr_RS.UTF-8@latin") == "utf-8"
    assert locale_encoding("ru_RU.KOI8-R") == "koi8-r"
    assert locale_encoding("fi_FI.ISO-8859-15") == "iso8859-15"
    for name in ("C", "POSIX", "", "ru_RU", "fi_FI.no-such-codeset"):
        assert locale_encoding(name) == "ascii", name


# codecs Python knows that are no text encodings (rot13, base64...), or text encodings that
# cannot write a terminal's ASCII as ASCII (UTF-16), or with a stand-in (idna), or at all
NO_TERMINAL_ENCODINGS = ["rot13", "base64", "hex", "zlib", "uu", "bz2", "idna", "undefined"]
NO_TERMINAL_ENCODINGS += ["UTF-16", "UTF-16LE", "UTF-32", "UTF-7", "punycode", "cp037"]


@pytest.mark.parametrize("codeset", NO_TERMINAL_ENCODINGS)
def test_a_codeset_that_is_no_terminal_encoding_is_ascii(codeset: str) -> None:
    assert locale_encoding(f"ru_RU.{codeset}") == "ascii"


@pytest.mark.parametrize("codeset", ["rot13", "zlib", "idna", "undefined", "UTF-16"])
def test_a_locale_naming_no_terminal_encoding_writes_ascii(codeset: str, tmp_path: Path) -> None:
    """``LANG=ru_RU.rot13``: Python knows a codec of that name, which is no text
    encoding; the client ended in a traceback (or silently, or wrote UTF-16)."""
    cleared = {name: "" for name in ("LC_ALL", "LC_CTYPE", "PYTHONIOENCODING", "PYTHONUTF8")}
    env = {**cleared, "LANG": f"ru_RU.{codeset}", "XDG_CONFIG_HOME": str(tmp_path)}
    version = _scorpion_in(["--version"], b"", env)
    assert (version.returncode, version.stderr) == (0, b""), version
    assert version.stdout.decode("ascii").startswith("scorpion")
    refused = _scorpion_in(["--lang", "ru", "play", "--deal", "0"], b"", env)
    assert refused.returncode == 2 and refused.stderr.startswith(b"scorpion: ???"), refused
    assert refused.stderr.decode("ascii").endswith("\n"), refused


@pytest.mark.parametrize("command", [["--help"], ["play", "--level", "hard", "--deal", "1"]])
async def test_output_to_a_pipe_whose_reader_left_ends_quietly_with_141(
    server: Running, tmp_path: Path, command: list[str]
) -> None:
    """``scorpion ... | true``: exit status 141, as the help's list says and a shell's own
    tools do, whether the help is cut short or a game's board is."""
    read, write = os.pipe()
    os.close(read)  # the reader has gone before the first write
    env = {"XDG_CONFIG_HOME": str(tmp_path), "SCORPION_SERVER": server.url}
    try:
        done = await asyncio.to_thread(
            subprocess.run,
            [sys.executable, "-m", "clients.cli", *command],
            input=b"ada\nq\n",
            stdout=write,
            stderr=subprocess.PIPE,
            cwd=ROOT,
            env={**os.environ, **env},
            timeout=60,
            check=False,
        )
    finally:
        os.close(write)
    assert (done.returncode, done.stderr) == (141, b""), done
