"""Local trouble is named as such: files the client cannot read or write, bad URLs, closed output.

Only a failure to connect says "no server"; a credentials file or an export
that cannot be written is named with the system's reason, and a player whose
token cannot be saved is not lost (the token is printed). A malformed
credentials file is named and read as holding no player; ``--export -``
writes to standard output.
"""

from __future__ import annotations

import asyncio
import errno
import io
import json
import os
import signal
import socket
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from clients.cli import config
from clients.cli.__main__ import main
from clients.cli.app import run
from clients.cli.options import UsageError, parse_args
from clients.cli.terminal import Terminal, shown_url
from tests.cli.conftest import CliRunner
from tests.helpers import interrupted_while_loading
from tests.server.conftest import Running

ROOT = Path(__file__).resolve().parents[2]


async def run_in(
    directory: Path, server: Running, *args: str, lines: tuple[str, ...] = ()
) -> tuple[int, str]:
    """``scorpion ARGS`` with ``directory`` as the config directory."""
    out = io.StringIO()
    options = parse_args(["--server", server.url, *args], env={})
    code = await run(options, Terminal(out, list(lines)), config_dir=directory)
    return code, out.getvalue()


def stored_entry(out: str) -> dict[str, dict[str, dict[str, str]]]:
    """The credentials entry printed for the user to store by hand (the last JSON on a line)."""
    line = next(line for line in out.splitlines() if '{"servers"' in line)
    entry: dict[str, dict[str, dict[str, str]]] = json.loads(line[line.index('{"servers"') :])
    return entry


@pytest.mark.parametrize("command", ["register", "play"])
async def test_a_token_that_cannot_be_saved_is_printed_not_lost(
    command: str, server: Running, tmp_path: Path
) -> None:
    afile = tmp_path / "afile"
    afile.write_text("")  # the config directory would have to be inside a regular file
    unwritable = afile / "scorpion"
    args = ("register", "ada") if command == "register" else ("play", "--level", "hard")
    code, out = await run_in(unwritable, server, *args, lines=("ada", "q"))
    assert code == 1, out
    assert "no server" not in out
    assert f"could not be saved to {unwritable / 'credentials.json'}: Not a directory" in out
    entry = stored_entry(out)
    token = entry["servers"][server.url.rstrip("/")]["token"]
    assert token in out and entry["servers"][server.url.rstrip("/")]["name"] == "ada"

    # What was printed is all it takes to play as ada: nothing was lost.
    usable = tmp_path / "usable"
    usable.mkdir()
    (usable / "credentials.json").write_text(json.dumps(entry))
    code, out = await run_in(usable, server, "stats")
    assert code == 0 and "player name" not in out, out
    code, out = await run_in(tmp_path / "other", server, "register", "ada")
    assert code == 1 and "duplicate_name" in out  # the same player, registered once


