"""``scorpion new-token`` and ``scorpion sign-out [--everywhere]``: the stored
player's token replaced, forgotten here, or revoked on every device."""

from __future__ import annotations

import asyncio
import io
import json
import secrets
from pathlib import Path
from typing import Any

import pytest

from clients.cli import config
from clients.cli.app import run
from clients.cli.connection import Connection, Message
from clients.cli.options import parse_args
from clients.cli.terminal import Terminal
from tests.cli.conftest import CliRunner
from tests.server.conftest import Running


@pytest.fixture
async def registered(
    cli: CliRunner, config_dir: Path, server: Running, tmp_path: Path
) -> tuple[config.Credentials, Path]:
    """``ada`` registered here, and the config directory of another computer given her token."""
    assert (await cli("register", "ada"))[0] == 0
    stored = config.load(server.url, config_dir)
    assert stored is not None
    elsewhere = tmp_path / "other-device"
    config.save(server.url, stored, elsewhere)
    return stored, elsewhere


async def test_a_new_token_replaces_the_stored_one_and_the_old_one_opens_nothing(
    cli: CliRunner,
    config_dir: Path,
    server: Running,
    registered: tuple[config.Credentials, Path],
    capsys: pytest.CaptureFixture[str],
) -> None:
    old, elsewhere = registered

    code, out = await cli("new-token")
    assert code == 0, out
    new = config.load(server.url, config_dir)
    assert new is not None and new.name == "ada" and new.token != old.token
    assert out.splitlines()[-1].startswith("a new sign-in token for ada is kept in ")
    assert new.token not in out and old.token not in out  # never on the screen
    data = json.loads(config.credentials_path(config_dir).read_text(encoding="utf-8"))
    assert "replaced" not in data  # the old token opens nothing: not kept

    assert (await cli("stats"))[0] == 0  # the new one plays
    capsys.readouterr()
    code, _out = await cli("stats", directory=elsewhere)  # the old one is refused
    assert code == 1
    assert "the server refused the stored player" in capsys.readouterr().err


async def test_sign_out_keeps_the_entry_and_everywhere_revokes_every_token(
    cli: CliRunner,
    config_dir: Path,
    server: Running,
    registered: tuple[config.Credentials, Path],
    capsys: pytest.CaptureFixture[str],
) -> None:
    ada, elsewhere = registered
    code, out = await cli("sign-out")
    assert code == 0, out
    assert f"signed out of {server.url}: the entry of ada is kept in " in out
    assert config.load(server.url, config_dir) is None
    path = config.credentials_path(config_dir)
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["replaced"] == [
        {"server": server.url.rstrip("/"), "name": "ada", "token": ada.token}
    ]
    capsys.readouterr()
    code, _out = await cli("sign-out")
    assert code == 1 and f"no player is stored for {server.url}" in capsys.readouterr().err
    code, _out = await cli("new-token")  # nothing registered on the way
    assert code == 1 and f"no player is stored for {server.url}" in capsys.readouterr().err
    assert config.load(server.url, config_dir) is None

    config.save(server.url, ada, config_dir)  # put back, as the notice says
    code, out = await cli("sign-out", "--everywhere")
    assert code == 0, out
    assert "every sign-in token of ada is revoked" in out
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["servers"] == {} and len(data["replaced"]) == 1  # the dead token is not kept
    capsys.readouterr()
    code, _out = await cli("stats", directory=elsewhere)
    assert code == 1 and "the server refused the stored player" in capsys.readouterr().err


class _SlowRotation(Connection):
    """A rotation whose answer takes its time on the way back: the server has replaced
    the token long before the client has the new one (``answered`` is set then)."""

    answered = asyncio.Event()

    async def request(self, type_: str, **fields: Any) -> Message:
        reply = await super().request(type_, **fields)
        if type_ == "rotate_token":
            _SlowRotation.answered.set()
            await asyncio.sleep(0.5)
        return reply


async def test_a_new_token_interrupted_on_its_way_is_still_saved(
    cli: CliRunner, config_dir: Path, server: Running, registered: tuple[config.Credentials, Path]
) -> None:
    """Ctrl-C after the request went and before its answer was saved exited 130 with the
    old token revoked and the new one nowhere: the player was lost."""
    old, _elsewhere = registered
    _SlowRotation.answered = asyncio.Event()  # of this test's loop
    command = asyncio.ensure_future(cli("new-token", connection_class=_SlowRotation))
    # asked and done by the server, its answer not yet with the command (a fixed 0.25 s
    # was too short for the connect, the hello and the request on a loaded machine)
    await asyncio.wait_for(_SlowRotation.answered.wait(), 30)
    command.cancel()  # what asyncio.run does on Ctrl-C
    with pytest.raises(asyncio.CancelledError):
        await command
    new = config.load(server.url, config_dir)
    assert new is not None and new.token != old.token
    assert (await cli("stats"))[0] == 0  # the saved token opens the player


