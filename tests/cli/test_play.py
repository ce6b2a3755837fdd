"""The CLI end to end against a real server: register, win a whole game in script mode."""

from __future__ import annotations

import io
import json
import re
import stat
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from websockets.asyncio.server import ServerConnection, serve

from clients.cli import config
from clients.cli.app import run
from clients.cli.connection import Connection, Message
from clients.cli.options import parse_args
from clients.cli.terminal import Terminal
from engine.cards import card_str
from engine.game import Game
from engine.levels import get_level
from engine.replay import verify
from engine.solver.easy import shipped_easy_deals
from engine.solver.search import solve
from tests.cli.conftest import CliRunner
from tests.server.conftest import Running

DEAL = shipped_easy_deals()[0]


def solution_lines(level: str, deal: int) -> list[str]:
    """The solver's winning line as script commands (``<card> <to>`` or ``d``)."""
    verdict = solve(Game(get_level(level), deal).state, get_level(level), budget_ms=5000)
    assert verdict.result == "won"
    lines = []
    for action in verdict.actions:
        if action.type == "deal":
            lines.append("d")
        else:
            assert action.card is not None
            lines.append(f"{card_str(action.card)} {action.to}")
    return lines


async def test_register_keeps_the_token_private(cli: CliRunner, config_dir: Path) -> None:
    code, out = await cli("register", "ada")
    assert code == 0, out
    assert "registered as ada" in out
    path = config_dir / "credentials.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    stored = json.loads(path.read_text())
    (entry,) = stored["servers"].values()
    assert entry["name"] == "ada" and entry["token"]


async def test_first_run_asks_for_a_name(cli: CliRunner) -> None:
    code, out = await cli("play", "--level", "hard", "--deal", "1", lines=["bob", "q"])
    assert code == 0, out
    assert "registered as bob" in out
    assert "hard · moves 0" in out and "deal 1" in out


async def test_win_a_whole_game_in_script_mode(cli: CliRunner, tmp_path: Path) -> None:
    lines = solution_lines("medium", DEAL)
    assert (await cli("register", "ada"))[0] == 0
    code, out = await cli("play", "--level", "medium", "--deal", str(DEAL), lines=lines)
    assert code == 0, out
    assert "rejected" not in out
    assert "=== You won! ===" in out
    assert f"moves  {len(lines)}" in out
    assert out.count("removed ") >= 4

    code, out = await cli("stats", "--level", "medium")
    assert code == 0 and "medium" in out
    row = next(line for line in out.splitlines() if line.startswith("medium"))
    assert row.split()[1:4] == ["1", "1", "0"]

    code, out = await cli("games")
    assert code == 0 and "won" in out
    game = int(out.splitlines()[1].split()[0])

    export = tmp_path / "replay.json"
    code, out = await cli("replay", str(game), "--export", str(export))
    assert code == 0, out
    verdict, checked = verify(json.loads(export.read_text()))
    assert verdict == 0 and checked["won"] is True

    code, out = await cli("replay", str(game), "--speed", "0")
    assert code == 0, out
    assert f"-- step {len(lines)} --" in out and "=== You won! ===" in out


async def test_rejections_show_the_servers_reason(cli: CliRunner) -> None:
    assert (await cli("register", "ada"))[0] == 0
    code, out = await cli("--lang", "fi", "play", "--level", "hard", "--deal", "1", lines=["th"])
    assert code == 0
    assert "hylätty (no_destination): Kortille 10♥ ei ole paikkaa." in out


async def test_json_mode_prints_one_object_per_event(cli: CliRunner) -> None:
    assert (await cli("register", "ada"))[0] == 0
    code, out = await cli("--json", "play", "--level", "hard", "--deal", "1", lines=["7c 5"])
    assert code == 0
    objects = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    moved = [obj for obj in objects if obj.get("type") == "moved"]
    assert moved == [
        {
            "game": moved[0]["game"],
            "v": 1,
            "type": "moved",
            "card": "7C",
            "from": 7,
            "to": 5,
            "count": 7,
        }
    ]


async def test_restart_shows_the_deal_again(cli: CliRunner) -> None:
    assert (await cli("register", "ada"))[0] == 0
    lines = ["7c 5", "r", "n", "r", "y", "b"]
    code, out = await cli("play", "--level", "hard", "--deal", "1", lines=lines)
    assert code == 0 and out.count("restarted from the deal") == 1
    assert out.count("Restart from the deal? Your moves and undo history will be gone.") == 2
    assert "nothing was changed" in out
    boards = out.split("Scorpion · game")
    assert boards[1].split("hard · moves")[0] == boards[-1].split("hard · moves")[0]