async def test_a_token_that_cannot_be_saved_in_json_mode(server: Running, tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("")
    code, out = await run_in(tmp_path / "afile" / "scorpion", server, "--json", "register", "ada")
    assert code == 1
    notices = [json.loads(line) for line in out.splitlines()]
    assert {notice["type"] for notice in notices} == {"notice"}
    assert all(notice["name"] == "ada" and notice["token"] for notice in notices)


@pytest.mark.parametrize(
    ("target", "reason"),
    [
        ("missing/dir/x.json", "No such file or directory"),
        (".", "Is a directory"),
        ("/dev/full", "No space left on device"),
    ],
)
async def test_an_export_that_cannot_be_written_names_the_file(
    target: str,
    reason: str,
    cli: CliRunner,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    if target == "/dev/full" and not Path(target).exists():
        pytest.skip("no /dev/full here")
    monkeypatch.chdir(tmp_path)
    game = await resigned_game(cli)
    code, out = await cli("replay", game, "--export", target)
    assert code == 1 and out == ""
    assert capsys.readouterr().err == f"scorpion: cannot write the replay to {target}: {reason}\n"


async def resigned_game(cli: CliRunner) -> str:
    assert (await cli("register", "ada"))[0] == 0
    assert (await cli("play", "--level", "hard", "--deal", "1", lines=["resign!"]))[0] == 0
    return (await cli("games"))[1].splitlines()[1].split()[0]


async def test_export_dash_writes_the_document_to_standard_output(
    cli: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)
    game = await resigned_game(cli)
    code, out = await cli("replay", game, "--export", "-")
    assert code == 0, out
    document = json.loads(out)  # the document alone: no "wrote the replay" line
    assert document["format"] == "scorpion-replay" and document["deal"] == 1
    assert list(here.iterdir()) == []  # no file named -
    code, out = await cli("replay", game, "--export", "./-")  # a file named - is still possible
    assert code == 0 and json.loads((here / "-").read_text()) == document


async def test_export_dash_of_a_game_refused_says_so_on_standard_error_only(
    cli: CliRunner, capsys: pytest.CaptureFixture[str]
) -> None:
    """``scorpion replay 999 --export - | jq`` read "rejected (not_found): ..." as the
    document; an unfinished game's refusal already went to standard error."""
    assert (await cli("register", "ada"))[0] == 0
    capsys.readouterr()
    code, out = await cli("replay", "999", "--export", "-")
    assert (code, out) == (1, "")
    assert capsys.readouterr().err == "scorpion: rejected (not_found): There is no game 999.\n"


async def test_a_replay_asked_with_no_player_kept_registers_none(
    cli: CliRunner, capsys: pytest.CaptureFixture[str]
) -> None:
    """With no player kept, the client registered one first (asking its name, on
    standard output, in the document's place with ``--export -``): a new player has
    no game to replay."""
    code, out = await cli("replay", "999", "--export", "-", lines=["ada"])
    assert (code, out) == (1, "")
    err = capsys.readouterr().err
    assert "no player is stored for" in err and "registered" not in err, err
    assert (await cli("register", "ada"))[0] == 0  # the name was not taken


def test_export_dash_is_in_the_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", "--help"]) == 0
    assert "- writes it to standard output" in " ".join(capsys.readouterr().out.split())


MALFORMED = [
    '{"servers": 5}',
    '{"servers": []}',
    "not json",
    "[1, 2]",
    "\xff\xfe",
]


@pytest.mark.parametrize("text", MALFORMED)
async def test_a_malformed_credentials_file_is_named_and_read_as_none(
    text: str, cli: CliRunner, config_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config_dir.mkdir(mode=0o700)
    path = config_dir / "credentials.json"
    path.write_bytes(text.encode("latin-1"))
    path.chmod(0o600)
    code, out = await cli("games", lines=[])
    assert code == 1 and out == ""
    first, second = capsys.readouterr().err.splitlines()
    assert first.startswith(f"scorpion: cannot use the credentials file {path}: ")
    assert "fix it or remove it" in first
    assert second == "scorpion: no name given: nothing was registered"  # as with no file
    assert path.read_bytes() == text.encode("latin-1")  # untouched


async def test_registering_sets_a_malformed_credentials_file_aside(
    cli: CliRunner, config_dir: Path, server: Running
) -> None:
    config_dir.mkdir()
    path = config_dir / "credentials.json"
    path.write_text('{"servers": 5}')
    (config_dir / "credentials.json.bad").write_text("an older one")
    code, out = await cli("register", "ada")
    assert code == 0, out
    aside = config_dir / "credentials.json.bad1"
    assert f"the malformed {path} is kept as {aside}" in out
    assert aside.read_text() == '{"servers": 5}'
    assert (config_dir / "credentials.json.bad").read_text() == "an older one"
    assert config.load(server.url, config_dir) is not None
    assert (await cli("stats"))[0] == 0


@pytest.mark.parametrize(
    "entry",
    [{"name": "x", "token": "a" * 129}, {"name": "x", "token": ""}, {"name": "x"}, 5, ["t"]],
)
async def test_invalid_stored_credentials_are_named(
    entry: object,
    cli: CliRunner,
    config_dir: Path,
    server: Running,
    capsys: pytest.CaptureFixture[str],
) -> None:
    config_dir.mkdir(mode=0o700)
    path = config_dir / "credentials.json"
    path.write_text(json.dumps({"servers": {server.url.rstrip("/"): entry}}))
    path.chmod(0o600)
    code, out = await cli("stats", lines=[])
    assert code == 1 and out == ""
    err = capsys.readouterr().err
    assert err.startswith(f"scorpion: the credentials stored in {path} are invalid: ")
    assert "InvalidMessage" not in err
    code, out = await cli("register", "ada")  # registering again replaces the entry
    assert code == 0, out
    assert (await cli("stats"))[0] == 0


def test_the_credentials_file_checks(tmp_path: Path) -> None:
    path = tmp_path / "credentials.json"
    assert config.load("ws://a", tmp_path) is None  # no file
    path.write_text('{"servers": 5}')
    with pytest.raises(config.Malformed) as caught:
        config.load("ws://a", tmp_path)
    assert caught.value.path == path
    with pytest.raises(config.Malformed):  # never written over: it may hold tokens
        config.save("ws://a", config.Credentials("ada", "t"), tmp_path)
    assert path.read_text() == '{"servers": 5}'
    path.write_text('{"servers": {"ws://a": {"name": "ada", "token": "%s"}}}' % ("t" * 129))
    with pytest.raises(config.InvalidEntry):
        config.load("ws://a", tmp_path)
    assert config.load("ws://b", tmp_path) is None  # another server's entry is fine
    # a lone surrogate, which JSON may hold: no UTF-8 for it (it ended in UnicodeEncodeError)
    path.write_text('{"servers": {"ws://a": {"name": "ada", "token": "\\ud800"}}}')
    with pytest.raises(config.InvalidEntry):
        config.load("ws://a", tmp_path)
    path.write_text('{"servers": {"ws://a": {"name": "\\udfff", "token": "t"}}}')
    with pytest.raises(config.InvalidEntry):
        config.load("ws://a", tmp_path)
    (tmp_path / "afile").write_text("")
    assert config.load("ws://a", tmp_path / "afile" / "x") is None  # nothing can be there


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("ws://[::1", "its IPv6 address in brackets is not closed"),
        ("ws://[zz]:1", "what is in its brackets is not an IPv6 address"),  # closed, though
        ("ws://127.0.0.1:8765/ ", "holds a space or a control character"),  # it was sent: 400
        ("ws://127.0.0.1:8765/a b", "holds a space or a control character"),
        ("ws://127.0.0.1:8765/\t", "holds a space or a control character"),
        ("ws://127.0.0.1:99999/", "its port is not a number from 1 to 65535"),
        ("ws://127.0.0.1:-1/", "its port is not a number from 1 to 65535"),
        ("http://127.0.0.1:8765/", "does not start with `ws://` or `wss://`"),
        ("ws:///", "names no host"),
        ("ws://127.0.0.1:0/", "port 0 is no port"),
        ("ws://127.0.0.1:00", "port 0 is no port"),
        ("127.0.0.1:8765", "does not start with"),
    ],
)
def test_a_bad_server_url_is_a_usage_error(
    url: str, reason: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--server", url, "stats"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith(f"scorpion: argument --server: {url!r} is not a server URL: ")
    assert reason in captured.err and len(captured.err.splitlines()) == 1
    assert main(["stats", "--server", url]) == 2


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("ws://ada:s3cret@127.0.0.1:99999/", "'ws://ada:***@127.0.0.1:99999/' is not"),
        ("ws://ada:s3c@ret@[zz]:1", "'ws://ada:***@[zz]:1' is not"),
        ("ws://ada:s3cret@127.0.0.1:9/", "no server at ws://ada:***@127.0.0.1:9/: start"),
        # a user name that is an e-mail address: the password runs to the last '@'
        ("ws://ada@example.org:s3cret@127.0.0.1:9/", "at ws://ada@example.org:***@127.0.0.1:9/:"),
        ("ws://ada@example.org:s3c@ret@127.0.0.1:9", "at ws://ada@example.org:***@127.0.0.1:9:"),
        # a '/', '?' or '#' left unencoded in the password makes the URL no server's
        ("ws://ada:s3c/ret@127.0.0.1:9/", "'ws://ada:***@127.0.0.1:9/' is not"),
        ("ws://ada:s3c?ret@127.0.0.1:9/", "'ws://ada:***@127.0.0.1:9/' is not"),
        ("ws://ada@example.org:s3c#ret@127.0.0.1:9", "'ws://ada@example.org:***@127.0.0.1:9' is"),
    ],
)
def test_a_password_in_the_url_is_not_shown(
    url: str,
    shown: str,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The password of a URL (``ws://ada:s3cret@host``) was repeated in each line that
    named the URL, for anyone reading the screen or the log."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    main(["--server", url, "stats"])
    captured = capsys.readouterr()
    assert shown in captured.err and "s3c" not in captured.err + captured.out
    monkeypatch.setenv("SCORPION_SERVER", url)
    main(["--json", "games"])
    captured = capsys.readouterr()
    assert shown.split(" ", 1)[1] in captured.err, captured.err
    assert "s3c" not in captured.err + captured.out


def test_a_url_shows_no_password() -> None:
    assert shown_url("ws://ada:s3cret@host:1/p?q#f") == "ws://ada:***@host:1/p?q#f"
    assert shown_url("wss://ada@example.org:s3cret@host") == "wss://ada@example.org:***@host"
    assert shown_url("ws://ada@host/") == "ws://ada@host/"  # no password
    assert shown_url("ws://host:8765/p@q:r") == "ws://host:8765/p@q:r"  # an '@' of the path
    assert shown_url("ws://host:8765/?to=a:b@c") == "ws://host:8765/?to=a:b@c"
    # refused as a server's, the URL's password is taken to run to its last '@'
    assert shown_url("ws://ada:s3/c?r#t@host/", refused=True) == "ws://ada:***@host/"
    assert shown_url("ws://host:8765/p", refused=True) == "ws://host:8765/p"


def _filled(data: dict[str, Any], room: int, drop: Callable[[int], None]) -> str:
    """``data`` as the client writes it, ``drop(n)`` taking entries out until it fits ``room``."""
    while len(text := json.dumps(data, indent=2, sort_keys=True) + "\n") > room:
        # fewer than the excess asks for (an entry takes less than 400 bytes): just under room
        drop(max(1, (len(text) - room) // 400))
    return text


def _near_the_limit(path: Path, server: str) -> list[dict[str, str]]:
    """A credentials file of ``replaced`` entries a little under ``MAX_FILE_BYTES``."""
    replaced = [
        {"server": server, "name": f"old{number}", "token": "A" * 43} for number in range(9000)
    ]

    def drop(count: int) -> None:
        del replaced[-count:]

    room = config.MAX_FILE_BYTES - 150
    path.write_text(_filled({"servers": {}, "replaced": replaced}, room, drop))
    return replaced


def test_saving_never_writes_a_file_too_large_to_be_read(tmp_path: Path) -> None:
    """Each player replaced was kept in ``replaced``, which nothing trimmed: a file that
    grew past ``MAX_FILE_BYTES`` was written, then refused at the next command."""
    server = "ws://127.0.0.1:9"
    path = config.credentials_path(tmp_path)
    replaced = _near_the_limit(path, server)
    for name in ("ada", "bob", "cy"):
        config.save(server, config.Credentials(name, f"token-of-{name}"), tmp_path)
        assert path.stat().st_size <= config.MAX_FILE_BYTES
        assert config.load(server, tmp_path) == config.Credentials(name, f"token-of-{name}")
    config.forget(server, tmp_path)
    assert path.stat().st_size <= config.MAX_FILE_BYTES
    kept = json.loads(path.read_text())["replaced"]
    # the oldest went, and no more than room asked for; the latest are all kept, in order
    assert [each["name"] for each in kept[-3:]] == ["ada", "bob", "cy"]
    assert kept[:-3] == replaced[len(replaced) - len(kept) + 3 :]
    assert len(replaced) - len(kept[:-3]) < 10


def test_a_file_whose_players_alone_are_too_large_is_not_written(tmp_path: Path) -> None:
    path = config.credentials_path(tmp_path)
    servers = {f"ws://h{n}.example": {"name": "x", "token": "A" * 128} for n in range(5400)}

    def drop(count: int) -> None:
        for _each in range(count):
            servers.popitem()

    text = _filled({"servers": servers}, config.MAX_FILE_BYTES, drop)
    path.write_text(text)
    with pytest.raises(OSError) as caught:
        config.save("ws://new.example", config.Credentials("ada", "A" * 128), tmp_path)
    assert caught.value.errno == errno.EFBIG
    assert path.read_text() == text


@pytest.mark.parametrize("relative", [False, True])
def test_a_credentials_file_that_is_a_link_stays_one(tmp_path: Path, relative: bool) -> None:
    """A credentials.json linked to a file kept elsewhere (dotfiles under stow): every save
    replaced the link with a file of its own, and the link's target went stale unsaid."""
    directory, dotfiles = tmp_path / "config", tmp_path / "dotfiles"
    directory.mkdir(mode=0o700)
    dotfiles.mkdir()
    target = dotfiles / "credentials.json"
    target.write_text('{"servers": {}}')
    target.chmod(0o600)
    path = config.credentials_path(directory)
    path.symlink_to(Path("..") / "dotfiles" / "credentials.json" if relative else target)
    config.save("ws://h", config.Credentials("ada", "t1"), directory)
    config.save("ws://h", config.Credentials("bob", "t2"), directory)
    config.forget("ws://h", directory)
    config.save("ws://h", config.Credentials("cy", "t3"), directory)
    assert path.is_symlink() and path.resolve() == target.resolve()
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    data = json.loads(target.read_text())
    assert data["servers"] == {"ws://h": {"name": "cy", "token": "t3"}}
    assert [each["name"] for each in data["replaced"]] == ["ada", "bob"]
    assert sorted(each.name for each in dotfiles.iterdir()) == ["credentials.json"]
    assert sorted(each.name for each in directory.iterdir()) == [config.FILE_NAME, config.LOCK_NAME]


def test_one_server_written_two_ways_has_one_player(tmp_path: Path) -> None:
    """Scheme and host are case-blind and ``:80`` is ``ws://``'s own port: the
    player registered at one spelling is found at the other, not registered anew."""
    config.save("WS://Example.ORG:80/", config.Credentials("ann", "t1"), tmp_path)
    assert config.load("ws://example.org", tmp_path) == config.Credentials("ann", "t1")
    assert config.load("ws://example.org:8765", tmp_path) is None  # another port, another server
    assert config.load("wss://example.org", tmp_path) is None
    assert config.load("ws://example.org/other", tmp_path) is None  # paths tell case apart
    # an entry written by hand (or by an older client) under another spelling is found, and
    # saving again keeps the one entry, under one key
    path = config.credentials_path(tmp_path)
    path.write_text('{"servers": {"ws://[::1]:08765/": {"name": "bo", "token": "t2"}}}')
    assert config.load("ws://[::1]:8765", tmp_path) == config.Credentials("bo", "t2")
    assert config.load("ws://[0:0:0:0:0:0:0:1]:8765", tmp_path) == config.Credentials("bo", "t2")
    config.save("ws://[::1]:8765", config.Credentials("bo", "t2"), tmp_path)
    assert json.loads(path.read_text()) == {
        "servers": {"ws://[::1]:8765": {"name": "bo", "token": "t2"}}
    }
    # keys that are no URL are kept as they are
    path.write_text('{"servers": {"not a url": {"name": "x", "token": "t"}, "ws://h:x": {}}}')
    assert config.load("ws://h", tmp_path) is None


def test_a_bad_server_url_from_the_environment() -> None:
    with pytest.raises(UsageError, match="SCORPION_SERVER: 'ws://h:x/' is not a server URL"):
        parse_args(["stats"], env={"SCORPION_SERVER": "ws://h:x/"})
    assert parse_args(["stats"], env={"SCORPION_SERVER": "wss://h:1/x"}).server == "wss://h:1/x"


def test_a_deal_number_on_the_easy_level_is_a_usage_error() -> None:
    """Easy deals are the server's choice: refused before connecting, or registering."""
    with pytest.raises(UsageError, match="does not go with --deal"):
        parse_args(["play", "--level", "easy", "--deal", "5"], env={})
    assert parse_args(["play", "--level", "hard", "--deal", "5"], env={}).deal == 5


def run_with_stdout(
    stdout: str | None, server: Running, home: Path
) -> subprocess.CompletedProcess[str]:
    """``scorpion register ada`` with stdout closed (None) or sent to ``stdout``."""
    handle = None if stdout is None else open(stdout, "w")  # noqa: SIM115
    try:
        return subprocess.run(
            [sys.executable, "-m", "clients.cli", "--server", server.url, "register", "ada"],
            stdin=subprocess.DEVNULL,
            stdout=handle if handle is not None else subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            preexec_fn=(lambda: os.close(1)) if handle is None else None,
            cwd=ROOT,
            env={**os.environ, "XDG_CONFIG_HOME": str(home)},
            text=True,
            timeout=60,
            check=False,
        )
    finally:
        if handle is not None:
            handle.close()


async def test_closed_standard_output_is_one_clear_line(server: Running, tmp_path: Path) -> None:
    process = await asyncio.to_thread(run_with_stdout, None, server, tmp_path)
    assert process.returncode == 1
    assert process.stderr == "scorpion: standard output is closed: nothing can be shown\n"


async def test_a_full_standard_output_is_one_clear_line(server: Running, tmp_path: Path) -> None:
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full here")
    process = await asyncio.to_thread(run_with_stdout, "/dev/full", server, tmp_path)
    assert process.returncode == 1
    assert process.stderr == (
        "scorpion: cannot write to standard output: No space left on device\n"
    )


async def test_a_failure_is_on_standard_error_and_output_stays_empty(tmp_path: Path) -> None:
    """Nothing listening: the command fails with a line on stderr, and stdout has nothing."""
    process = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "clients.cli", "--server", "ws://127.0.0.1:9/", "stats"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        cwd=ROOT,
        env={**os.environ, "XDG_CONFIG_HOME": str(tmp_path)},
        text=True,
        timeout=60,
        check=False,
    )
    assert (process.returncode, process.stdout) == (1, "")
    assert process.stderr == (
        "scorpion: no server at ws://127.0.0.1:9/: "
        "start one with `scorpion-server` (`make run` in a checkout)\n"
    )


@pytest.mark.parametrize("after_s", [0.1, 0.2])
def test_ctrl_c_while_the_client_loads_ends_it_without_a_traceback(
    tmp_path: Path, after_s: float
) -> None:
    """Ctrl-C in the third of a second Python takes to load the client printed a
    KeyboardInterrupt traceback; it ends the process as the signal's default does.

    The server accepts the connection and never answers, so a signal that comes after
    the loading finds the client waiting (and it exits 130). On a loaded machine the
    signal may land before any code of ours runs, while the interpreter itself imports
    ``site`` or ``runpy`` looks for the module: such a run is tried again
    (``interrupted_while_loading``)."""
    with socket.create_server(("127.0.0.1", 0)) as silent:
        url = f"ws://127.0.0.1:{silent.getsockname()[1]}/"
        done = interrupted_while_loading(
            [sys.executable, "-m", "clients.cli", "--server", url, "stats"],
            after_s,
            cwd=ROOT,
            env={**os.environ, "XDG_CONFIG_HOME": str(tmp_path)},
        )
    assert done.returncode in (-signal.SIGINT, 130), done.stdout
    assert "Traceback" not in done.stdout and "KeyboardInterrupt" not in done.stdout, done.stdout


def test_ctrl_c_while_the_arguments_are_read_exits_130(monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C while the command line was parsed (its help's words read from the
    catalogue, a tenth of a second on a loaded machine) ended in a traceback."""
    from clients.cli import program

    def interrupted(argv: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(program, "parse_args", interrupted)
    assert program.main(["stats"]) == 130


def run_in_zone(zone: str, *args: str) -> subprocess.CompletedProcess[str]:
    """``python ARGS`` with ``TZ=zone``."""
    return subprocess.run(
        [sys.executable, *args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        cwd=ROOT,
        env={**os.environ, "TZ": zone},
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize("zone", ["EST+24", "<+25>-25", "/etc/passwd", "/"])
def test_a_time_zone_python_cannot_use_is_not_a_traceback(zone: str) -> None:
    """A ``TZ`` with a 24-hour offset (POSIX allows it) or naming a file that is not a zone
    ended every command, ``--version`` and ``--help`` too, in a traceback: Babel reads the
    local zone when imported and dated the catalogues in it. A time from the server is
    then shown in UTC."""
    for args in (["--version"], ["--lang", "fi", "--help"]):
        process = run_in_zone(zone, "-m", "clients.cli", *args)
        assert (process.returncode, process.stderr) == (0, ""), process.stderr
    shown = "from clients.cli.render import local_time; print(local_time('2026-12-07T04:00:13Z'))"
    process = run_in_zone(zone, "-c", shown)
    assert (process.returncode, process.stdout, process.stderr) == (0, "2026-12-07 04:00:13\n", "")


SAVES = """
import sys
from pathlib import Path
from clients.cli import config
tag, directory = sys.argv[1], Path(sys.argv[2])
for number in range(100):
    config.save(f"ws://{tag}{number}.example", config.Credentials(tag, "t" * 43), directory)
"""


def test_two_commands_saving_at_once_keep_both_players(tmp_path: Path) -> None:
    """Two processes saving players for other servers at once lost entries, or failed,
    on the one ``credentials.tmp`` both wrote through; each entry is kept now."""
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", SAVES, tag, str(tmp_path)],
            cwd=ROOT,
            stderr=subprocess.PIPE,
            text=True,
        )
        for tag in ("a", "b")
    ]
    errors = [process.communicate(timeout=120)[1] for process in processes]
    assert [process.returncode for process in processes] == [0, 0], errors
    servers = json.loads(config.credentials_path(tmp_path).read_text())["servers"]
    assert len(servers) == 200
    assert sorted(each.name for each in tmp_path.iterdir()) == [
        "credentials.json",
        "credentials.json.lock",
    ]
    assert stat.S_IMODE(config.credentials_path(tmp_path).stat().st_mode) == 0o600


async def test_a_credentials_file_others_may_read_and_that_cannot_be_changed_is_said(
    cli: CliRunner,
    config_dir: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A file other users may read and whose mode cannot be changed (another user's, a
    read-only file system) was used without a word."""
    assert (await cli("register", "ada"))[0] == 0
    path = config.credentials_path(config_dir)
    path.chmod(0o644)

    def refused(_path: object, _mode: int) -> None:
        raise PermissionError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(os, "chmod", refused)
    capsys.readouterr()
    assert (await cli("stats"))[0] == 0
    assert capsys.readouterr().err == (
        f"scorpion: {path} can be read by other users (mode 644), and it holds your sign-in"
        " token; it could not be made yours only: change its mode or its owner\n"
    )


def test_a_file_system_without_locks_still_saves(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On NFS without a lock daemon (ENOLCK) or a FUSE mount (EOPNOTSUPP) the lock
    raised, and no command could save a player: ``register`` registered and could not
    keep the token. There is no lock there, as where ``flock`` is missing."""
    import fcntl

    def no_locks(_fd: int, _operation: int) -> None:
        raise OSError(errno.ENOLCK, "No locks available")

    monkeypatch.setattr(fcntl, "flock", no_locks)
    config.save("ws://a.example", config.Credentials("ada", "t" * 43), tmp_path)
    servers = json.loads(config.credentials_path(tmp_path).read_text())["servers"]
    assert list(servers) == ["ws://a.example"]


async def test_a_credentials_file_others_may_read_is_made_the_users_own(
    cli: CliRunner, config_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A credentials file written by hand with the usual umask (0644, in a 0755
    directory) was used as it was, the token readable by every user: it is made 0600
    (the directory 0700), and that is said once."""
    assert (await cli("register", "ada"))[0] == 0
    path = config.credentials_path(config_dir)
    config_dir.chmod(0o755)
    path.chmod(0o644)
    capsys.readouterr()
    assert (await cli("stats"))[0] == 0
    assert capsys.readouterr().err == (
        f"scorpion: {config_dir} could be read by other users (mode 755), and it holds your"
        " sign-in token: it is mode 700 now\n"
        f"scorpion: {path} could be read by other users (mode 644), and it holds your"
        " sign-in token: it is mode 600 now\n"
    )
    assert stat.S_IMODE(config_dir.stat().st_mode) == 0o700
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert (await cli("stats"))[0] == 0
    assert capsys.readouterr().err == ""


async def test_a_name_typed_in_bytes_that_are_not_utf8_is_asked_again(
    server: Running, tmp_path: Path
) -> None:
    """``\\xff`` typed at the name question registered a name with U+FFFD in it, while
    ``scorpion register`` refuses the same bytes: the question says so and asks again."""
    process = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "clients.cli", "--server", server.url, "stats"],
        input=b"ada\xff\nbob\n",
        capture_output=True,
        cwd=ROOT,
        env={**os.environ, "XDG_CONFIG_HOME": str(tmp_path)},
        timeout=60,
        check=False,
    )
    out = process.stdout.decode()
    assert process.returncode == 0, (out, process.stderr)
    assert "a name has only printable characters, none invisible or blank; " in out
    assert "registered as bob" in out and "ada" not in out
