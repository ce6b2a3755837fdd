"""The client on a real terminal, driven through tmux: the clock, questions, editing, notices.

Each test starts ``python -m clients.cli play`` in a detached tmux session of
its own (a private socket, 80x24) against the test's server, types into it
with ``send-keys`` and reads the screen with ``capture-pane``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shutil
import signal
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from clients.cli import config
from tests.server.conftest import Running

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


@dataclass
class Screen:
    socket: str

    async def tmux(self, *args: str) -> str:
        process = await asyncio.create_subprocess_exec(
            "tmux", "-L", self.socket, *args, stdout=asyncio.subprocess.PIPE
        )
        out, _ = await asyncio.wait_for(process.communicate(), 10)
        return out.decode()

    async def text(self) -> str:
        return await self.tmux("capture-pane", "-p", "-t", "cli")

    async def keys(self, *keys: str) -> None:
        await self.tmux("send-keys", "-t", "cli", *keys)

    async def wait_for(self, pattern: str, timeout: float = 15.0) -> str:
        deadline = time.monotonic() + timeout
        screen = ""
        while time.monotonic() < deadline:
            screen = await self.text()
            if re.search(pattern, screen):
                return screen
            await asyncio.sleep(0.1)
        raise AssertionError(f"{pattern!r} never appeared on:\n{screen}")


@pytest.fixture
async def ada(server: Running, tmp_path: Path) -> str:
    """A registered player whose token the terminal's client has; returns the token."""
    client = await server.player("ada")
    token = str(client.token)
    config.save(server.url, config.Credentials("ada", token), tmp_path / "scorpion")
    return token


@contextlib.asynccontextmanager
async def launch(
    server: Running,
    home: Path,
    *args: str,
    env: str = "",
    err: Path | None = None,
    width: int = 80,
) -> AsyncIterator[Screen]:
    """``scorpion ARGS`` in a detached 80x24 (``width`` x 24) tmux session of its own,
    ``env`` (``A=b``) set.

    With ``err``, standard error goes to that file: a long traceback would
    scroll off the 24 lines of the screen before a test could read it.
    """
    shown = Screen(f"scorpion-test-{os.getpid()}-{id(home)}")
    command = (
        f"cd {ROOT} && unset COLUMNS LINES && {env} XDG_CONFIG_HOME={home} "
        f"SCORPION_SERVER={server.url} {sys.executable} -m clients.cli --no-color " + " ".join(args)
    )
    if err is not None:
        command += f" 2>{err}"
    command += '; echo "exit status $?"; sleep 60'  # the pane stays, to be read
    await shown.tmux("new-session", "-d", "-s", "cli", "-x", str(width), "-y", "24", command)
    try:
        yield shown
    finally:
        await shown.tmux("kill-server")


@pytest.fixture
async def screen(server: Running, tmp_path: Path, ada: str) -> AsyncIterator[Screen]:
    async with launch(server, tmp_path, "play", "--level", "hard", "--deal", "1") as shown:
        await shown.wait_for(r"(?m)^>")
        yield shown


def clock(text: str) -> int:
    """The seconds on the status bar (the last status line on the screen)."""
    found = re.findall(r"time (\d+):(\d\d)", text)
    assert found, text
    minutes, seconds = found[-1]
    return int(minutes) * 60 + int(seconds)


async def test_the_clock_ticks_on_the_status_bar(screen: Screen) -> None:
    first = clock(await screen.wait_for(r"time 0:0\d"))
    await asyncio.sleep(3.2)
    later = clock(await screen.text())
    assert 2 <= later - first <= 4


async def test_restart_asks_first(screen: Screen) -> None:
    await screen.keys("7c 5", "Enter")
    await screen.wait_for("moved 7♣")
    await screen.keys("r", "Enter")
    await screen.wait_for(r"Restart from the deal\? .* \[y/N\]")
    await screen.keys("n", "Enter")
    await screen.wait_for("nothing was changed")
    await screen.keys("r", "Enter")
    await screen.wait_for(r"(?m)\[y/N\]\n\?")
    await screen.keys("y", "Enter")
    await screen.wait_for("restarted from the deal")