async def test_restart_and_resign_skip_the_question_with_a_bang(cli: CliRunner) -> None:
    assert (await cli("register", "ada"))[0] == 0
    lines = ["7c 5", "r!", "resign!"]
    code, out = await cli("play", "--level", "hard", "--deal", "1", lines=lines)
    assert code == 0 and "?" not in out.split("restarted from the deal")[0].splitlines()[-1]
    assert "restarted from the deal" in out and "the game is lost (resigned)" in out
    assert "[y/N]" not in out


async def test_no_server(config_dir: Path) -> None:
    options = parse_args(["--server", "ws://127.0.0.1:9", "games"], env={})
    out, err = io.StringIO(), io.StringIO()
    code = await run(options, Terminal(out, [], err=err), config_dir=config_dir)
    assert code == 1 and out.getvalue() == ""
    assert err.getvalue() == (
        "scorpion: no server at ws://127.0.0.1:9: "
        "start one with `scorpion-server` (`make run` in a checkout)\n"
    )


async def test_not_a_scorpion_server(config_dir: Path) -> None:
    async def echo(ws: ServerConnection) -> None:
        async for message in ws:
            await ws.send(message)

    async with serve(echo, "127.0.0.1", 0) as plain:
        port = next(iter(plain.sockets)).getsockname()[1]
        options = parse_args(["--server", f"ws://127.0.0.1:{port}", "games"], env={})
        out, err = io.StringIO(), io.StringIO()
        code = await run(options, Terminal(out, [], err=err), config_dir=config_dir)
    assert code == 1 and out.getvalue() == "" and "not a Scorpion server" in err.getvalue()


async def test_resign_and_an_abandoning_new_game_ask_first(cli: CliRunner) -> None:
    assert (await cli("register", "ada"))[0] == 0
    lines = ["resign", "no", "n hard 2", "", "n hard 2", "y", "resign", "y"]
    code, out = await cli("play", "--level", "hard", "--deal", "1", lines=lines)
    assert code == 0, out
    assert out.count("Resign? The game counts as lost. [y/N]") == 2
    assert out.count("Your unfinished game will count as a loss. Start a new game? [y/N]") == 2
    assert out.count("nothing was changed") == 2
    assert re.search(r"game \d+ was abandoned and counts as lost", out), out
    assert re.search(r"Scorpion · game \d+ · hard · deal 2", out), out
    assert "the game is lost (resigned)" in out


class _Elsewhere(Connection):
    """The player's other device starts a game (hard 3) just before this client's
    ``games`` request number ``start_at`` (the first by default); ``lose_deal``: this
    client's first ``new_game`` of that deal is lost on the way (never sent, the
    connection cut as if it had been); ``refuse_games``: every ``games`` request is
    refused."""

    server: Any = None
    token = ""
    other: Any = None
    started = 0
    lose_deal: int | None = None
    refuse_games = False
    start_at = 1
    lists = 0

    async def request(self, type_: str, **fields: Any) -> Message:
        cls = _Elsewhere
        cls.lists += type_ == "games"
        if type_ == "games" and cls.lists == cls.start_at:
            cls.other = await cls.server.connect()
            assert (await cls.other.hello(cls.token))["type"] == "welcome"
            cls.started = int((await cls.other.request("new_game", level="hard", deal=3))["game"])
        if type_ == "games" and cls.refuse_games:
            return {"type": "error", "re": 0, "code": "unavailable", "message": "busy"}
        reply: Message = await super().request(type_, **fields)
        return reply

    async def _send(self, message: Message) -> None:
        if message["type"] == "new_game" and message.get("deal") == _Elsewhere.lose_deal:
            _Elsewhere.lose_deal = None
            self._handed.add(message["id"])  # as if it went: its answer is lost
            self.drop()
            return
        await super()._send(message)


@pytest.fixture
async def elsewhere(
    cli: CliRunner, server: Running, config_dir: Path
) -> AsyncIterator[type[_Elsewhere]]:
    assert (await cli("register", "ada"))[0] == 0
    kept = config.load(server.url, config_dir)
    assert kept is not None
    _Elsewhere.server, _Elsewhere.token, _Elsewhere.other = server, kept.token, None
    _Elsewhere.lose_deal, _Elsewhere.refuse_games = None, False
    _Elsewhere.start_at, _Elsewhere.lists = 1, 0
    yield _Elsewhere
    if _Elsewhere.other is not None:
        await _Elsewhere.other.close()


