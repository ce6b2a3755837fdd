"""A server that sends what the protocol does not allow: the client says so and stops.

A fake server (``fake``) answers hello, ``new_game`` and the rest like a real
one, but with a chosen defect: a frame that cannot be read before each reply,
or a view of the wrong shape or of an absurd size. The client must never hang
and never grow without bound: an unreadable frame is skipped with a notice,
an invalid reply is one line naming what was wrong (exit status 1).
"""

from __future__ import annotations

import asyncio
import copy
import io
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import msgpack
import pytest
from websockets.asyncio.server import ServerConnection, serve
from websockets.typing import Subprotocol

from clients.cli import app
from clients.cli.app import run
from clients.cli.checks import MAX_CARDS, check_server_message
from clients.cli.connection import Connection, ConnectionFailed, decode
from clients.cli.options import UsageError, parse_args
from clients.cli.terminal import Terminal
from protocol import SUBPROTOCOL, InvalidMessage
from protocol.constants import MAX_DEAL, MAX_SERVER_FRAME_BYTES
from protocol.shapes import EXAMPLE_VIEW

DOCS = Path(__file__).parents[2] / "docs" / "cli.md"
LIST_KEY_FRAME = b"\x81\x91\x01\x02"  # {[1]: 2}: a map whose key is an array
SECONDS = 10  # far more than any of these runs needs; a hang fails the test instead

Mutation = Callable[[dict[str, Any]], None]
FakeRunner = Callable[..., Awaitable[tuple[int, str]]]


SUMMARY = {
    "game": 5, "level": "hard", "status": "active", "v": 0, "moves": 0, "score": 0,
    "time_ms": 0, "deal": 1,
    "started": "2026-12-05T09:00:00.000Z", "updated": "2026-12-05T09:00:00.000Z",
}  # fmt: skip


def _view() -> dict[str, Any]:
    return copy.deepcopy(EXAMPLE_VIEW)


def _columns(value: Any) -> Mutation:
    def mutate(view: dict[str, Any]) -> None:
        view["columns"] = value

    return mutate


def _no_columns(view: dict[str, Any]) -> None:
    del view["columns"]


class Fake:
    """A Scorpion server of one game whose view and frames can be spoiled."""

    def __init__(self) -> None:
        self.mutate: Mutation | None = None
        self.garbage: bytes | None = None  # sent before every reply after the welcome
        self.hint_card = "7C"
        self.push: dict[str, Any] | None = None  # sent right after the game reply
        self.padding = 0  # bytes of an unknown field added to the game reply
        self.welcome_padding = 0  # the same, added to the welcome
        self.unavailable = 0  # new_game requests answered unavailable before one is served
        self.asked: list[dict[str, Any]] = []  # the new_game requests, in order
        self.hello_limited = 0  # hellos answered rate_limited before one is welcomed
        self.hellos = 0
        self.started_anyway = False  # a new_game answered unavailable started game 5 all the same
        self.opened: list[int] = []  # the games open_game asked for
        self.close_on: str | None = None  # a request type whose arrival closes the connection
        self.closes = 0  # connections closed so far
        self.seen = 0  # requests of the type ``close_on`` that arrived
        self.close_every = 1  # only every this many of those requests closes it

    async def handle(self, ws: ServerConnection) -> None:
        async for frame in ws:
            assert isinstance(frame, bytes)
            request = msgpack.unpackb(frame)
            kind, re_ = request["type"], request["id"]
            if kind == "hello":
                self.hellos += 1
                if self.hellos <= self.hello_limited:
                    limited = {"type": "error", "re": re_, "code": "rate_limited",
                               "message": "wait", "retry_after_ms": 20}  # fmt: skip
                    await self.send(ws, limited)
                    continue
                welcome = {"server": "fake/1", "protocol": 1, "player": {"id": 1, "name": "x"}}
                if self.welcome_padding:
                    welcome["padding"] = "x" * self.welcome_padding
                await self.send(ws, {"type": "welcome", "re": re_, **welcome, "games": []})
                continue
            if kind == self.close_on:
                self.seen += 1
                if self.seen % self.close_every == 0:
                    self.closes += 1
                    await ws.close()
                    return
            if self.garbage is not None:
                await ws.send(self.garbage)
            if kind == "games":
                listed = [SUMMARY] if self.started_anyway and self.asked else []
                await self.send(ws, {"type": "games", "re": re_, "games": listed})
                continue
            if kind == "new_game":
                self.asked.append(request)
                if len(self.asked) <= self.unavailable:
                    error = {"type": "error", "re": re_, "code": "unavailable", "message": "none"}
                    await self.send(ws, error)
                    continue
            if kind == "open_game":
                self.opened.append(request["game"])
            if kind in ("new_game", "open_game"):
                view = _view()
                if self.mutate is not None:
                    self.mutate(view)
                game = {"type": "game", "re": re_, "game": 5, "v": 0, "view": view}
                await self.send(
                    ws, {**game, "padding": "x" * self.padding} if self.padding else game
                )
                if self.push is not None:
                    await self.send(ws, self.push)
            elif kind == "hint":
                hint = {"action": "move", "card": self.hint_card, "to": 5}
                await self.send(ws, {"type": "hint", "re": re_, "game": 5, "v": 0, **hint})
            else:
                await self.send(ws, {"type": "ack", "re": re_, "game": 5, "v": 0})

    @staticmethod
    async def send(ws: ServerConnection, message: dict[str, Any]) -> None:
        await ws.send(msgpack.packb(message))