async def test_line_editing_with_the_arrow_keys(screen: Screen) -> None:
    await screen.keys("7 5", "Left", "Left", "c", "Enter")  # "7 5" becomes "7c 5"
    text = await screen.wait_for("moved 7♣ \\(7 cards\\)")
    assert "^[[D" not in text
    await screen.keys("Up")  # the history gives the last command back
    await screen.wait_for(r"(?m)^> 7c 5$")


async def test_a_notice_arrives_while_a_command_is_typed(
    screen: Screen, server: Running, ada: str
) -> None:
    await screen.keys("4s")
    await screen.wait_for("> 4s")
    other = await server.connect()
    await other.hello(token=ada)
    games = await other.request("games")
    game = games["games"][0]["game"]
    assert (await other.request("open_game", game=game))["type"] == "game"
    assert (await other.request("move", game=game, v=0, card="7C", to=5))["type"] == "ack"
    # The notice is printed above the prompt, which is then drawn again with the typed text:
    # wait for both, since a loaded machine can show the screen between the two.
    text = await screen.wait_for(r"moved 7♣ \(7 cards\)[\s\S]*\n> 4s")
    lines = text.rstrip("\n").splitlines()
    prompt = [line for line in lines if line.startswith("> ")]
    assert prompt and prompt[-1].rstrip() == "> 4s", text  # the typed command is intact
    assert lines.index(prompt[-1]) > max(i for i, row in enumerate(lines) if "moved 7♣" in row)


async def test_the_board_follows_the_terminal_size(screen: Screen) -> None:
    await screen.tmux("resize-window", "-t", "cli", "-x", "30", "-y", "24")
    text = await screen.wait_for(r"(?m)^ 7: ")  # one line per column
    assert all(len(line) <= 30 for line in text.splitlines())
    await screen.tmux("resize-window", "-t", "cli", "-x", "160", "-y", "50")
    # The board drawn last is side by side again, in wide cells.
    await screen.wait_for(
        r"Scorpion ·(?:(?!Scorpion ·)[\s\S])*\n +1 {7}2(?:(?!Scorpion ·)[\s\S])*$"
    )


async def test_the_level_menu_and_a_chosen_deal(server: Running, tmp_path: Path, ada: str) -> None:
    async with launch(server, tmp_path, "--lang", "fi", "play") as shown:
        text = await shown.wait_for(r"taso \(numero tai nimi")
        assert "Valitse taso:" in text and "6  kolme sokeaa hiirtä" in text
        assert "1  helppo" in text and "ei vielä pelattu" in text
        await shown.keys("3", "Enter")
        await shown.wait_for("jaon numero")
        await shown.keys("5", "Enter")
        text = await shown.wait_for("vaikea · jako 5")
        await shown.keys("i", "Enter")
        await shown.wait_for("Vinkit:")
        await shown.wait_for("Tyhjään sarakkeeseen käy vain kuningas.")


@pytest.mark.parametrize("width", [40, 30])
async def test_the_level_menu_shows_each_level_s_own_row_fitted_to_the_terminal(
    server: Running, tmp_path: Path, ada: str, width: int
) -> None:
    """Games dealt as winnable have a row of their own, of the same level: the menu
    showed whichever row came last (1 winnable game of 3), or none ("not played yet")
    for a level played on winnable deals alone; and its lines, wider than the
    terminal, were cut in the middle of a word."""
    other = await server.connect()
    assert (await other.hello(ada))["type"] == "welcome"
    for level, ask in (
        ("medium", {"deal": 1}),
        ("medium", {"deal": 2}),
        ("medium", {"winnable": True}),
        ("relaxed", {"winnable": True}),
    ):
        started = await other.request("new_game", level=level, **ask)
        assert started["type"] == "game", started
        await other.request("resign", game=started["game"])
    await other.close()
    async with launch(server, tmp_path, "--lang", "ru", "play", width=width) as shown:
        text = await shown.wait_for(r"уровень \(номер или имя")
    menu = text[text.index("1  ") : text.index("уровень (номер")]
    assert all(len(line) <= width for line in menu.splitlines()), menu
    words = " ".join(menu.split())  # each line's words, the breaks between lines as spaces
    assert "2 средний игр 2 · побед 0 (0 %)" in words or "2 средний игр 2 побед" in words, menu
    assert "5 упрощённый (решаемые расклады) игр 1" in words, menu
    assert words.count("быстрейшая победа -") == 2, menu  # words whole, broken between them
    assert "ещё не играли" in words, menu