async def test_a_new_game_asks_first_when_it_abandons_a_game_on_another_device(
    cli: CliRunner, elsewhere: type[_Elsewhere]
) -> None:
    """``n`` asked only for the game played here: one the player had started on another
    device meanwhile was abandoned unasked, a loss the player did not choose there."""
    elsewhere.start_at = 2  # at the first n (the first list is the script's start)
    lines = ["resign!", "n hard 2", "no", "n hard 2", "y", "q"]
    code, out = await cli(
        "play", "--level", "hard", "--deal", "1", lines=lines, connection_class=elsewhere
    )
    assert code == 0, out
    theirs = elsewhere.started
    asked = f"Your unfinished game {theirs}, started on another device, will count as a loss."
    assert out.count(asked) == 2, out
    assert out.count("nothing was changed") == 1
    assert f"game {theirs} was abandoned and counts as lost" in out
    assert out.index(f"game {theirs} was abandoned") > out.rindex("nothing was changed")


async def test_a_script_started_while_another_device_began_a_game_continues_it(
    cli: CliRunner, elsewhere: type[_Elsewhere]
) -> None:
    """A script waiting for its first line (the welcome had listed no game) started its
    own, abandoning the game another device began meanwhile, unasked."""
    code, out = await cli("play", "--level", "hard", lines=["b", "q"], connection_class=elsewhere)
    assert code == 0, out
    assert "abandoned" not in out and f"game {elsewhere.started} · hard · deal 3" in out, out
    assert "continuing your unfinished game" in out


async def test_a_scripts_first_n_asks_about_a_game_begun_on_another_device(
    cli: CliRunner, elsewhere: type[_Elsewhere]
) -> None:
    lines = ["n hard 2", "no", "q"]
    code, out = await cli("play", lines=lines, connection_class=elsewhere)
    assert code == 0, out
    assert f"Your unfinished game {elsewhere.started}, started on another device" in out
    assert "abandoned" not in out and f"game {elsewhere.started} · hard · deal 3" in out, out


async def test_a_scripts_first_n_asks_when_the_list_is_refused_and_ends_at_no(
    cli: CliRunner, elsewhere: type[_Elsewhere]
) -> None:
    """The list refused, the first ``n`` abandoned the other device's game unasked."""
    elsewhere.refuse_games = True
    code, out = await cli("play", lines=["n hard 2", "no"], connection_class=elsewhere)
    assert code == 0, out
    assert "on another device could not be checked" in out and "nothing was changed" in out
    assert "abandoned" not in out and "Scorpion ·" not in out, out


async def test_the_end_of_input_at_the_first_question_ends_as_q_does(
    cli: CliRunner, elsewhere: type[_Elsewhere]
) -> None:
    """It opened the other device's game and drew it before ending."""
    code, out = await cli("play", lines=["n hard 2"], connection_class=elsewhere)
    assert code == 0, out
    assert "started on another device" in out and "Scorpion ·" not in out, out


async def test_play_new_asks_nothing(cli: CliRunner, elsewhere: type[_Elsewhere]) -> None:
    code, out = await cli("play", "--new", "--level", "hard", "--deal", "2", lines=["q"])
    assert code == 0, out  # (no other game: --new starts this one, as it always did)
    code, out = await cli("play", "--new", "--level", "hard", "--deal", "4", lines=["q"])
    assert code == 0 and "?" not in out and "abandoned" in out and "deal 4" in out, out


async def test_a_new_game_lost_on_the_way_is_not_taken_for_the_other_devices(
    cli: CliRunner, elsewhere: type[_Elsewhere]
) -> None:
    """Asked about the other device's game, answered yes, and the new_game lost with the
    connection (never applied): the reconnection's welcome listed that game, which the
    client took for the one it had started, and played it as the new one."""
    elsewhere.lose_deal, elsewhere.start_at = 9, 2  # the first list is the script's start
    lines = ["resign!", "n hard 9", "y", "q"]
    code, out = await cli(
        "play", "--level", "hard", "--deal", "1", lines=lines, connection_class=elsewhere
    )
    assert code == 0, out
    assert f"game {elsewhere.started} was abandoned" in out, out
    assert "· hard · deal 9" in out and "· hard · deal 3" not in out, out


async def test_a_new_game_asks_when_the_list_of_games_is_refused(
    cli: CliRunner, elsewhere: type[_Elsewhere]
) -> None:
    elsewhere.refuse_games, elsewhere.start_at = True, 2
    lines = ["resign!", "n hard 2", "no", "q"]
    code, out = await cli(
        "play", "--level", "hard", "--deal", "1", lines=lines, connection_class=elsewhere
    )
    assert code == 0, out
    assert "on another device could not be checked" in out and "nothing was changed" in out


