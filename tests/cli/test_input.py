"""No input ends in a traceback: names, arguments, deals and closed pipes (issue 16, item 5)."""

from __future__ import annotations

import asyncio
import io
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from clients.cli.__main__ import main
from clients.cli.app import run
from clients.cli.commands import CommandError, number, parse
from clients.cli.connection import Connection
from clients.cli.game import GameSession
from clients.cli.options import parse_args
from clients.cli.render import Style
from clients.cli.terminal import _TOO_LONG, LINE_LIMIT, OutputError, Terminal, _bounded_line
from protocol.constants import MAX_DEAL
from tests.cli.conftest import CliRunner
from tests.cli.test_play import DEAL, solution_lines
from tests.server.conftest import Running

ROOT = Path(__file__).resolve().parents[2]


async def test_an_empty_name_is_asked_again(cli: CliRunner) -> None:
    code, out = await cli("play", "--level", "hard", "--deal", "1", lines=["", "  ", "bob", "q"])
    assert code == 0, out
    assert out.count("a name cannot be empty; type a name") == 2
    assert "registered as bob" in out


async def test_five_refused_names_end_in_a_line_that_says_so(
    cli: CliRunner, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = await cli("play", lines=["", " ", "", "  ", "", "bob"])
    assert code == 1 and out.count("a name cannot be empty; type a name") == 5
    assert "bob" not in out
    err = capsys.readouterr().err
    assert err == "scorpion: no name was taken in 5 tries: nothing was registered\n"


async def test_a_taken_name_is_asked_again(cli: CliRunner, server: Running) -> None:
    await server.player("ada")
    code, out = await cli("play", "--level", "hard", "--deal", "1", lines=["ada", "bob", "q"])
    assert code == 0, out
    assert "rejected (duplicate_name): Another player already has the name ada" in out
    assert "registered as bob" in out


async def test_input_ending_at_the_name_question(
    cli: CliRunner, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = await cli("play", lines=[])
    assert code == 1 and out == ""
    assert capsys.readouterr().err == "scorpion: no name given: nothing was registered\n"


async def test_register_an_empty_name(cli: CliRunner, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = await cli("register", "")
    assert code == 2 and out == ""
    # Nothing was asked, so nothing is to be typed: the line says what is wrong only.
    assert capsys.readouterr().err == "scorpion: a name cannot be empty\n"


async def test_registering_your_own_name_again(cli: CliRunner, server: Running) -> None:
    assert (await cli("register", "ada"))[0] == 0
    code, out = await cli("register", "ada")
    assert code == 0 and out == f"you are already registered as ada on {server.url}\n"


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (["play", "--deal", "0"], "--deal"),
        (["play", "--deal", "-1"], "--deal"),
        (["play", "--deal", str(2**64)], "--deal"),
        (["play", "--deal", "x"], "--deal"),
        (["play", "--level", "nightmare"], "--level"),
        (["replay", "0"], "game"),
        (["replay", "3", "--speed", "fast"], "--speed"),
        (["--lang", "de"], "--lang"),
        (["fly"], "fly"),
    ],
)
def test_a_bad_argument_is_one_line_naming_it(
    argv: list[str], named: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert len(captured.err.splitlines()) == 1 and named in captured.err, captured.err


@pytest.mark.parametrize("line", ["n hard 0", "n hard -1", f"n hard {2**64}", "n hard 5 6"])
def test_a_bad_deal_inside_the_game(line: str) -> None:
    with pytest.raises(CommandError):
        parse(line)


def test_choosing_a_deal_inside_the_game() -> None:
    assert parse("n hard 5").deal == 5 and parse("n hard 5").level == "hard"  # type: ignore[union-attr]
    assert parse("n! 7").deal == 7 and parse("n! 7").force  # type: ignore[union-attr]


def closed_pipe_run(args: list[str], env: dict[str, str]) -> tuple[int, str]:
    """Run a command whose standard output is a pipe nobody reads any more."""
    read, write = os.pipe()
    os.close(read)
    try:
        process = subprocess.run(
            [sys.executable, *args],
            stdout=write,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            cwd=ROOT,
            env=env,
            timeout=60,
            check=False,
        )
    finally:
        os.close(write)
    return process.returncode, process.stderr.decode()


def test_engine_solve_into_a_closed_pipe_is_quiet() -> None:
    code, err = closed_pipe_run(
        ["-m", "engine", "solve", "--level", "hard", "--number", "1", "--budget-ms", "200"],
        dict(os.environ),
    )
    assert err == "" and code != 0


async def test_replay_into_a_closed_pipe_is_quiet(
    cli: CliRunner, server: Running, tmp_path: Path
) -> None:
    assert (await cli("register", "ada"))[0] == 0
    lines = solution_lines("medium", DEAL)
    assert (await cli("play", "--level", "medium", "--deal", str(DEAL), lines=lines))[0] == 0
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path), "SCORPION_SERVER": server.url}
    (tmp_path / "scorpion").mkdir(mode=0o700)
    shutil.copy(tmp_path / "config" / "credentials.json", tmp_path / "scorpion")  # 0600 too
    args = ["-m", "clients.cli", "replay", "1", "--speed", "0"]
    code, err = await asyncio.to_thread(closed_pipe_run, args, env)
    assert err == "" and code != 0


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (
            ["--lang", "fi", "play", "--deal", "0"],
            "scorpion: argumentti --deal: '0' ei ole jaon numero (1..9007199254740991)",
        ),
        (
            ["--lang=ru", "stats", "--level", "x"],
            "scorpion: аргумент --level: 'x' — недопустимое значение; допустимые: "
            "easy, medium, hard, classic, relaxed, three-blind-mice",
        ),
        (["--lang", "fi", "replay"], "scorpion: puuttuu: PELI"),
    ],
)
def test_bad_arguments_in_the_players_language(
    argv: list[str], line: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    assert capsys.readouterr().err == line + "\n"


async def test_an_unprintable_name_is_asked_again(
    cli: CliRunner, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = await cli("play", "--level", "hard", "--deal", "1", lines=["a\x07b", "bob", "q"])
    assert code == 0 and "a name has only printable characters" in out  # asked again
    code, out = await cli("register", "x" * 40)
    assert code == 2 and out == ""  # a bad argument
    err = capsys.readouterr().err
    assert err == "scorpion: a name has at most 32 characters\n"


async def test_a_name_that_shows_as_nothing_is_not_sent(
    cli: CliRunner, capsys: pytest.CaptureFixture[str]
) -> None:
    """Printable to Python, refused by the server (a strike against the address)."""
    for name in ("ad\u034fmin", "\u3164\u3164", "\u2800"):
        code, out = await cli("register", name)
        assert code == 2 and out == ""  # a bad argument, nothing sent
        err = capsys.readouterr().err
        assert err == "scorpion: a name has only printable characters, none invisible or blank\n"


async def piped(server: Running, config_dir: Path, stdin: str, *args: str) -> tuple[int, str]:
    """``scorpion ARGS`` reading ``stdin`` as a pipe is read (its reader thread), with a limit."""
    out = io.StringIO()
    options = parse_args(["--server", server.url, *args], env={})
    terminal = Terminal(out, stdin=io.StringIO(stdin))
    code = await asyncio.wait_for(run(options, terminal, config_dir=config_dir), 30)
    return code, out.getvalue()


async def test_the_end_of_piped_input_at_a_question_ends_like_quit(
    cli: CliRunner, server: Running, config_dir: Path
) -> None:
    assert (await cli("register", "ada"))[0] == 0
    code, out = await piped(server, config_dir, "r\n", "play", "--level", "hard", "--deal", "1")
    assert code == 0, out
    assert out.endswith("Your moves and undo history will be gone. [y/N]\nnothing was changed\n")
    code, out = await piped(server, config_dir, "", "play")
    assert code == 0 and "hard · deal 1" in out  # the game stayed open


async def test_the_end_of_input_is_final() -> None:
    for terminal in (Terminal(io.StringIO(), []), Terminal(io.StringIO(), stdin=io.StringIO(""))):
        assert await terminal.readline() is None
        assert await asyncio.wait_for(terminal.readline(), 5) is None


@pytest.mark.parametrize("column", ["²", "①", "３", "٣", "-1", "x"])
async def test_a_column_that_is_not_ascii_digits_is_a_usage_error(
    cli: CliRunner, column: str
) -> None:
    lines = ["ada", f"7c {column}", f"n hard {column}", "q"]
    code, out = await cli("play", "--level", "hard", "--deal", "1", lines=lines)
    assert code == 0, out
    assert "usage: 7c [column]" in out
    assert f"{column} is not a deal number" in out  # after a level, the deal is wrong


@pytest.mark.parametrize("text", ["²", "①", "３", "٣", "1" * 5000, "0"])
def test_only_ascii_digits_are_numbers(text: str) -> None:
    assert number(text, MAX_DEAL) is None
    with pytest.raises(CommandError, match="is not a deal number"):
        parse(f"n hard {text}")


def test_leading_zeros_are_read() -> None:
    assert number("0" * 5000 + "7", 10) == 7 and number("007", 6) is None


@pytest.mark.parametrize("text", ["²", "①", "３", "1" * 5000])
def test_a_deal_argument_that_is_not_ascii_digits(
    text: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["play", "--deal", text]) == 2
    assert f"{text!r} is not a deal number" in capsys.readouterr().err


async def test_a_column_too_big_for_the_wire_is_refused_and_play_goes_on(cli: CliRunner) -> None:
    huge = "99999999999999999999"
    lines = ["ada", f"7c {huge}", "7c 2147483648", "7c 0", "7c 5", "q"]
    code, out = await cli("play", "--level", "hard", "--deal", "1", lines=lines)
    assert code == 0, out
    assert f"there is no column {huge}\nthere is no column 2147483648\n" in out
    assert "there is no column 0\n" in out and "moved 7♣" in out


async def test_a_hint_at_a_deal_that_cannot_be_won_still_names_a_move(cli: CliRunner) -> None:
    """R20: a hint names an available move; that nothing wins is said apart from it."""
    lines = ["ada", "h", "d", "h", "q"]  # hard deal 1 is lost from the deal
    code, out = await cli("play", "--level", "hard", "--deal", "1", lines=lines)
    assert code == 0, out
    first, _, after_deal = out.partition("dealt")
    assert "hint: move 7♣ to column 5" in first, out
    assert "hint: move " in after_deal and "hint: none" not in out, out


class _ClosingOutput(io.StringIO):
    """Standard output that fails (``error``) from the first line that holds ``word`` on."""

    def __init__(self, word: str, error: OSError) -> None:
        super().__init__()
        self.word = word
        self.error = error
        self.failed = False

    def write(self, text: str) -> int:
        if self.failed or self.word in text:
            self.failed = True
            raise self.error
        return super().write(text)


@pytest.mark.parametrize("json_mode", [False, True])
async def test_a_closed_pipe_noticed_while_printing_a_push_ends_quietly(
    server: Running, config_dir: Path, json_mode: bool
) -> None:
    """The move's events are pushes, printed by the connection's reader: the closed pipe
    it meets there ends the command as one met by the command itself (exit 141,
    ``__main__``), not as a connection that failed."""
    options = parse_args(["--server", server.url, "register", "ada"], env={})
    assert await run(options, Terminal(io.StringIO(), []), config_dir=config_dir) == 0
    flags = ["--json"] if json_mode else []
    argv = [*flags, "--server", server.url, "play", "--level", "hard", "--deal", "1"]
    out = _ClosingOutput('"moved"' if json_mode else "moved 7", BrokenPipeError(32, "Broken pipe"))
    terminal = Terminal(out, ["7c 5", "u", "b"])
    async with asyncio.timeout(5):  # at once, not after the wait for the move's events
        with pytest.raises(BrokenPipeError):
            await run(parse_args(argv, env={}), terminal, config_dir=config_dir)
    assert out.failed


async def test_a_full_output_noticed_while_printing_a_push_is_said_as_such(
    server: Running, config_dir: Path
) -> None:
    options = parse_args(["--server", server.url, "register", "ada"], env={})
    assert await run(options, Terminal(io.StringIO(), []), config_dir=config_dir) == 0
    argv = ["--server", server.url, "play", "--level", "hard", "--deal", "1"]
    out = _ClosingOutput("moved 7", OSError(28, "No space left on device"))
    async with asyncio.timeout(5):
        with pytest.raises(OutputError, match="No space left on device"):
            await run(parse_args(argv, env={}), Terminal(out, ["7c 5", "u"]), config_dir=config_dir)


async def test_waiting_for_an_actions_events_ends_when_the_connection_has_failed() -> None:
    """The reader that would have brought the events is gone (a closed pipe it met, or the
    server for good): the wait ends at once with that failure, not after its 10 s."""
    session = GameSession(Terminal(io.StringIO(), []), Style(color=False), json_mode=False)
    conn = Connection("ws://127.0.0.1:9/")
    session.conn = conn
    session.game, session.v = 1, 3
    waiting = asyncio.ensure_future(session.until(4))
    await asyncio.sleep(0.05)
    conn._fail(BrokenPipeError(32, "Broken pipe"))
    async with asyncio.timeout(1):
        with pytest.raises(BrokenPipeError):
            await waiting


async def test_a_line_of_piped_input_past_the_limit_is_dropped_with_a_word(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Input that never ends a line (``< /dev/zero``) was read into one string without
    bound (about 500 MB a second), until the reader thread died of a MemoryError."""
    long = "x" * (LINE_LIMIT + 1)
    at_limit = "y" * LINE_LIMIT
    terminal = Terminal(io.StringIO(), stdin=io.StringIO(f"a\n{long}\n{at_limit}\nb\n{long}"))
    lines = [await asyncio.wait_for(terminal.readline(), 5) for _ in range(4)]
    assert lines == ["a", at_limit, "b", None]
    said = capsys.readouterr().err
    assert said.count(f"a line of more than {LINE_LIMIT:,} characters was ignored") == 2, said


def test_input_that_never_ends_a_line_is_read_in_bounded_pieces() -> None:
    class Endless(io.StringIO):
        def __init__(self) -> None:
            self.asked: list[int] = []

        def readline(self, size: int | None = -1) -> str:  # type: ignore[override]
            assert size is not None and 0 < size <= LINE_LIMIT + 1  # never "the whole line"
            self.asked.append(size)
            return "\0" * size if len(self.asked) < 50 else ""

    endless = Endless()
    assert _bounded_line(endless) is _TOO_LONG
    assert len(endless.asked) == 50


@pytest.mark.parametrize("pasted", [False, True])
async def test_a_line_typed_past_the_limit_is_dropped_in_the_editor(
    monkeypatch: pytest.MonkeyPatch, pasted: bool
) -> None:
    """Past ``LINE_LIMIT`` characters a line typed in the editor (or pasted) kept growing,
    and the editor copied it whole at each key: it is dropped with a word now, as a line
    that long from a script is, and the characters past the limit are not kept."""
    from prompt_toolkit.application import create_app_session
    from prompt_toolkit.input import create_pipe_input
    from prompt_toolkit.output import DummyOutput

    from clients.cli import terminal

    monkeypatch.setattr(terminal, "LINE_LIMIT", 10)
    err = io.StringIO()
    long = "x" * 25
    with create_pipe_input() as keys, create_app_session(input=keys, output=DummyOutput()):
        editor = Terminal(io.StringIO(), editor=True, err=err)
        keys.send_text(f"\x1b[200~{long}\nh\n\x1b[201~" if pasted else f"{long}\rh\r")
        assert await asyncio.wait_for(editor.readline(), 10) == "h"
    assert err.getvalue() == "scorpion: a line of more than 10 characters was ignored\n"


async def test_a_terminal_that_is_gone_is_the_end_of_input(monkeypatch: pytest.MonkeyPatch) -> None:
    """Setting the terminal's modes failed with EIO (hung up, or the client's process group
    orphaned in the background): a ``termios.error`` left the line editor as a traceback.
    It is the end of input, as a read that fails so is."""
    import errno
    import termios

    from prompt_toolkit.application import create_app_session
    from prompt_toolkit.input import create_pipe_input
    from prompt_toolkit.output import DummyOutput

    class Gone:
        def __enter__(self) -> None:
            raise termios.error(errno.EIO, "Input/output error")

        def __exit__(self, *args: object) -> None:
            pass

    with create_pipe_input() as keys, create_app_session(input=keys, output=DummyOutput()):
        monkeypatch.setattr(keys, "raw_mode", Gone)
        editor = Terminal(io.StringIO(), editor=True, err=io.StringIO())
        assert await asyncio.wait_for(editor.readline(), 10) is None
        assert await asyncio.wait_for(editor.readline(), 10) is None


async def test_a_long_line_read_at_once_is_inserted_at_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A long line arriving without bracketed paste (typed fast, or a terminal with it
    off) was inserted a character at a time, each through prompt_toolkit's key-binding
    lookup: 20,000 characters kept the client busy for half a minute. What the editor
    has read already goes in together."""
    from prompt_toolkit.application import create_app_session
    from prompt_toolkit.buffer import Buffer
    from prompt_toolkit.input import create_pipe_input
    from prompt_toolkit.output import DummyOutput

    inserts: list[str] = []
    insert_text = Buffer.insert_text

    def counted(self: Buffer, data: str, *args: object, **kwargs: object) -> None:
        inserts.append(data)
        insert_text(self, data, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Buffer, "insert_text", counted)
    line = "7c 5 " * 400
    with create_pipe_input() as keys, create_app_session(input=keys, output=DummyOutput()):
        editor = Terminal(io.StringIO(), editor=True, err=io.StringIO())
        keys.send_text(line + "\r")
        assert await asyncio.wait_for(editor.readline(), 30) == line
    assert "".join(inserts) == line and len(inserts) < 10


async def test_a_terminal_gone_as_the_line_editor_is_cancelled_is_no_task_traceback() -> None:
    """The program ending (SIGHUP) cancels the line editor, whose modes then cannot be set
    back on a terminal that hung up: the reading task ended in ``termios.error`` EIO,
    which no one awaited any more ("Task exception was never retrieved" and a
    traceback on standard error). It is the end of input."""
    import errno
    import termios
    from types import SimpleNamespace

    from clients.cli.app import App

    async def hung_up(prompt: str) -> str:
        raise termios.error(errno.EIO, "Input/output error")

    async def broken(prompt: str) -> str:
        raise termios.error(errno.EBADF, "Bad file descriptor")

    app: Any = SimpleNamespace(terminal=SimpleNamespace(readline=hung_up))
    assert await App._read_interruptible(app, "> ") == (None, None)
    app.terminal.readline = broken  # any other failure is one
    with pytest.raises(termios.error):
        await App._read_interruptible(app, "> ")