async def test_a_terminal_too_narrow_for_the_menu_still_gets_it(
    server: Running, tmp_path: Path, ada: str
) -> None:
    """At 5 columns or fewer the menu's width less its indent went negative, and
    the client ended with "ValueError: invalid width -1" after the menu's title."""
    async with launch(server, tmp_path, "play", width=4) as shown:
        # the screen's lines joined: each holds 4 columns of the words
        pattern = re.compile(r"\(number or name, Enter: medium\):|exit status")
        deadline = time.monotonic() + 15
        while not pattern.search(text := (await shown.text()).replace("\n", "")):
            assert time.monotonic() < deadline, text
            await asyncio.sleep(0.1)
    assert "rror" not in text and "exit status" not in text, text


async def test_the_level_menu_asks_again_after_a_typo(
    server: Running, tmp_path: Path, ada: str
) -> None:
    """Neither a level nor a deal that is none is taken for the default."""
    async with launch(server, tmp_path, "play") as shown:
        await shown.wait_for(r"level \(number or name")
        await shown.keys("0", "Enter")
        text = await shown.wait_for(
            r"(?s)no such level: type its number \(1\.\.6\) or its name.*"
            r"level \(number or name"
        )  # asked again
        assert "deal number" not in text
        await shown.keys("hrad", "Enter")
        await shown.wait_for(r"(?s)no such level.*no such level")
        await shown.keys("hard", "Enter")
        await shown.wait_for("deal number")
        await shown.keys("0", "Enter")
        await shown.wait_for(r"not a deal number \(1\.\.\d+\): type one, w, or Enter")
        await shown.keys("5", "Enter")
        await shown.wait_for("hard · deal 5")


async def test_a_game_started_elsewhere_while_the_menu_was_shown_is_not_abandoned_unasked(
    server: Running, tmp_path: Path, ada: str
) -> None:
    """The menu is shown when the player has no unfinished game; one started on another
    device meanwhile was abandoned by the level chosen here. Now it is asked, and kept
    (and played here) unless the answer is yes."""
    async with launch(server, tmp_path, "play") as shown:
        await shown.wait_for(r"level \(number or name")
        other = await server.connect()
        assert (await other.hello(ada))["type"] == "welcome"
        theirs = (await other.request("new_game", level="hard", deal=3))["game"]
        await shown.keys("hard", "Enter")
        await shown.wait_for("deal number")
        await shown.keys("5", "Enter")
        await shown.wait_for(f"Your unfinished game {theirs}, started on another device")
        await shown.keys("n", "Enter")
        await shown.wait_for(f"game {theirs} · hard · deal 3")
        await other.close()
    games = await (await server.connect()).hello(ada)
    assert [game["game"] for game in games["games"]] == [theirs]  # still unfinished


async def test_a_finnish_screen_at_80x24(server: Running, tmp_path: Path, ada: str) -> None:
    async with launch(server, tmp_path, "--lang", "fi", "play", "--level", "hard") as shown:
        await shown.wait_for(r"(?m)^>")
        text = await shown.wait_for("siirrot 0")  # the status bar is drawn after the prompt
        assert "varapakka: 3" in text
        assert len(text.splitlines()) <= 24 and all(len(row) <= 80 for row in text.splitlines())