async def test_json_mode_prints_only_json(cli: CliRunner) -> None:
    assert (await cli("register", "ada"))[0] == 0
    lines = ["fly", "?", "i", "7c 5", "th", "p", "p", "r", "n", "b"]
    code, out = await cli("--json", "play", "--level", "hard", "--deal", "1", lines=lines)
    assert code == 0
    objects = [json.loads(line) for line in out.splitlines()]  # every line is JSON
    notices = [obj["notice"] for obj in objects if obj.get("type") == "notice"]
    assert {"command", "help", "guide", "app.paused", "app.confirm_restart"} <= set(notices)
    assert any(obj.get("code") == "no_destination" for obj in objects)


async def test_finnish_and_russian_server_errors(cli: CliRunner) -> None:
    assert (await cli("register", "ada"))[0] == 0
    code, out = await cli("--lang", "ru", "replay", "6")
    assert code == 1 and out == "отклонено (not_found): Игры 6 нет.\n"
    code, out = await cli("--lang", "fi", "register", "bob")
    assert code == 0
    # A chosen deal: on a random one the ten of hearts may have a place, and nothing is refused.
    code, out = await cli("--lang", "fi", "play", "--level", "hard", "--deal", "1", lines=["th"])
    assert "hylätty" in out


async def test_a_finnish_taken_name(cli: CliRunner, server: Running) -> None:
    await server.player("ada")
    code, out = await cli("--lang", "fi", "register", "ada")
    assert code == 1
    assert out == "hylätty (duplicate_name): Nimi ada on jo toisella pelaajalla; valitse toinen.\n"


async def _lost_games(cli: CliRunner) -> list[dict[str, object]]:
    code, out = await cli("--json", "games")
    assert code == 0, out
    games = json.loads(out)["games"]
    return [game for game in games if game["status"] == "lost"]


async def test_a_script_that_starts_with_a_new_game_starts_no_other_first(cli: CliRunner) -> None:
    """No unfinished game: the script's first ``n`` is the game played, not a second one
    that abandons the default medium game (a loss the player never played)."""
    assert (await cli("register", "ada"))[0] == 0
    code, out = await cli("play", lines=["n! three-blind-mice 7", "b", "q"])
    assert code == 0, out
    assert "abandoned" not in out and "medium" not in out, out
    assert re.search(r"Scorpion · game \d+ · three blind mice · deal 7", out), out
    assert await _lost_games(cli) == []


async def test_a_scripts_first_new_game_asks_nothing_and_takes_the_level_given(
    cli: CliRunner,
) -> None:
    assert (await cli("register", "ada"))[0] == 0
    code, out = await cli("play", "--level", "hard", lines=["", "n 5", "q"])  # blank lines skipped
    assert code == 0, out
    assert "Start a new game?" not in out and "abandoned" not in out, out
    assert re.search(r"Scorpion · game \d+ · hard · deal 5", out), out
    code, out = await cli("--json", "games")
    games = [(game["level"], game["deal"]) for game in json.loads(out)["games"]]
    assert games == [("hard", 5)], games


async def test_a_script_whose_first_new_game_is_refused_starts_none(cli: CliRunner) -> None:
    """As ``play --level easy --deal 3`` would: the game the script needs is refused."""
    assert (await cli("register", "ada"))[0] == 0
    code, out = await cli("play", lines=["n! easy 3", "b", "q"])
    assert code == 1, out
    assert "easy deals are chosen by the server" in out and "Scorpion · game" not in out, out
    code, out = await cli("--json", "games")
    assert json.loads(out)["games"] == []


@pytest.mark.parametrize("first", ["n! hrd 3", "n! hard 0", "n hard x", "new hard 1 2 3"])
async def test_a_script_whose_first_new_game_the_client_refuses_starts_none(
    cli: CliRunner, first: str
) -> None:
    """A first ``n`` the client refuses itself (no such level, no such deal) started the
    default game, which the script's next ``n`` abandoned: a loss nobody played."""
    assert (await cli("register", "ada"))[0] == 0
    code, out = await cli("play", lines=[first, "n! hard 3", "q"])
    assert code == 1, out
    assert "Scorpion · game" not in out, out
    code, out = await cli("--json", "games")
    assert json.loads(out)["games"] == []