@pytest.fixture
async def fake() -> AsyncIterator[tuple[Fake, str]]:
    server = Fake()
    async with serve(
        server.handle, "127.0.0.1", 0, subprotocols=[Subprotocol(SUBPROTOCOL)], max_size=None
    ) as running:
        port = next(iter(running.sockets)).getsockname()[1]
        yield server, f"ws://127.0.0.1:{port}"


@pytest.fixture
def play(fake: tuple[Fake, str], tmp_path: Path) -> FakeRunner:
    async def runner(*args: str, lines: Sequence[str] = ()) -> tuple[int, str]:
        _server, url = fake
        options = parse_args(["--server", url, *args], env={})
        out = io.StringIO()
        async with asyncio.timeout(SECONDS):
            code = await run(options, Terminal(out, list(lines)), config_dir=tmp_path / "config")
        return code, out.getvalue()

    return runner


# -- frames that cannot be read -----------------------------------------------


@pytest.mark.parametrize(
    "frame",
    [LIST_KEY_FRAME, b"\x81\x80\x01", b"\xc1", b"\x93\x01\x02\x03", b"\x81\xa1t", "text"],
)
def test_decode_raises_only_value_error(frame: bytes | str) -> None:
    with pytest.raises(ValueError, match="frame") as caught:
        decode(frame)
    assert "()" not in str(caught.value)  # msgpack's FormatError has no words: its name


async def test_a_frame_with_a_list_key_is_skipped_not_a_hang(
    fake: tuple[Fake, str], play: FakeRunner
) -> None:
    fake[0].garbage = LIST_KEY_FRAME
    code, out = await play("play", "--level", "hard", lines=["h"])
    assert code == 0, out
    assert "Scorpion · game 5" in out  # the game reply after the bad frame was read
    skipped = "skipped what the server sent: a frame with a map key that is an array or a map"
    # before the replies to games (a game begun elsewhere?), new_game, hint and close_game
    assert out.count(skipped) == 4, out


async def test_a_dead_reader_fails_the_waiting_requests(fake: tuple[Fake, str]) -> None:
    """Whatever kills the reader, a request waiting for a reply is told at once."""

    class Broken(Connection):
        def _dispatch(self, message: dict[str, Any]) -> None:
            raise RuntimeError("a bug in the reader")

    conn = Broken(fake[1])
    await conn.open()
    try:
        async with asyncio.timeout(SECONDS):
            with pytest.raises(ConnectionFailed, match="a bug in the reader"):
                await conn.request("new_game", level="hard")
            with pytest.raises(ConnectionFailed):  # and so is every later one
                await conn.request("new_game", level="hard")
    finally:
        await conn.close()