async def test_the_menu_asks_for_a_winnable_deal(server: Running, tmp_path: Path, ada: str) -> None:
    async with launch(server, tmp_path, "play") as shown:
        await shown.wait_for(r"level \(number or name")
        await shown.keys("hard", "Enter")
        await shown.wait_for("w for a winnable deal")
        await shown.keys("w", "Enter")
        # The prompt may be drawn while the server still searches for a deal (seconds on
        # a busy machine): what is waited for is the game, or the refusal.
        text = await shown.wait_for(
            r"Scorpion · game \d+ · hard · deal|cannot choose a winnable deal|rejected", 30
        )
        if "cannot choose a winnable deal" not in text:  # a server with the option
            assert "rejected" not in text
        assert re.search(r"Scorpion · game \d+ · hard · deal", text), text


async def test_the_clock_stops_while_paused(screen: Screen) -> None:
    await screen.keys("p", "Enter")
    await screen.wait_for(r"PAUSED")
    await asyncio.sleep(1.2)  # the server's clock event may move it by a rounding
    held = clock(await screen.text())
    await asyncio.sleep(2.2)
    assert clock(await screen.text()) == held
    await screen.keys("p", "Enter")
    await screen.wait_for("resumed")
    await asyncio.sleep(2.2)
    assert clock(await screen.text()) >= held + 1


async def test_tab_completes_commands_and_cards(screen: Screen) -> None:
    await screen.keys("gu", "Tab")
    await screen.wait_for(r"(?m)^> guide")
    await screen.keys("C-u", "9", "Tab")  # 9♦ is the only nine face up on hard deal 1
    await screen.wait_for(r"(?m)^> 9♦")


@pytest.mark.parametrize("keys", ["C-c", "C-d"])
async def test_an_interrupt_or_the_end_of_input_at_the_name_question(
    server: Running, tmp_path: Path, keys: str
) -> None:
    err = tmp_path / "stderr"
    async with launch(server, tmp_path, "play", "--level", "hard", err=err) as shown:
        await shown.wait_for("player name:")
        await shown.keys(keys)
        status = "130" if keys == "C-c" else "1"
        text = await shown.wait_for(f"exit status {status}")
        assert "Traceback" not in text and "empty" not in text
    said = "" if keys == "C-c" else "scorpion: no name given: nothing was registered\n"
    assert err.read_text() == said  # an interrupt is its exit status, not a traceback


@pytest.mark.parametrize("question", [False, True])
async def test_an_interrupt_ends_the_game(
    server: Running, tmp_path: Path, ada: str, question: bool
) -> None:
    err = tmp_path / "stderr"
    args = ("play", "--level", "hard", "--deal", "1")
    async with launch(server, tmp_path, *args, err=err) as shown:
        await shown.wait_for(r"(?m)^>")
        if question:
            await shown.keys("r", "Enter")
            await shown.wait_for(r"(?m)\[y/N\]\n\?")
        await shown.keys("7c 5", "C-c")
        text = await shown.wait_for("exit status 130")
        assert "Traceback" not in text
    assert err.read_text() == ""


async def test_the_end_of_input_at_a_question_keeps_the_game_and_ends(screen: Screen) -> None:
    await screen.keys("r", "Enter")
    await screen.wait_for(r"(?m)\[y/N\]\n\?")
    await screen.keys("C-d")
    text = await screen.wait_for("exit status 0")
    assert "nothing was changed" in text


async def test_the_end_of_input_at_the_level_menu_starts_no_game(
    server: Running, tmp_path: Path, ada: str
) -> None:
    async with launch(server, tmp_path, "play") as shown:
        await shown.wait_for(r"level \(number or name")
        await shown.keys("C-d")
        text = await shown.wait_for("exit status 0")
        assert "Scorpion · game" not in text


async def test_an_ascii_terminal_shows_suit_letters(
    server: Running, tmp_path: Path, ada: str
) -> None:
    args = ("play", "--level", "hard", "--deal", "1")
    async with launch(server, tmp_path, *args, env="PYTHONIOENCODING=ascii") as shown:
        await shown.wait_for(r"(?m)^>")
        await shown.wait_for("hard - moves 0")  # the status bar, "·" as "-"
        await shown.keys("7c 5", "Enter")
        text = await shown.wait_for("moved 7C")
        assert "10H" in text and "?" not in text.replace("? for help", "")