async def test_a_script_not_starting_with_a_new_game_plays_the_default(cli: CliRunner) -> None:
    assert (await cli("register", "ada"))[0] == 0
    code, out = await cli("play", lines=["", "b", "n! hard 2", "q"])
    assert code == 0, out
    assert re.search(r"Scorpion · game \d+ · medium", out), out
    assert re.search(r"game \d+ was abandoned and counts as lost", out), out
    assert [game["level"] for game in await _lost_games(cli)] == ["medium"]


async def test_a_deal_number_on_easy_is_refused_before_asking(cli: CliRunner) -> None:
    """Easy deals are chosen by the server: ``n easy 5`` is refused at once, and the
    unfinished game is neither asked about nor lost."""
    assert (await cli("register", "ada"))[0] == 0
    lines = ["b", "n easy 5", "n! easy 5", "b", "q"]
    code, out = await cli("play", "--level", "hard", "--deal", "1", lines=lines)
    assert code == 0, out
    assert "Start a new game?" not in out and "rejected (forbidden)" not in out, out
    assert out.count("easy deals are chosen by the server: type n easy, without a deal") == 2
    assert out.count("Scorpion · game") == 3 and out.count("hard · deal 1") == 3  # still hard 1
    assert await _lost_games(cli) == []


async def test_games_takes_the_status_it_shows_and_says_when_none_has_it(cli: CliRunner) -> None:
    """The table showed "playing", which --status refused; and a status no game had was
    said as "no games yet" beside a list of games."""
    assert (await cli("play", "--level", "hard", "--deal", "1", lines=["ada", "resign!"]))[0] == 0
    assert (await cli("play", "--level", "hard", "--deal", "2", lines=["q"]))[0] == 0
    code, out = await cli("games")
    assert code == 0 and "playing" in out and "lost" in out, out
    code, out = await cli("games", "--status", "playing")
    assert code == 0 and "playing" in out and "lost" not in out, out
    code, out = await cli("games", "--status", "active")
    assert code == 0 and "playing" in out and "lost" not in out, out
    code, out = await cli("games", "--status", "won")
    assert code == 0 and out.strip() == "no won games", out
    code, out = await cli("games", "--status", "LOST")
    assert code == 0 and "lost" in out and "playing" not in out, out
    code, out = await cli("--lang", "ru", "games", "--status", "идет")  # ё written as е
    assert code == 0 and "идёт" in out, out
    code, out = await cli("--lang", "fi", "games", "--status", "kesken")
    assert code == 0 and "kesken" in out and "hävitty" not in out, out


async def test_a_game_paused_before_is_resumed_by_the_first_p(cli: CliRunner) -> None:
    """The view says the game is paused: a game paused, left and opened again took two
    ``p`` to resume (the first paused it again), and refused every move meanwhile."""
    assert (await cli("register", "ada"))[0] == 0
    code, out = await cli("play", "--level", "hard", "--deal", "1", lines=["p", "q"])
    assert code == 0 and "paused (p resumes)" in out, out
    code, out = await cli("play", "--level", "hard", "--deal", "1", lines=["p", "7c 5", "q"])
    assert code == 0, out
    assert "paused (p resumes)" not in out and "rejected" not in out, out
    assert "PAUSED" in out and "resumed" in out and "moved 7♣" in out, out


async def test_a_paused_game_that_ends_is_paused_no_more(cli: CliRunner) -> None:
    """Resigned while paused, the lost game's status line still said PAUSED, and ``p``
    then toggled "resumed" and "paused" on a game whose clock had stopped for good."""
    assert (await cli("register", "ada"))[0] == 0
    lines = ["p", "resign!", "b", "p", "b"]
    code, out = await cli("play", "--level", "hard", "--deal", "1", lines=lines)
    assert code == 0, out
    after = out[out.index("the game is lost (resigned)") :]
    assert "PAUSED" not in after and "resumed" not in after and "paused" not in after, after
    assert "The game is over." in after, after


async def test_pause_and_resume_do_what_they_say(cli: CliRunner) -> None:
    """``resume`` was ``p``: on a running game it paused it, and ``pause`` on a paused
    one resumed it. Each does its own now; ``p`` alone turns the clock over."""
    assert (await cli("register", "ada"))[0] == 0
    lines = ["pause", "pause", "7c 5", "resume", "resume", "7c 5", "q"]
    code, out = await cli("play", "--level", "hard", "--deal", "1", lines=lines)
    assert code == 0, out
    assert out.count("rejected (paused)") == 1, out
    assert out.index("rejected (paused)") < out.index("resumed") < out.index("moved 7♣"), out
