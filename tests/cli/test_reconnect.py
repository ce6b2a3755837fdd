"""The connection drops mid-game: the client reconnects, resyncs and loses or repeats no move."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from clients.cli import config
from clients.cli.connection import Connection, Message
from tests.cli.conftest import CliRunner
from tests.cli.test_play import DEAL, solution_lines
from tests.server.conftest import Running

DROP_AFTER_SENDING = 10  # the move is sent, its reply is lost with the connection
DROP_BEFORE_SENDING = 20  # the move is never sent on the old connection


class Flaky(Connection):
    """A connection whose network fails twice around given moves."""

    last: Flaky | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.move_ids: list[Any] = []
        self.sent: list[Message] = []
        Flaky.last = self

    async def _send(self, message: Message) -> None:
        first = message["type"] == "move" and message["id"] not in self.move_ids
        if first:
            self.move_ids.append(message["id"])
        if first and len(self.move_ids) == DROP_BEFORE_SENDING:
            self.drop()
        self.sent.append(message)
        await super()._send(message)
        if first and len(self.move_ids) == DROP_AFTER_SENDING:
            self.drop()


async def play_deal(
    cli: CliRunner, lines: list[str], connection_class: type[Connection]
) -> tuple[int, str]:
    """``scorpion play`` of medium deal ``DEAL``, typing ``lines``, over ``connection_class``."""
    return await cli(
        "play",
        "--level",
        "medium",
        "--deal",
        str(DEAL),
        lines=lines,
        connection_class=connection_class,
    )


async def test_a_dropped_connection_loses_no_move(cli: CliRunner, server: Running) -> None:
    lines = solution_lines("medium", DEAL)
    assert len(lines) > DROP_BEFORE_SENDING
    assert (await cli("register", "ada"))[0] == 0
    code, out = await play_deal(cli, lines, Flaky)
    assert code == 0, out
    assert "rejected" not in out
    assert "=== You won! ===" in out and f"moves  {len(lines)}" in out
    flaky = Flaky.last
    assert flaky is not None and flaky.reconnects == 2
    # Both dropped moves went out again with the same id and version.
    for number in (DROP_AFTER_SENDING, DROP_BEFORE_SENDING):
        request_id = flaky.move_ids[number - 1]
        copies = [message for message in flaky.sent if message.get("id") == request_id]
        assert len(copies) == 2 and copies[0] == copies[1]
    code, out = await cli("games")
    assert code == 0
    status, moves = out.splitlines()[1].split()[2:4]
    assert status == "won" and int(moves) == len(lines)


class ClosedBehind(Connection):
    """A connection on which the game is closed, as if by a lost open, before the third move."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.moves = 0

    async def request(self, type_: str, **fields: Any) -> Message:
        if type_ == "move":
            self.moves += 1
            if self.moves == 3:
                await super().request("close_game", game=fields["game"])
        return await super().request(type_, **fields)


async def test_a_game_not_open_here_is_opened_again(cli: CliRunner) -> None:
    """PROTOCOL.md section 4: ``not_open`` is answered by ``open_game``; the move then goes."""
    lines = solution_lines("medium", DEAL)
    script = [*lines[:3], *lines[2:]]  # the refused third move is typed again
    assert (await cli("register", "ada"))[0] == 0
    code, out = await play_deal(cli, script, ClosedBehind)
    assert code == 0, out
    assert out.count("rejected") == 1 and "rejected (not_open)" in out
    assert "it is being opened again" in out
    assert "=== You won! ===" in out and f"moves  {len(lines)}" in out


class ClosedAndRefused(ClosedBehind):
    """As ``ClosedBehind``, and the game cannot be opened again: it is open on as many
    connections as one game may be (``too_many_watchers``)."""

    async def request(self, type_: str, **fields: Any) -> Message:
        if type_ == "open_game" and self.moves >= 3:
            return {
                "type": "error",
                "re": 0,
                "code": "too_many_watchers",
                "message": "The game is open on 32 connections to this server.",
            }
        return await super().request(type_, **fields)