@pytest.mark.parametrize("sequence", ["\x1b[31m", "\x1b[0m", "\x1b[1;2;3M"])
async def test_a_pasted_escape_sequence_is_no_mouse_and_no_traceback(
    server: Running, tmp_path: Path, ada: str, sequence: str
) -> None:
    """The line editor's input parser reads ``ESC [ 3 1 m`` (colour codes in pasted text)
    as a terminal's mouse report, which the editor's own handler failed on."""
    err = tmp_path / "err.txt"
    async with launch(server, tmp_path, "play", "--level", "hard", "--deal", "1", err=err) as shown:
        await shown.wait_for(r"(?m)^>")
        await shown.keys("-l", sequence)  # literally, as a paste would type it
        await shown.keys("7c 5", "Enter")
        text = await shown.wait_for("moved 7♣")
    assert "Unhandled exception" not in text and "Traceback" not in text, text
    assert "Traceback" not in err.read_text()


async def test_pasted_lines_run_one_by_one(screen: Screen) -> None:
    """A terminal pastes between bracketed-paste marks; the line editor kept the pasted
    lines in one line, which ran as one unknown command (``h\\nb\\nh``) once entered."""
    await screen.tmux("set-buffer", "-b", "pasted", "7c 5\nu\nh\n")
    await screen.tmux("paste-buffer", "-p", "-b", "pasted", "-t", "cli")  # -p: bracketed
    text = await screen.wait_for("hint: ")
    assert "moved 7♣" in text and "undone" in text, text
    assert "unknown command" not in text, text


async def test_ctrl_z_stops_the_client_and_fg_brings_it_back(
    server: Running, tmp_path: Path, ada: str
) -> None:
    """In an interactive shell, Ctrl-Z at the prompt stops the client as it stops any job
    (the line editor typed ``^Z`` into the line instead), and ``fg`` resumes the game."""
    shown = Screen(f"scorpion-test-{os.getpid()}-{id(tmp_path)}-z")
    await shown.tmux(
        "new-session", "-d", "-s", "cli", "-x", "80", "-y", "24", "bash --norc --noprofile -i"
    )
    try:
        await shown.keys(
            "-l",
            f"cd {ROOT} && unset COLUMNS LINES && XDG_CONFIG_HOME={tmp_path} "
            f"SCORPION_SERVER={server.url} {sys.executable} -m clients.cli --no-color "
            "play --level hard --deal 1",
        )
        await shown.keys("Enter")
        await shown.wait_for(r"(?m)^>")
        await shown.keys("C-z")
        await shown.wait_for(r"Stopped")
        await shown.keys("clear", "Enter")
        await shown.keys("fg", "Enter")
        await shown.wait_for(r"(?m)^>")
        await shown.keys("7c 5", "Enter")
        text = await shown.wait_for("moved 7♣")
        assert "^Z" not in text, text
    finally:
        await shown.tmux("kill-server")


@pytest.mark.parametrize("how", ["&", "C-z"])
async def test_kill_ends_a_client_in_the_background(
    server: Running, tmp_path: Path, ada: str, how: str
) -> None:
    """``kill %1`` (SIGTERM, then SIGCONT) to a client started with ``&`` or stopped with
    Ctrl-Z: continued in the background, the line editor set the terminal's modes again,
    was stopped for it (SIGTTOU) before the signal could be handled, and stayed stopped.
    It ends with 143, as in the foreground, saying nothing."""
    shown = Screen(f"scorpion-test-{os.getpid()}-{id(tmp_path)}-bg")
    err = tmp_path / "stderr"
    await shown.tmux(
        "new-session", "-d", "-s", "cli", "-x", "80", "-y", "24", "bash --norc --noprofile -i"
    )
    try:
        await shown.keys(
            "-l",
            # set -b: a job's end is said at once; the client alone in its job, no subshell
            f"set -b; cd {ROOT}; unset COLUMNS LINES; XDG_CONFIG_HOME={tmp_path} "
            f"SCORPION_SERVER={server.url} {sys.executable} -m clients.cli --no-color "
            f"play --level hard --deal 1 2>{err} {'&' if how == '&' else ''}",
        )
        await shown.keys("Enter")
        if how == "C-z":
            await shown.wait_for(r"(?m)^>")
            await shown.keys("C-z")
        await shown.wait_for(r"Stopped")
        await shown.keys("kill %1", "Enter")
        text = await shown.wait_for(r"Exit \d+|Terminated|Killed|Quit")
    finally:
        await shown.tmux("kill-server")
    assert re.search(r"Exit 143 +XDG_CONFIG_HOME", text), text
    assert err.read_text() == ""


