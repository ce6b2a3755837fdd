"""Hostile input, local and from a server, and what the client does with it.

Local trouble (a credentials file that is a FIFO, ``/dev/zero`` or nested
thousands deep; ``--help`` into ``/dev/full``; standard input closed; URLs
no resolver takes), a server that sends what JSON cannot hold, escape
sequences, catch-ups that skip versions or a clock push right behind a
reply, a server that goes away while the player types, and a script fast
enough to be rate-limited. Without these checks each would end in a
traceback line, a hang, a wrong board or a stopped clock.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import io
import json
import os
import re
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import msgpack
import pytest
from websockets.asyncio.server import ServerConnection, serve
from websockets.typing import Subprotocol

from clients.cli import config
from clients.cli.__main__ import main
from clients.cli.app import run
from clients.cli.board import Board
from clients.cli.commands import CommandError, parse
from clients.cli.connection import Connection, Reply
from clients.cli.game import MAX_FETCHES, GameSession
from clients.cli.options import parse_args
from clients.cli.render import Style, render_status
from clients.cli.replay import _finish
from clients.cli.terminal import Terminal, complain, json_line, printable
from protocol import SUBPROTOCOL
from protocol.shapes import EXAMPLE_VIEW
from server.app import ScorpionServer
from tests.cli.conftest import CliRunner
from tests.server.conftest import Running, quiet_settings

ROOT = Path(__file__).resolve().parents[2]
SECONDS = 20  # far more than any run here needs: a hang fails the test instead


def script(*args: str, stdin: str = "", **env: str) -> subprocess.CompletedProcess[str]:
    """``python -m clients.cli ARGS`` as a user runs it."""
    return subprocess.run(
        [sys.executable, "-m", "clients.cli", *args],
        input=stdin,
        capture_output=True,
        cwd=ROOT,
        env={**os.environ, **env},
        text=True,
        timeout=60,
        check=False,
    )


# -- the credentials file -----------------------------------------------------


@pytest.mark.parametrize("kind", ["fifo", "zero", "deep", "huge"])
def test_a_credentials_file_that_is_no_file_is_named_not_read(kind: str, tmp_path: Path) -> None:
    """A FIFO would block, /dev/zero fill the memory, deep nesting raise RecursionError."""
    path = tmp_path / "credentials.json"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "zero":
        path.symlink_to("/dev/zero")
    elif kind == "deep":
        path.write_text("[" * 100_000 + "]" * 100_000)
    else:
        path.write_text(json.dumps({"servers": {}, "pad": "x" * (config.MAX_FILE_BYTES + 1)}))
    with pytest.raises(config.Malformed) as caught:
        config.load("ws://a", tmp_path)
    reason = {
        "fifo": "not a regular file",
        "zero": "not a regular file",
        "deep": "not JSON (nested too deep)",
        "huge": f"larger than {config.MAX_FILE_BYTES} bytes",
    }[kind]
    assert caught.value.reason == reason


@pytest.mark.parametrize(
    ("entry", "starts"),
    [
        ({"token": "x"}, "The player kept for {url} (its entry had no name)"),
        ({"token": "x", "name": "   "}, "The player kept for {url} (its entry had no name)"),
        ({"token": "x", "name": "\x1b]0;owned\x07"}, "'\\x1b]0;owned\\x07' is no longer"),
        ({"token": "x", "name": "a\nb"}, "'a\\nb' is no longer the player kept"),
    ],
)
async def test_a_replaced_entry_without_a_name_is_said_without_one(
    cli: CliRunner, config_dir: Path, server: Running, entry: dict[str, str], starts: str
) -> None:
    """An entry written by hand (or by another program) with a token and no name: its
    replacement said " is no longer the player kept ...; to play as  again". A name
    holding a terminal's escape sequence was written out as it was."""
    path = config.credentials_path(config_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    key = server.url.rstrip("/")
    path.write_text(json.dumps({"servers": {key: entry}}), encoding="utf-8")
    code, out = await cli("register", "dee")
    assert code == 0, out
    said = out.splitlines()[-1]
    assert said.startswith(starts.format(url=server.url)), out
    assert "as  " not in said and "\x1b" not in out, said


async def test_registering_another_name_keeps_the_replaced_token_in_sight(
    cli: CliRunner, config_dir: Path, server: Running
) -> None:
    """One player per server is stored: the one replaced is kept in the file, not lost.

    Nor printed: a token on the screen (or in a log of the output) is a
    token anyone reading it can play with.
    """
    assert (await cli("register", "ada"))[0] == 0
    ada = config.load(server.url, config_dir)
    assert ada is not None
    code, out = await cli("register", "bob")
    assert code == 0, out
    assert f"ada is no longer the player kept for {server.url}" in out
    assert ada.token not in out
    path = config.credentials_path(config_dir)
    data = json.loads(path.read_text(encoding="utf-8"))
    key = server.url.rstrip("/")
    assert data["replaced"] == [{"server": key, "name": "ada", "token": ada.token}]
    assert data["servers"][key]["name"] == "bob"
    bob = config.load(server.url, config_dir)
    assert bob is not None
    code, out = await cli("--json", "register", "cyd")
    notices = [json.loads(line) for line in out.splitlines()]
    assert notices[-1]["notice"] == "app.replaced_player" and notices[-1]["name"] == "bob"
    assert ada.token not in out and bob.token not in out
    data = json.loads(path.read_text(encoding="utf-8"))
    assert [entry["name"] for entry in data["replaced"]] == ["ada", "bob"]
    assert data["replaced"][1]["token"] == bob.token
    code, out = await cli("play", "--level", "easy", lines=["q"])  # cyd plays
    assert code == 0, out


# -- the command line ------------------------------------------------------------


@pytest.mark.parametrize("args", [["--help"], ["--version"], ["replay", "--help"]])
def test_help_and_version_say_when_they_cannot_be_written(args: list[str]) -> None:
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full here")
    with open("/dev/full", "w") as full:
        process = subprocess.run(
            [sys.executable, "-m", "clients.cli", *args],
            stdout=full,
            stderr=subprocess.PIPE,
            cwd=ROOT,
            text=True,
            timeout=60,
            check=False,
        )
    assert process.returncode == 1
    assert process.stderr == "scorpion: cannot write to standard output: No space left on device\n"
    closed = subprocess.run(
        [sys.executable, "-m", "clients.cli", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        preexec_fn=lambda: os.close(1),
        cwd=ROOT,
        text=True,
        timeout=60,
        check=False,
    )
    assert closed.returncode == 1
    assert closed.stderr == "scorpion: standard output is closed: nothing can be shown\n"


def test_the_help_names_the_exit_statuses(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "exit status: 0 done; 1 failed" in text and "130 interrupted" in text
    assert "141 the reader of the output went away" in text
    assert "129, 131, 143 ended by SIGHUP, SIGQUIT or SIGTERM" in text


@pytest.mark.parametrize("lang", ["en", "fi", "ru"])
def test_the_help_ends_with_the_exit_statuses_of_the_docs(
    lang: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """docs/cli.md says the help ends with its list of exit statuses; the help left out
    129, 131 and 143 (the signals that end the client quietly)."""
    docs = (ROOT / "docs" / "cli.md").read_text("utf-8")
    table = docs.split("### Exit status", 1)[1].split("\n\n", 2)[1]
    statuses = re.findall(r"\b\d+\b", " ".join(row.split("|")[1] for row in table.splitlines()))
    assert statuses == ["0", "1", "2", "130", "129", "131", "143", "141"]
    assert main(["--lang", lang, "--help"]) == 0
    epilog = capsys.readouterr().out.rstrip().rsplit("\n\n", 1)[1]
    assert re.findall(r"\b\d+\b", epilog) == statuses


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("ws://a..b:80", "a label of the host name is empty or longer than 63 characters"),
        ("ws://" + "a" * 64 + ":80", "a label of the host name is empty or longer than 63"),
        ("ws://127.0.0.1:8765/#top", "it has a #fragment"),
        ("ws://ada@127.0.0.1:8765/", "it names a user without a password"),
    ],
)
def test_a_url_no_resolver_takes_is_a_usage_error(
    url: str, reason: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Passed on, these reach the resolver and end as ``UnicodeError: ...`` (exit status 1)."""
    assert main(["--server", url, "stats"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"scorpion: argument --server: {url!r} is not a server URL: {reason}")


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("ws://é..b/", "'ws://é..b/'"),
        ("ws://a。。b/", "'ws://a。。b/'"),
        ("ws://⒈.com/", "'ws://⒈.com/'"),  # the codec maps it to 1..com
        ("ws://﹒/", "'ws://﹒/'"),
        ("ws://\udcff:8765/", "'ws://\\xff:8765/'"),  # the byte 0xff of a non-UTF-8 argument
    ],
)
def test_a_host_the_idna_codec_refuses_is_a_usage_error_from_the_flag_and_the_variable(
    url: str, shown: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """websockets encodes a host that is not ASCII itself: such a host with an empty label
    ended in three chained tracebacks from ``SCORPION_SERVER``, and in argparse's
    "invalid server_url value" from ``--server``."""
    assert main(["--server", url, "stats"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"scorpion: argument --server: {shown} is not a server URL: "), err
    monkeypatch.setenv("SCORPION_SERVER", url)
    assert main(["stats"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "SCORPION_SERVER" in err and shown in err, err
    assert err.count("\n") == 1, err


@pytest.mark.parametrize("lang", ["fi", "ru"])
@pytest.mark.parametrize("url", ["ws://a..b:80", "ws://h:80/#top", "ws://ada@h:80/"])
def test_why_a_url_is_refused_is_said_in_the_players_language(
    lang: str, url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The reason is the client's own words, not the codec's or the library's English."""
    assert main(["--lang", lang, "--server", url, "stats"]) == 2
    reason = capsys.readouterr().err.split(": ", 2)[-1].replace(repr(url), "")
    english = {"label", "empty", "long", "fragment", "identifier", "meaningless", "username"}
    assert not english & set(re.findall(r"[a-z]+", reason.lower())), reason


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["play", "--winnable", "--deal", "3"], "--winnable lets the server choose the deal"),
        (["replay", "5", "--export", ""], "argument --export: '' is not a file name"),
    ],
)
def test_arguments_that_cannot_go_together_or_name_nothing(
    args: list[str], line: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Else ``--deal`` would be dropped for ``--winnable``, ``--export ''`` play the game back."""
    assert main(args) == 2
    assert capsys.readouterr().err.startswith(f"scorpion: {line}")


def test_standard_input_closed_is_the_end_of_input(server_url_nowhere: str) -> None:
    """Read as a terminal, a closed input is ``AttributeError: 'NoneType' object has no...``."""
    process = subprocess.run(
        [sys.executable, "-m", "clients.cli", "--server", server_url_nowhere, "stats"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        preexec_fn=lambda: os.close(0),
        cwd=ROOT,
        text=True,
        timeout=60,
        check=False,
    )
    assert process.returncode == 1
    assert process.stderr.startswith(f"scorpion: no server at {server_url_nowhere}")


@pytest.fixture
def server_url_nowhere() -> str:
    return "ws://127.0.0.1:9/"


@pytest.mark.parametrize("line", ["n 1 2", "n hard hard", "n! 3 hard 4"])
def test_two_levels_or_two_deals_are_a_usage_line(line: str) -> None:
    with pytest.raises(CommandError, match=r"^usage: n \[level\] \[deal\]$"):
        parse(line)


# -- what is shown ------------------------------------------------------------


def test_control_characters_from_elsewhere_are_shown_as_escapes() -> None:
    hostile = "bad \x1b]0;owned\x07\x1b[2J\r\nline\u202e"
    assert printable(hostile) == "bad \\x1b]0;owned\\x07\\x1b[2J\\r\\nline\\u202e"
    assert printable("10♥ на 7, ääkköset") == "10♥ на 7, ääkköset"
    err = io.StringIO()
    complain(hostile, err)
    assert err.getvalue() == f"scorpion: {printable(hostile)}\n"  # one line, nothing run


def test_what_json_cannot_hold_is_made_json() -> None:
    """Unknown fields are kept leniently; msgpack carries more than JSON."""
    message: dict[Any, Any] = {
        "type": "game",
        1: "int key",
        "blob": b"\x00\xff",
        "ext": msgpack.ExtType(5, b"x"),
        "nan": float("nan"),
        "nested": [{"inf": float("-inf"), b"k": True}],
    }
    line = json_line(message)
    assert "\n" not in line
    assert json.loads(line) == {
        "type": "game",
        "1": "int key",
        "blob": "00ff",
        "ext": {"ext": 5, "data": "78"},
        "nan": None,
        "nested": [{"inf": None, "6b": True}],
    }


# -- a hostile server -----------------------------------------------------------

Handler = Callable[[ServerConnection, dict[str, Any]], Awaitable[bool]]


def _view() -> dict[str, Any]:
    view: dict[str, Any] = json.loads(json.dumps(EXAMPLE_VIEW))
    return view


async def _send(ws: ServerConnection, message: dict[Any, Any]) -> None:
    await ws.send(msgpack.packb(message, use_bin_type=True))


class Hostile:
    """A one-game server; ``special`` answers what it wants to, the rest is plain."""

    def __init__(self, special: Handler | None = None) -> None:
        self.special = special
        self.requests: list[dict[str, Any]] = []

    async def handle(self, ws: ServerConnection) -> None:
        async for frame in ws:
            request = msgpack.unpackb(frame)
            self.requests.append(request)
            if self.special is not None and await self.special(ws, request):
                continue
            kind, re_ = request["type"], request["id"]
            if kind == "hello":
                player = {"id": 1, "name": "x"}
                welcome = {"server": "hostile/1", "protocol": 1, "player": player, "games": []}
                await _send(ws, {"type": "welcome", "re": re_, **welcome})
            elif kind in ("new_game", "open_game") and "since" not in request:
                await _send(ws, {"type": "game", "re": re_, "game": 5, "v": 0, "view": _view()})
            elif kind == "open_game":
                catch_up = {"type": "catch_up", "game": 5, "v": 0, "events": []}
                await _send(ws, {**catch_up, "re": re_, "time_ms": 0, "running": False})
            else:
                await _send(ws, {"type": "ack", "re": re_, "game": 5, "v": 0})


async def hostile_run(
    special: Handler, *args: str, lines: Iterable[str] = (), tmp_path: Path
) -> tuple[int, str, Hostile]:
    hostile = Hostile(special)
    code, text = await cli_against(hostile.handle, args, lines, tmp_path)
    return code, text, hostile


async def cli_against(
    handle: Callable[[ServerConnection], Awaitable[None]],
    args: Sequence[str],
    lines: Iterable[str],
    tmp_path: Path,
) -> tuple[int, str]:
    """Run ``scorpion`` with ``args`` (and ``lines`` typed) against a server that answers
    with ``handle``: its exit status and what it wrote."""
    async with serve(handle, "127.0.0.1", 0, subprotocols=[Subprotocol(SUBPROTOCOL)]) as running:
        port = next(iter(running.sockets)).getsockname()[1]
        options = parse_args(["--server", f"ws://127.0.0.1:{port}", *args], env={})
        out = io.StringIO()
        async with asyncio.timeout(SECONDS):
            code = await run(options, Terminal(out, list(lines)), config_dir=tmp_path)
    return code, out.getvalue()


async def test_escape_sequences_in_a_servers_message_do_not_reach_the_terminal(
    tmp_path: Path,
) -> None:
    async def refuse(ws: ServerConnection, request: dict[str, Any]) -> bool:
        if request["type"] != "move":
            return False
        message = "4♥ \x1b]0;owned\x07\x1b[2Jhas nowhere to go."
        error = {"type": "error", "re": request["id"], "code": "no_destination"}
        await _send(ws, {**error, "message": message})
        return True

    code, out, _hostile = await hostile_run(
        refuse, "play", "--level", "hard", lines=["4h"], tmp_path=tmp_path
    )
    assert code == 0
    assert "\x1b" not in out and "\x07" not in out
    assert "rejected (no_destination): 4♥ \\x1b]0;owned\\x07\\x1b[2Jhas nowhere to go." in out


async def test_fields_json_cannot_hold_keep_json_mode_json(tmp_path: Path) -> None:
    async def odd_game(ws: ServerConnection, request: dict[str, Any]) -> bool:
        if request["type"] != "new_game":
            return False
        game = {"type": "game", "re": request["id"], "game": 5, "v": 0, "view": _view()}
        odd: dict[Any, Any] = {**game, 1: 2, "blob": b"\xff", "inf": float("inf")}
        await _send(ws, odd)
        return True

    code, out, _hostile = await hostile_run(
        odd_game, "--json", "play", "--level", "hard", tmp_path=tmp_path
    )
    assert code == 0, out
    first = json.loads(out.splitlines()[0])
    assert first["1"] == 2 and first["blob"] == "ff" and first["inf"] is None


async def test_catch_ups_that_skip_versions_are_not_asked_for_ever(tmp_path: Path) -> None:
    """Each answer skipping a version again asked again: the client spun and hung."""

    async def skipping(ws: ServerConnection, request: dict[str, Any]) -> bool:
        kind, re_ = request["type"], request["id"]
        if kind == "open_game" and "since" in request:
            batches = [{"v": 3, "events": [{"type": "stuck"}]}]
            catch_up = {"type": "catch_up", "re": re_, "game": 5, "v": 3, "events": batches}
            await _send(ws, {**catch_up, "time_ms": 0, "running": False})
            return True
        if kind in ("new_game", "open_game"):
            await _send(ws, {"type": "game", "re": re_, "game": 5, "v": 0, "view": _view()})
            await _send(ws, {"type": "events", "game": 5, "v": 5, "events": [{"type": "stuck"}]})
            return True
        return False

    code, out, hostile = await hostile_run(
        skipping, "play", "--level", "hard", lines=["d"], tmp_path=tmp_path
    )
    assert code == 0, out
    opens = [request for request in hostile.requests if request["type"] == "open_game"]
    assert len(opens) <= 2 * MAX_FETCHES + 1, len(opens)
    assert "does not follow version 0, and asking the server again has not helped" in out


# -- the clock and the connection -----------------------------------------------


def test_a_clock_push_right_behind_a_catch_up_is_not_undone_by_it() -> None:
    """The reader hands on the push before the catch-up's requester runs: held, it comes after.

    A server restarted under the client answers the reconnection's catch-up
    with ``running: false`` and pushes the clock's start right behind it; the
    catch-up, taken last, would stop the clock shown for good.
    """
    game = GameSession(Terminal(io.StringIO(), []), Style(), json_mode=False)
    conn = SimpleNamespace(frames=0, online=True)
    game.conn = conn  # type: ignore[assignment]
    game.take({"type": "game", "game": 7, "v": 3, "view": {**_view(), "running": True}})
    with game.held():
        catch_up = Reply({"type": "catch_up", "game": 7, "v": 3, "events": []})
        catch_up.update(time_ms=5_000, running=False)
        catch_up.arrival = 10
        conn.frames = 11
        clock = {"type": "clock", "running": True, "time_ms": 5_000}
        game.on_push({"type": "events", "game": 7, "v": 3, "events": [clock]})
        game.take(catch_up)  # the requester runs only now
    assert game.board is not None and game.board.running
    with game.held():
        conn.frames = 12
        stale = {"type": "clock", "running": True, "time_ms": 1_000}
        game.on_push({"type": "events", "game": 7, "v": 3, "events": [stale]})  # before it
        later = Reply({"type": "catch_up", "game": 7, "v": 3, "events": []})
        later.update(time_ms=9_000, running=True)
        later.arrival = 13
        game.take(later)
    assert 9_000 <= game.time_ms() < 10_000  # the older push is in the reply already


class Quick(Connection):
    """Gives up reconnecting after a second, not after twenty."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **{**kwargs, "delays": (0.1, 0.2, 0.3, 0.4)})


class Waiting(Terminal):
    """A script whose next line never comes: the player thinking."""

    def __init__(self, out: io.StringIO, lines: list[str]) -> None:
        super().__init__(out, lines)
        self.waiting = asyncio.Event()

    async def _read(self, prompt: str) -> str | None:
        line = await super()._read(prompt)
        if line is not None:
            return line
        self.waiting.set()
        await asyncio.Event().wait()
        return None


async def test_a_server_gone_for_good_ends_the_command_while_the_player_thinks(
    tmp_path: Path, config_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Not said until the next command otherwise, the clock ticking on meanwhile."""
    server = Running(quiet_settings(tmp_path))
    await server.start()
    url = server.url
    out = io.StringIO()
    terminal = Waiting(out, ["ada"])
    options = parse_args(["--server", url, "play", "--level", "hard", "--deal", "1"], env={})
    running = asyncio.ensure_future(
        run(options, terminal, connection_class=Quick, config_dir=config_dir)
    )
    async with asyncio.timeout(SECONDS):
        await terminal.waiting.wait()
        await server.stop()
        code = await running
    assert code == 1
    lost = f"lost the connection to {url} and could not reconnect"
    assert capsys.readouterr().err == f"scorpion: cannot talk to the server: {lost}\n"


async def test_a_restarted_server_gets_the_clock_going_again(tmp_path: Path) -> None:
    """While the connection is down the clock stands still, then runs as the server says."""
    settings = quiet_settings(tmp_path)
    first = ScorpionServer(settings)
    await first.start()
    port = first.port
    url = f"ws://127.0.0.1:{port}/"
    game = GameSession(Terminal(io.StringIO(), []), Style(), json_mode=False)
    conn = Connection(
        url,
        on_push=game.on_push,
        on_reconnect=game.resync,
        on_drop=game.dropped,
        delays=(0.1,) * 20,
    )
    game.conn = conn
    second: ScorpionServer | None = None
    try:
        await conn.open()
        conn.token = str((await conn.call("register", name="ada"))["token"])
        with game.held():
            game.take(await conn.call("new_game", level="hard", deal=1))
        async with asyncio.timeout(SECONDS):
            while game.board is None or not game.board.running:
                await asyncio.sleep(0.05)
            await first.stop()
            while conn.online:
                await asyncio.sleep(0.01)
            assert "reconnecting" in game.status()
            held = game.time_ms()
            await asyncio.sleep(0.3)
            assert game.time_ms() == held  # the server's clock stopped with the connection
            second = ScorpionServer(dataclasses.replace(settings, port=port))
            await second.start()
            while conn.reconnects == 0:
                await asyncio.sleep(0.05)
            await asyncio.sleep(0.5)  # the catch-up, and the clock push behind it
        assert game.board.running and "reconnecting" not in game.status()
        before = game.time_ms()
        await asyncio.sleep(1.1)
        assert game.time_ms() >= before + 1000
    finally:
        await conn.close()
        if second is not None:
            await second.stop()
        else:
            await first.stop()


async def play_limited(
    tmp_path: Path, config_dir: Path, lines: list[str], **limits: str
) -> tuple[int, str, float]:
    """Play hard deal 1 with ``lines`` against a server of these rate limits: the exit code,
    what was written, and the seconds it took."""
    limited = Running(quiet_settings(tmp_path, **limits))
    await limited.start()
    try:
        options = parse_args(
            ["--server", limited.url, "play", "--level", "hard", "--deal", "1"], env={}
        )
        out = io.StringIO()
        loop = asyncio.get_running_loop()
        async with asyncio.timeout(60):
            started = loop.time()
            code = await run(options, Terminal(out, lines), config_dir=config_dir)
            took = loop.time() - started
    finally:
        await limited.stop()
    return code, out.getvalue(), took


async def test_a_script_faster_than_the_rate_limit_is_slowed_not_refused(
    tmp_path: Path, config_dir: Path
) -> None:
    """Every ``rate_limited`` reply is a strike; twenty close the connection (1008)."""
    lines = ["ada", *["d", "u"] * 15, *["h"] * 8]
    code, text, _ = await play_limited(
        tmp_path, config_dir, lines, rate_actions="20,5", rate_hints="20,5"
    )
    assert code == 0, text
    assert "rejected" not in text
    assert text.count("dealt") == 15 and text.count("undone") == 15


async def test_a_new_game_past_the_game_rate_says_it_waits_and_moves_are_not_slowed(
    tmp_path: Path, config_dir: Path
) -> None:
    """A new game refused for the game rate waited its 5 s in silence, and, counted as an
    action, spaced every later move 2 s apart."""
    lines = ["ada", "n! hard 2", "n! hard 3", *["d", "u"] * 3]
    code, text, took = await play_limited(tmp_path, config_dir, lines, rate_games="0.5,1")
    assert code == 0, text
    assert "the server asks to wait 2 s before this goes again" in text, text
    assert text.count("dealt") == 3 and text.count("undone") == 3, text
    assert took < 2 + 5, took  # the one wait, and the moves at once


# -- what the board shows -----------------------------------------------------


async def test_a_restart_draws_the_board_again(server: Running, config_dir: Path) -> None:
    """After ``r!`` the board is the deal's again, dealt cards gone: ``restarted`` redraws it."""
    out = io.StringIO()
    terminal = Terminal(out, ["ada", "d", "r!"], interactive=True)
    options = parse_args(["--server", server.url, "play", "--level", "hard", "--deal", "1"], env={})
    assert await run(options, terminal, config_dir=config_dir) == 0
    text = out.getvalue()
    after = text[text.index("restarted from the deal") :]
    assert "stock: 3" in after  # the board again, with the stock back


async def test_json_replay_failures_and_exports_stay_json(cli: CliRunner, tmp_path: Path) -> None:
    assert (await cli("play", "--level", "hard", "--deal", "1", lines=["ada", "resign!"]))[0] == 0
    code, out = await cli("--json", "replay", "99")
    assert code == 1 and json.loads(out)["code"] == "not_found"
    code, out = await cli("games")
    game = out.splitlines()[1].split()[0]
    code, out = await cli("--json", "replay", game, "--export", str(tmp_path / "r.json"))
    assert code == 0 and json.loads(out)["notice"] == "replay.written"
    code, out = await cli("--json", "replay", game, "--export", "-")  # one line, as every --json
    assert code == 0 and len(out.splitlines()) == 1, out
    assert json.loads(out)["format"] == "scorpion-replay"
    code, out = await cli("replay", game, "--export", "-")  # for people: indented
    assert code == 0 and json.loads(out)["format"] == "scorpion-replay" and "\n  " in out


def test_a_replays_last_step_shows_the_games_play_time() -> None:
    """No event carries the play time: the steps show 0:00, the last one the final view's."""
    end = Board.from_view({**_view(), "status": "lost", "time_ms": 61_000})
    last = Board.from_view(_view())
    _finish(last, end)
    assert last.status == "lost" and "time 1:01" in render_status(last)


async def test_a_retry_answered_rate_limited_is_sent_again_as_the_same_request() -> None:
    """A move applied just before a drop, its retry rate-limited: the next try finds the ack.

    The server rate-limits before it recognises a retry, so ``rate_limited``
    may answer the resend of an action it has applied. Sent again with the
    same id (and ``v``), it answers the first ``ack``; with a new id the
    move would be ``stale``, as if another device had played.
    """
    applied: list[Any] = []  # the id of the move the server applied

    async def handle(ws: ServerConnection) -> None:
        async for frame in ws:
            request = msgpack.unpackb(frame)
            kind, re_ = request["type"], request["id"]
            if kind == "hello":
                welcome = {"server": "s/1", "protocol": 1, "player": {"id": 1, "name": "x"}}
                await _send(ws, {"type": "welcome", "re": re_, **welcome, "games": []})
            elif kind == "move" and not applied:
                applied.append(re_)  # applied and stored, then the connection drops
                await ws.close()
                return
            elif kind == "move" and len(applied) == 1:
                applied.append("limited")  # the retry, over the rate
                limited = {"code": "rate_limited", "message": "slow", "retry_after_ms": 10}
                await _send(ws, {"type": "error", "re": re_, **limited})
            elif kind == "move" and re_ == applied[0]:
                await _send(ws, {"type": "ack", "re": re_, "game": 5, "v": 1})
            else:
                stale = {"code": "stale", "message": "At version 1, not 0.", "v": 1}
                await _send(ws, {"type": "error", "re": re_, **stale})

    async with _connected_to(handle) as conn, asyncio.timeout(SECONDS):
        reply = await conn.request("move", game=5, v=0, card="4H")
    assert applied[1:] == ["limited"]  # the resend after the drop was limited
    assert reply.get("type") == "ack", reply


@pytest.mark.parametrize("earlier", [False, True])  # an unfinished game before ``--new``
@pytest.mark.parametrize("applied", [True, False])
async def test_a_new_game_applied_before_a_drop_is_not_started_again(
    applied: bool, earlier: bool, tmp_path: Path
) -> None:
    """``new_game`` has no ``v``: sent again after a drop, it would abandon the game it made.

    The server cannot tell a resent ``new_game`` from a new one (PROTOCOL.md
    section 5): a second one would start another game and record the first,
    never seen, as lost. The reconnection's welcome lists the player's
    unfinished game: one that is not the game played before is the new one,
    and it is opened instead.
    """
    started: list[int] = [4] if earlier else []
    dropped: list[Any] = []
    summary = {"level": "medium", "status": "active", "v": 0, "moves": 0, "score": 0}
    summary |= {"time_ms": 0, "deal": None, "started": "2025-03-01T09:30:00.000Z"}
    summary |= {"updated": "2025-03-01T09:30:00.000Z"}

    async def handle(ws: ServerConnection) -> None:
        async for frame in ws:
            request = msgpack.unpackb(frame)
            kind, re_ = request["type"], request["id"]
            if kind == "hello":
                games = [{"game": started[-1], **summary}] if started else []
                welcome = {"server": "s/1", "protocol": 1, "player": {"id": 1, "name": "x"}}
                await _send(ws, {"type": "welcome", "re": re_, **welcome, "games": games})
            elif kind == "new_game":
                if not dropped:  # stored (or not), then the connection drops before the reply
                    dropped.append(re_)
                    if applied:
                        started.append(max(started, default=4) + 1)
                    await ws.close()
                    return
                lost = {"lost": started[-1]} if started else {}
                started.append(max(started, default=4) + 1)
                game = {"game": started[-1], "v": 0, "view": _view(), **lost}
                await _send(ws, {"type": "game", "re": re_, **game})
            elif kind == "open_game" and "since" not in request:
                game = {"game": request["game"], "v": 0, "view": _view()}
                await _send(ws, {"type": "game", "re": re_, **game})
            else:
                await _send(ws, {"type": "ack", "re": re_, "game": started[-1], "v": 0})

    args = ["play", "--new", "--level", "medium"]
    code, text = await cli_against(handle, args, ["b"], tmp_path)
    assert code == 0, text
    # one game started, not a second abandoning it, nor the earlier one opened instead
    assert dropped and started == ([4, 5] if earlier else [5]), text
    assert "game 5" in text and "game 5 was abandoned" not in text


@contextlib.asynccontextmanager
async def _connected_to(
    handle: Callable[[ServerConnection], Awaitable[None]],
) -> AsyncIterator[Connection]:
    """The client's connection (quick to reconnect) to a server that answers with ``handle``."""
    async with serve(handle, "127.0.0.1", 0, subprotocols=[Subprotocol(SUBPROTOCOL)]) as running:
        port = next(iter(running.sockets)).getsockname()[1]
        conn = Connection(f"ws://127.0.0.1:{port}", delays=(0.05, 0.05), timeout=5)
        await conn.open()
        try:
            yield conn
        finally:
            await conn.close()


def _dropped_at_first(
    kind: str, later: dict[str, Any], caught_up: dict[str, Any] | None, sent: list[Any]
) -> Callable[[ServerConnection], Awaitable[None]]:
    """A server of game 5 that notes each ``kind`` request's id in ``sent``: the first
    is stored, then the connection drops (the reconnection's catch-up holds the event
    ``caught_up`` at version 1; None: nothing, the first was not stored after all); a
    later one is answered ``later``."""

    async def handle(ws: ServerConnection) -> None:
        async for frame in ws:
            request = msgpack.unpackb(frame)
            type_, re_ = request["type"], request["id"]
            if type_ == "hello":
                welcome = {"server": "s/1", "protocol": 1, "player": {"id": 1, "name": "x"}}
                await _send(ws, {"type": "welcome", "re": re_, **welcome, "games": []})
            elif type_ == "new_game":
                await _send(ws, {"type": "game", "re": re_, "game": 5, "v": 0, "view": _view()})
            elif type_ == kind:
                sent.append(re_)
                if len(sent) == 1:  # stored, then the connection drops
                    await ws.close()
                    return
                await _send(ws, {"re": re_, **later})
            elif type_ == "open_game" and "since" in request:
                running = caught_up is None or caught_up["type"] != "game_lost"
                batches = [] if caught_up is None else [{"v": 1, "events": [caught_up]}]
                v = len(batches)
                catch_up = {"game": 5, "v": v, "events": batches, "time_ms": 0, "running": running}
                await _send(ws, {"type": "catch_up", "re": re_, **catch_up})
            else:
                await _send(ws, {"type": "ack", "re": re_, "game": 5, "v": 1})

    return handle


async def test_a_hint_recorded_before_a_drop_is_not_asked_again(tmp_path: Path) -> None:
    """``hint`` has no ``v``: sent again after a drop, it records a second hint.

    The reconnection's catch-up holds the first one's ``hint`` event if it was
    recorded, and that prints the advice.
    """
    hints: list[Any] = []
    later = {"type": "hint", "game": 5, "v": 2, "action": "deal"}
    handle = _dropped_at_first("hint", later, {"type": "hint", "action": "deal"}, hints)
    args = ["play", "--new", "--level", "medium"]
    code, text = await cli_against(handle, args, ["h"], tmp_path)
    assert code == 0, text
    assert len(hints) == 1, text
    assert "deal" in text.lower(), text


async def test_a_hint_lost_with_the_connection_and_not_recorded_is_said(tmp_path: Path) -> None:
    """The catch-up holds no hint: the player was told nothing, and the ``h`` went unanswered."""
    hints: list[Any] = []
    handle = _dropped_at_first("hint", {}, None, hints)
    args = ["play", "--new", "--level", "medium"]
    code, text = await cli_against(handle, args, ["h"], tmp_path)
    assert code == 0, text
    assert len(hints) == 1, text  # not sent again: it might have been recorded
    assert "no hint was recorded: h asks again" in text, text


async def test_a_hint_asked_while_the_connection_is_down_is_sent_once_it_is_back() -> None:
    """Typed while the client reconnected, the hint never left: it failed as one a drop
    left unanswered, and the player was told nothing."""
    hints: list[Any] = []
    hellos: list[Any] = []
    back = asyncio.Event()

    async def handle(ws: ServerConnection) -> None:
        async for frame in ws:
            request = msgpack.unpackb(frame)
            type_, re_ = request["type"], request["id"]
            if type_ == "hello":
                hellos.append(re_)
                if len(hellos) == 2:
                    await back.wait()  # reconnecting: the hint is asked meanwhile
                welcome = {"server": "s/1", "protocol": 1, "player": {"id": 1, "name": "x"}}
                await _send(ws, {"type": "welcome", "re": re_, **welcome, "games": []})
                if len(hellos) == 1:
                    await ws.close()  # then the connection drops
                    return
            elif type_ == "hint":
                hints.append(re_)
                await _send(ws, {"type": "hint", "re": re_, "game": 5, "v": 1, "action": "deal"})

    async with _connected_to(handle) as conn, asyncio.timeout(SECONDS):
        while len(hellos) < 2:
            await asyncio.sleep(0.01)
        asked = asyncio.ensure_future(conn.request("hint", game=5))
        await asyncio.sleep(0.1)
        back.set()
        reply = await asked
    assert reply.get("type") == "hint", reply
    assert len(hints) == 1


async def test_a_resign_applied_before_a_drop_is_not_refused_as_game_over(tmp_path: Path) -> None:
    """``resign`` has no ``v``: sent again after a drop, it answers ``game_over``.

    The reconnection's catch-up says whether it was applied (``game_lost``);
    only if not is it sent again.
    """
    resigns: list[Any] = []
    later = {"type": "error", "code": "game_over", "message": "The game is over."}
    lost = {"type": "game_lost", "reason": "resigned", "deal": 1}
    handle = _dropped_at_first("resign", later, lost, resigns)
    args = ["play", "--new", "--level", "medium"]
    code, text = await cli_against(handle, args, ["resign!"], tmp_path)
    assert code == 0, text
    assert "resigned" in text or "gave" in text, text
    assert len(resigns) == 1 and "game_over" not in text, text