async def test_a_game_that_cannot_be_opened_again_says_why(cli: CliRunner) -> None:
    """The reopen after ``not_open`` (or a reconnect) refused was dropped unsaid, and
    each move then said the game was "open again now: try once more", untrue."""
    lines = solution_lines("medium", DEAL)
    assert (await cli("register", "ada"))[0] == 0
    code, out = await play_deal(cli, [*lines[:4], "q"], ClosedAndRefused)
    assert code == 0, out  # the player quit
    assert "rejected (not_open)" in out, out
    assert "open again now" not in out
    assert out.count("rejected (too_many_watchers): This game is open in too many places") == 2


async def test_two_devices_do_not_share_request_ids(server: Running) -> None:
    """Ids are unique within a game (section 5): the other device's move is stale, not a retry."""
    first = Connection(server.url)
    await first.open()
    token = str((await first.call("register", name="ada"))["token"])
    await first.close()
    one, two = Connection(server.url, token=token), Connection(server.url, token=token)
    try:
        await one.open()
        await two.open()
        game = (await one.call("new_game", level="hard", deal=1))["game"]
        await two.call("open_game", game=game)
        assert (await one.request("move", game=game, v=0, card="7C", to=5))["type"] == "ack"
        reply = await two.request("move", game=game, v=0, card="TH")
        assert reply.get("code") == "stale", reply
    finally:
        await one.close()
        await two.close()


class Gone(Connection):
    """A connection whose server goes away for good after the first move."""

    async def request(self, type_: str, **fields: Any) -> Message:
        reply = await super().request(type_, **fields)
        if type_ == "move":
            self.drop()
            while self.online:  # the reader has seen it: reconnecting from now on
                await asyncio.sleep(0.01)
        return reply

    async def _connect(self) -> Any:
        if self.welcome is not None:  # connected once: the server is gone now
            raise OSError("connection refused")
        return await super()._connect()


async def test_quit_while_reconnecting_quits_at_once(cli: CliRunner) -> None:
    """``q`` waited for the reconnection to give up (about 16 s), then exited 1."""
    assert (await cli("register", "ada"))[0] == 0
    started = time.monotonic()
    code, out = await play_deal(cli, [*solution_lines("medium", DEAL)[:1], "q"], Gone)
    assert code == 0, out
    assert time.monotonic() - started < 5, out


class RotatedElsewhere(Connection):
    """Before the fifth move the connection drops, and meanwhile another command of this
    computer (``scorpion new-token``) rotates the player's token and keeps the new one."""

    store: Any = None
    config_dir: Any = None
    url = ""
    as_next = False  # kept as the entry's ``next`` (a rotation whose answer was lost)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.moves = 0

    async def _send(self, message: Message) -> None:
        if message["type"] == "move":
            self.moves += 1
            if self.moves == 5:
                cls = RotatedElsewhere
                kept = config.load(cls.url, cls.config_dir)
                assert kept is not None and self.token == kept.token
                new = await cls.store.rotate_token(kept.token)
                entry = (
                    config.Credentials(kept.name, kept.token, new)
                    if cls.as_next
                    else config.Credentials(kept.name, new)
                )
                config.save(cls.url, entry, cls.config_dir)
                self.drop()
        await super()._send(message)


@pytest.mark.parametrize("as_next", [False, True])
async def test_a_token_rotated_by_another_command_meanwhile_is_read_again(
    cli: CliRunner, server: Running, config_dir: Path, as_next: bool
) -> None:
    """The reconnection's hello with the token read at start was refused, and the client
    gave up ("register again") though the credentials file held the new, working one."""
    lines = solution_lines("medium", DEAL)
    assert (await cli("register", "ada"))[0] == 0
    RotatedElsewhere.store, RotatedElsewhere.config_dir = server.server.store, config_dir
    RotatedElsewhere.url, RotatedElsewhere.as_next = server.url, as_next
    code, out = await play_deal(cli, lines, RotatedElsewhere)
    assert code == 0, out
    assert "register" not in out and "=== You won! ===" in out, out