async def test_a_client_orphaned_in_the_background_ends_as_at_the_end_of_input(
    server: Running, tmp_path: Path, ada: str
) -> None:
    """A client whose shell is gone (``( scorpion play & )``: its process group orphaned,
    in the background) can never have the terminal: setting its modes failed with EIO,
    a traceback. It ends as at the end of input (exit status 0, the game kept)."""
    shown = Screen(f"scorpion-test-{os.getpid()}-{id(tmp_path)}-orphan")
    err, status, pid = tmp_path / "stderr", tmp_path / "status", tmp_path / "pid"
    await shown.tmux(
        "new-session", "-d", "-s", "cli", "-x", "80", "-y", "24", "bash --norc --noprofile -i"
    )
    try:
        await shown.keys(
            "-l",
            f"cd {ROOT}; unset COLUMNS LINES; export XDG_CONFIG_HOME={tmp_path} "
            f"SCORPION_SERVER={server.url}; ( {{ sh -c 'echo $$ >{pid}; exec "
            f"{sys.executable} -m clients.cli --no-color play --level hard --deal 1' "
            f'</dev/tty 2>{err}; echo "exit status $?" >{status}; }} & )',
        )
        await shown.keys("Enter")
        deadline = time.monotonic() + 30
        while not status.exists() and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
    finally:
        await shown.tmux("kill-server")
        with contextlib.suppress(OSError, ValueError):  # still there: a failure, not left
            os.kill(int(pid.read_text()), signal.SIGKILL)
    assert status.exists() and status.read_text() == "exit status 0\n"
    assert err.read_text() == ""


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT])
async def test_a_signal_that_ends_the_client_gives_the_terminal_back(
    server: Running, tmp_path: Path, ada: str, signum: signal.Signals
) -> None:
    """``kill`` (SIGTERM, SIGHUP, SIGQUIT) at the prompt ended the client with the
    terminal still raw (no echo, no lines) for the shell after it; the line editor now
    restores it, and the exit status is 128 + the signal's number, with nothing said."""
    shown = Screen(f"scorpion-test-{os.getpid()}-{id(tmp_path)}-{signum}")
    err = tmp_path / "stderr"
    command = (
        f"cd {ROOT} && unset COLUMNS LINES && export XDG_CONFIG_HOME={tmp_path} "
        f"SCORPION_SERVER={server.url} && sh -c 'echo $$ >{tmp_path}/pid && exec "
        f"{sys.executable} -m clients.cli --no-color play --level hard --deal 1' 2>{err}; "
        'echo "exit status $?"; stty -a; sleep 60'
    )
    await shown.tmux("new-session", "-d", "-s", "cli", "-x", "80", "-y", "24", command)
    try:
        await shown.wait_for(r"(?m)^>")
        os.kill(int((tmp_path / "pid").read_text()), signum)
        text = await shown.wait_for(r"exit status \d+(.|\n)*icanon")
    finally:
        await shown.tmux("kill-server")
    assert f"exit status {128 + signum}" in text
    modes = re.findall(r"(?<![\w-])-?(?:icanon|echo)(?![\w-])", text.split("exit status")[1])
    assert modes == ["icanon", "echo"], modes
    assert err.read_text() == ""