async def test_closing_on_a_server_that_stopped_answering_is_quick(
    fake: tuple[Fake, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C while a request waited on a frozen server (SIGSTOP) ended the client only
    after websockets' 10 s wait for the server's answer to its close."""
    conn = Connection(fake[1])
    await conn.open()
    assert conn._ws is not None

    async def unanswered(*args: Any, **kwargs: Any) -> None:
        await asyncio.sleep(30)  # websockets' close, waiting for an answer that never comes

    monkeypatch.setattr(conn._ws, "close", unanswered)
    started = time.monotonic()
    await conn.close()
    assert time.monotonic() - started < 2.5
    assert conn._ws.transport is not None and conn._ws.transport.is_closing()


async def test_an_invalid_push_is_skipped_and_play_goes_on(
    fake: tuple[Fake, str], play: FakeRunner
) -> None:
    fake[0].push = {"type": "events", "game": 5, "v": 1, "events": [{"type": "undealt"}]}
    code, out = await play("play", "--level", "hard", lines=["h"])
    assert code == 0, out
    assert "skipped what the server sent: events.events[0].count is required" in out


async def test_a_frame_over_the_limit_ends_the_command(
    fake: tuple[Fake, str], play: FakeRunner, capsys: pytest.CaptureFixture[str]
) -> None:
    """Reconnecting would only fetch it again: the client says so instead of retrying."""
    fake[0].padding = MAX_SERVER_FRAME_BYTES
    code, out = await play("play", "--level", "hard")
    assert code == 1 and out == ""
    limit = MAX_SERVER_FRAME_BYTES
    assert capsys.readouterr().err == (
        f"scorpion: cannot talk to the server: the server sent a frame of more than {limit} bytes\n"
    )


async def test_a_welcome_over_the_limit_ends_the_command_as_such(
    fake: tuple[Fake, str], play: FakeRunner, capsys: pytest.CaptureFixture[str]
) -> None:
    """It was said as a server that closed the connection before answering ``hello``
    (the client's own close, 1009), as if nothing had answered."""
    fake[0].welcome_padding = MAX_SERVER_FRAME_BYTES
    code, out = await play("stats")
    assert code == 1 and out == ""
    limit = MAX_SERVER_FRAME_BYTES
    assert capsys.readouterr().err == (
        f"scorpion: cannot talk to the server: the server sent a frame of more than {limit} bytes\n"
    )


# -- a server that closes the connection ------------------------------------------


async def test_a_server_closing_at_a_request_is_not_reconnected_to_for_ever(
    fake: tuple[Fake, str],
) -> None:
    """A server that welcomes each reconnection but closes the connection when the request
    arrives again: the delays go on growing (a welcome proves nothing), the client gives
    up after the last and says that the server closed it, not that it did not answer."""
    fake[0].close_on = "stats"
    conn = Connection(fake[1], delays=(0.01,) * 4)
    await conn.open()
    try:
        async with asyncio.timeout(SECONDS):
            with pytest.raises(ConnectionFailed) as caught:
                await conn.request("stats")
    finally:
        await conn.close()
    assert fake[0].hellos == 5  # the first and four reconnections
    assert str(caught.value) == (
        f"the server at {fake[1]} closed the connection each time the client reconnected (4 times)"
    )


async def test_a_reconnection_whose_request_is_answered_starts_the_delays_afresh(
    fake: tuple[Fake, str],
) -> None:
    """A drop now and then, each followed by play as usual, never uses the tries up."""
    fake[0].close_on, fake[0].close_every = "stats", 2  # every other one
    conn = Connection(fake[1], delays=(0.01,))
    await conn.open()
    try:
        async with asyncio.timeout(SECONDS):
            for _ in range(4):  # the first answered, each later one after a drop
                assert (await conn.request("stats"))["type"] == "ack"
    finally:
        await conn.close()
    assert fake[0].closes == 3 and conn.reconnects == 3


# -- a hello told to wait -------------------------------------------------------


async def test_a_hello_told_to_wait_is_said_again_after_the_wait(
    fake: tuple[Fake, str], play: FakeRunner
) -> None:
    """A device behind an address whose refused tokens are over their limit is answered
    ``rate_limited``: the client waits as told and says hello again, where it gave up."""
    fake[0].hello_limited = 2
    code, out = await play("play", "--level", "hard", lines=["h"])
    assert code == 0 and "Scorpion · game 5" in out, out
    assert fake[0].hellos == 3


async def test_a_hello_still_limited_after_the_tries_is_refused(
    fake: tuple[Fake, str], play: FakeRunner, capsys: pytest.CaptureFixture[str]
) -> None:
    fake[0].hello_limited = 10
    code, _ = await play("play", "--level", "hard")
    assert code == 1 and fake[0].hellos == 4
    assert "rate_limited" in capsys.readouterr().err


# -- a new game the server cannot start yet -----------------------------------


@pytest.mark.parametrize("winnable", [True, False])
async def test_a_new_game_answered_unavailable_is_asked_again(
    fake: tuple[Fake, str], play: FakeRunner, monkeypatch: pytest.MonkeyPatch, winnable: bool
) -> None:
    """PROTOCOL.md: no winnable deal ready yet (or the store down a moment) is
    ``unavailable``, "retry shortly"; the client does, saying so, then plays."""
    monkeypatch.setattr(app, "NEW_GAME_RETRY_S", (0.0, 0.01, 0.02))
    fake[0].unavailable = 3
    code, out = await play("play", "--level", "hard", *(["--winnable"] * winnable), lines=["h"])
    assert code == 0, out
    said = "no winnable deal is ready yet" if winnable else "cannot start a game just now"
    assert out.count(said) == 3 and "asking again in 0.02 s" in out, out
    assert "Scorpion · game 5" in out
    assert [r.get("winnable", False) for r in fake[0].asked] == [winnable] * 4


async def test_a_new_game_answered_unavailable_that_started_all_the_same_is_opened(
    fake: tuple[Fake, str], play: FakeRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its commit landed as the server gave up waiting: asking again would abandon it,
    a loss the player never played. The unfinished game listed now is that one."""
    monkeypatch.setattr(app, "NEW_GAME_RETRY_S", (0.0, 0.0))
    fake[0].unavailable = 1
    fake[0].started_anyway = True
    code, out = await play("play", "--level", "hard", lines=["h"])
    assert code == 0 and "Scorpion · game 5" in out, out
    assert len(fake[0].asked) == 1 and fake[0].opened == [5]


async def test_a_new_game_still_unavailable_is_shown_as_refused(
    fake: tuple[Fake, str], play: FakeRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(app, "NEW_GAME_RETRY_S", (0.0, 0.0))
    fake[0].unavailable = 10
    code, out = await play("play", "--level", "hard", "--winnable")
    assert len(fake[0].asked) == 3 and out.count("asking again") == 2, out
    assert code == 1 and "unavailable" in out, out


# -- replies of the wrong shape or size ---------------------------------------


@pytest.mark.parametrize(
    ("mutate", "named"),
    [
        (_columns([{"down": 10**9, "cards": ["AS"]}] * 7), "game.view.columns[0].down"),
        (_columns([{"down": -5, "cards": ["ZZ", 5, None]}] * 7), "game.view.columns[0].down"),
        (_columns([{"down": 0, "cards": ["ZZ"]}] * 7), "game.view.columns[0].cards[0]"),
        (_columns("xx"), "game.view.columns"),
        (_no_columns, "game.view.columns"),
        (_columns([{"down": 0, "cards": ["AS"] * (MAX_CARDS + 1)}]), "game.view.columns[0]"),
        (_columns([{"down": 50, "cards": ["AS"]}] * 7), "game.view"),  # 357 cards on the table
        (_columns([{"down": 0, "cards": []}] * (MAX_CARDS + 1)), "game.view.columns"),
        (lambda view: view.update(stock=10**12), "game.view.stock"),
    ],
)
async def test_an_invalid_view_is_named_not_rendered(
    fake: tuple[Fake, str],
    play: FakeRunner,
    mutate: Mutation,
    named: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    fake[0].mutate = mutate
    code, out = await play("play", "--level", "hard", lines=["h"])
    assert code == 1 and out == ""
    err = capsys.readouterr().err
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("scorpion: the server sent an invalid message: "), err
    assert lines[0].split(": ", 2)[2].startswith(named + " "), err
    assert "Error" not in err  # no Python exception names


async def test_an_invalid_hint_is_named(
    fake: tuple[Fake, str], play: FakeRunner, capsys: pytest.CaptureFixture[str]
) -> None:
    fake[0].hint_card = "??"
    code, out = await play("play", "--level", "hard", lines=["h"])
    assert code == 1 and "Scorpion · game" in out  # the board, then the failure
    err = capsys.readouterr().err
    assert err.startswith("scorpion: the server sent an invalid message: hint.card "), err


async def test_the_json_mode_reports_an_invalid_message_on_standard_error(
    fake: tuple[Fake, str], play: FakeRunner, capsys: pytest.CaptureFixture[str]
) -> None:
    """Standard output stays JSON; the failure is a line on standard error, as in text mode."""
    fake[0].mutate = _no_columns
    code, out = await play("--json", "play", "--level", "hard")
    assert code == 1 and out == ""
    err = capsys.readouterr().err
    assert err.startswith("scorpion: the server sent an invalid message: ")
    assert err.endswith("game.view.columns is required\n") and len(err.splitlines()) == 1


def test_server_messages_are_read_leniently() -> None:
    """Unknown fields, event types, message types and error codes pass (PROTOCOL.md 2, 11)."""
    view = {**_view(), "later": [1, 2]}
    view["columns"] = [{**view["columns"][0], "colour": "red"}, *view["columns"][1:]]
    check_server_message({"type": "game", "re": 1, "game": 5, "v": 0, "view": view, "x": {}})
    events = [{"type": "confetti", "amount": 10**9}, {"type": "stuck", "new": True}]
    check_server_message({"type": "events", "game": 5, "v": 1, "events": events})
    check_server_message({"type": "error", "re": 1, "code": "new_code", "message": "?"})
    check_server_message({"type": "fireworks", "whatever": None})


@pytest.mark.parametrize(
    ("message", "named"),
    [
        (
            {"type": "events", "game": 5, "v": 1, "events": [{"type": "undealt", "count": 10**9}]},
            "events.events[0].count",
        ),
        (
            {"type": "events", "game": 5, "v": 1, "events": [{"type": "moved"}]},
            "events.events[0].card",
        ),
        ({"type": "error", "re": 1, "code": 7, "message": "?"}, "error.code"),
        ({"type": 5}, "type"),
        ({"type": "ack", "re": 1, "game": "5", "v": 0}, "ack.game"),
    ],
)
def test_invalid_server_messages_are_named(message: dict[str, Any], named: str) -> None:
    with pytest.raises(InvalidMessage) as caught:
        check_server_message(message)
    assert caught.value.path == named


# -- help and documentation ---------------------------------------------------


@pytest.mark.parametrize("command", [[], ["play"], ["register"], ["stats"], ["games"], ["replay"]])
@pytest.mark.parametrize(("lang", "prefix"), [("en", "usage: "), ("fi", "käyttö: ")])
def test_help_says_usage_once(
    command: list[str], lang: str, prefix: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        parse_args(["--lang", lang, *command, "--help"], env={})
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith(prefix + "scorpion"), first
    assert first.count(prefix.strip()) == 1, first


def test_the_documented_deal_range_is_the_checked_one() -> None:
    with pytest.raises(UsageError) as caught:
        parse_args(["play", "--deal", "0"], env={})
    ranges = re.findall(r"\(1\.\.(\d+)\)", DOCS.read_text(encoding="utf-8"))
    assert ranges and all(int(limit) == MAX_DEAL for limit in ranges)
    assert f"(1..{MAX_DEAL})" in str(caught.value)