class _LostRotationReply(Connection):
    """The connection drops as the answer to the (first) rotation comes: it never arrives."""

    dropped = False

    def _dispatch(self, message: Message) -> None:
        if message.get("type") == "token" and not _LostRotationReply.dropped:
            _LostRotationReply.dropped = True
            self.drop()
            return
        super()._dispatch(message)


async def test_a_new_token_whose_answer_is_lost_is_kept_all_the_same(
    cli: CliRunner, config_dir: Path, server: Running, registered: tuple[config.Credentials, Path]
) -> None:
    """The server replaced the token and its answer was lost with the connection: the
    old token was revoked and the new one nowhere, the player lost. The client makes the
    new token and keeps it first: the reconnection signs in with it, and the request sent
    again on it answers the same."""
    old, elsewhere = registered
    _LostRotationReply.dropped = False
    code, out = await cli("new-token", connection_class=_LostRotationReply)
    assert _LostRotationReply.dropped
    assert code == 0, out
    new = config.load(server.url, config_dir)
    assert new is not None and new.token != old.token and new.next is None
    assert (await cli("stats"))[0] == 0
    assert (await cli("stats", directory=elsewhere))[0] == 1  # the old token is gone


async def test_a_rotation_the_client_did_not_hear_of_is_found_at_the_next_sign_in(
    cli: CliRunner, config_dir: Path, server: Running, registered: tuple[config.Credentials, Path]
) -> None:
    """The process ended after asking (killed, the network gone for good): the entry
    holds the old token and the new one. The next command signs in with whichever works,
    and keeps that one."""
    old, _elsewhere = registered
    not_asked = secrets.token_urlsafe(32)
    config.save(server.url, config.Credentials(old.name, old.token, not_asked), config_dir)
    assert (await cli("stats"))[0] == 0  # not rotated: the old token works, next stays
    assert config.load(server.url, config_dir) == config.Credentials("ada", old.token, not_asked)

    store = server.server.store
    assert store is not None
    asked = secrets.token_urlsafe(32)
    config.save(server.url, config.Credentials(old.name, old.token, asked), config_dir)
    assert await store.rotate_token(old.token, asked) == asked  # what the server did
    code, out = await cli("stats")
    assert code == 0, out
    assert "whose answer was lost, is kept in" in out
    assert config.load(server.url, config_dir) == config.Credentials("ada", asked)


@pytest.mark.parametrize(
    "kept", ["", "x" * 129, 42, None, "SAME", "x", "not base64 !!", "a" * 42, "é" * 43]
)
async def test_a_next_token_that_cannot_be_one_is_none(
    cli: CliRunner,
    config_dir: Path,
    server: Running,
    registered: tuple[config.Credentials, Path],
    kept: object,
) -> None:
    """A ``next`` written by hand that ``rotate_token`` would refuse (sent again on every
    ``new-token``, it failed them all), or that is the token itself, is read as none:
    the player signs in with the token, and nothing is said of it."""
    ada, _elsewhere = registered
    path = config.credentials_path(config_dir)
    data = json.loads(path.read_text(encoding="utf-8"))
    entry = data["servers"][server.url.rstrip("/")]
    entry["next"] = ada.token if kept == "SAME" else kept
    path.write_text(json.dumps(data), encoding="utf-8")
    assert config.load(server.url, config_dir) == ada
    code, out = await cli("stats")
    assert code == 0 and "answer was lost" not in out, out


async def test_a_new_token_asked_again_sends_the_one_still_unanswered(
    cli: CliRunner, config_dir: Path, server: Running, registered: tuple[config.Credentials, Path]
) -> None:
    """A ``new-token`` killed after asking left its token as ``next``; a second one made
    another and overwrote it, and when the first request reached the server after the
    second one's hello, the player was lost. The second sends the same token."""
    old, _elsewhere = registered
    pending = secrets.token_urlsafe(32)
    config.save(server.url, config.Credentials(old.name, old.token, pending), config_dir)
    code, out = await cli("new-token")
    assert code == 0, out
    assert config.load(server.url, config_dir) == config.Credentials("ada", pending)
    store = server.server.store
    assert store is not None
    assert await store.rotate_token(old.token, pending) is None  # the first lands: too late
    assert (await cli("stats"))[0] == 0


async def test_a_kept_token_the_server_will_not_take_is_dropped_for_the_next_try(
    cli: CliRunner, config_dir: Path, server: Running, registered: tuple[config.Credentials, Path]
) -> None:
    """Sent again and again, a kept ``next`` the server refuses (another player's, in a
    file written by hand) would fail every ``new-token``: the next try makes another."""
    ada, _elsewhere = registered
    bea = await server.player("bea")
    assert bea.token is not None
    taken = secrets.token_urlsafe(32)  # bea's device's own
    store = server.server.store
    assert store is not None and await store.rotate_token(bea.token, taken) == taken
    config.save(server.url, config.Credentials(ada.name, ada.token, taken), config_dir)
    code, _out = await cli("new-token")
    assert code == 1
    assert config.load(server.url, config_dir) == ada  # nothing changed, next dropped
    code, out = await cli("new-token")
    assert code == 0, out
    new = config.load(server.url, config_dir)
    assert new is not None and new.token not in (ada.token, taken) and new.next is None


class _FirstRequestLandsMeanwhile(Connection):
    """Before this rotation goes, the same token's earlier request (sent by a
    ``new-token`` killed while it waited) reaches the server and replaces the token."""

    old = ""
    store: Any = None

    async def request(self, type_: str, **fields: Any) -> Message:
        if type_ == "rotate_token":
            cls = _FirstRequestLandsMeanwhile
            assert await cls.store.rotate_token(cls.old, fields["token"]) == fields["token"]
        return await super().request(type_, **fields)


async def test_a_rotation_sent_again_after_the_first_landed_is_done_not_refused(
    cli: CliRunner, config_dir: Path, server: Running, registered: tuple[config.Credentials, Path]
) -> None:
    """The token's earlier request landed after this connection's hello: this one is
    refused ``unauthenticated`` (the old token is gone), and the command said "register
    first", though the rotation it asked for was done."""
    old, _elsewhere = registered
    pending = secrets.token_urlsafe(32)
    config.save(server.url, config.Credentials(old.name, old.token, pending), config_dir)
    _FirstRequestLandsMeanwhile.old, _FirstRequestLandsMeanwhile.store = (
        old.token,
        server.server.store,
    )
    code, out = await cli("new-token", connection_class=_FirstRequestLandsMeanwhile)
    assert code == 0, out
    assert "a new sign-in token for ada is kept in" in out
    assert config.load(server.url, config_dir) == config.Credentials("ada", pending)


class _RotatedBetween(Terminal):
    """A script's lines, with another device rotating the token before the second one."""

    def __init__(self, out: io.StringIO, lines: list[str], rotate: Any) -> None:
        super().__init__(out, lines)
        self.read = 0
        self.rotate = rotate

    async def readline(self, prompt: str = "> ") -> str | None:
        self.read += 1
        if self.read == 2:
            await self.rotate()
        return await super().readline(prompt)


@pytest.mark.parametrize("json_mode", [False, True])
async def test_a_device_signed_out_by_another_devices_rotation_says_so_and_stops(
    config_dir: Path,
    server: Running,
    registered: tuple[config.Credentials, Path],
    capsys: pytest.CaptureFixture[str],
    json_mode: bool,
) -> None:
    """Its next action was refused "register first" (which would make another player),
    and the command ended with status 0 as if all went well."""
    stored, _elsewhere = registered

    async def rotate() -> None:
        other = Connection(server.url, token=stored.token)
        await other.open()
        try:
            assert (await other.call("rotate_token"))["type"] == "token"
        finally:
            await other.close()

    out = io.StringIO()
    args = [*(["--json"] if json_mode else []), "--server", server.url]
    options = parse_args([*args, "play", "--level", "hard", "--deal", "1"], env={})
    terminal = _RotatedBetween(out, ["d", "u", "u"], rotate)
    code = await run(options, terminal, config_dir=config_dir)
    assert code == 1, out.getvalue()
    err = capsys.readouterr().err
    assert "this device was signed out: the sign-in token it used was replaced" in err, err
    assert "register first" not in out.getvalue() + err
    assert terminal.read == 2  # nothing more was asked


@pytest.mark.parametrize("json_mode", [False, True])
async def test_a_device_whose_token_a_command_here_replaced_signs_in_with_the_new_one(
    config_dir: Path,
    server: Running,
    registered: tuple[config.Credentials, Path],
    capsys: pytest.CaptureFixture[str],
    json_mode: bool,
) -> None:
    """``scorpion new-token`` run beside a game on this computer: the game's next request
    was refused and the command ended ("replaced on another device: put the new one in
    the credentials file"), though the file held the new token already."""
    stored, _elsewhere = registered

    async def new_token() -> None:
        options = parse_args(["--server", server.url, "new-token"], env={})
        assert await run(options, Terminal(io.StringIO(), []), config_dir=config_dir) == 0

    out = io.StringIO()
    args = [*(["--json"] if json_mode else []), "--server", server.url]
    options = parse_args([*args, "play", "--level", "hard", "--deal", "1"], env={})
    terminal = _RotatedBetween(out, ["d", "u", "d"], new_token)
    code = await run(options, terminal, config_dir=config_dir)
    err = capsys.readouterr().err
    assert (code, err) == (0, ""), out.getvalue()
    kept = config.load(server.url, config_dir)
    assert kept is not None and kept.token != stored.token
    assert terminal.read == 4  # every line was played, and the end of input
    if json_mode:
        replies = [json.loads(line) for line in out.getvalue().splitlines()]
        assert not [reply for reply in replies if reply["type"] == "error"], out.getvalue()
        assert [reply["moves"] for reply in replies if reply["type"] == "score"] == [1, 2, 3]
    else:
        assert "rejected" not in out.getvalue() and "signed out" not in out.getvalue()
        assert out.getvalue().endswith("dealt 9♣ 2♥ 6♥\nundone\ndealt 9♣ 2♥ 6♥\n"), out.getvalue()
