"""`scorpion replay`: the deal rebuilt from a finished game's events, and the playback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.replay import parse_replay, rebuild
from protocol import REPLAY_PAGE_ACTIONS
from tests.cli.conftest import CliRunner
from tests.cli.test_play import DEAL, solution_lines
from tests.server.conftest import Running
from tests.server.test_resync import first_flipping_move


def boards(out: str) -> list[list[str]]:
    """Each board printed in ``out``: its lines from the header to before the status line."""
    found: list[list[str]] = []
    current: list[str] | None = None
    for line in out.splitlines():
        if line.startswith("Scorpion · game"):
            current = []
        if current is not None:
            if line.startswith("medium · moves"):
                found.append(current)
                current = None
            else:
                current.append(line)
    return found


async def test_replay_rebuilds_the_deal_and_ends_where_the_game_did(cli: CliRunner) -> None:
    line = solution_lines("medium", DEAL)
    script = [*line[:3], "d", "u", "u", line[2], "d", "r!", *line[:5], "d", "b", "resign!"]
    assert (await cli("register", "ada"))[0] == 0
    code, played = await cli("play", "--level", "medium", "--deal", str(DEAL), lines=script)
    assert code == 0 and "rejected" not in played, played
    assert "restarted" in played and "undone" in played and "the game is lost" in played
    first, last = boards(played)[0], boards(played)[-1]

    code, out = await cli("games")
    game = out.splitlines()[1].split()[0]
    code, shown = await cli("replay", game, "--speed", "0")
    assert code == 0, shown
    replayed = boards(shown)
    assert replayed[0] == first
    assert replayed[-1][:-1] == last  # the same columns, plus the "lost" banner
    assert replayed[-1][-1] == "*** lost (resigned) ***"
    assert len(replayed) == len(script) - 1 + 1  # the deal, then one per version


async def test_an_unfinished_game_has_no_replay(
    cli: CliRunner, capsys: pytest.CaptureFixture[str]
) -> None:
    assert (await cli("register", "ada"))[0] == 0
    assert (await cli("play", "--level", "hard", "--deal", "1", lines=["q"]))[0] == 0
    game = (await cli("games"))[1].splitlines()[1].split()[0]
    capsys.readouterr()
    code, out = await cli("replay", game)
    assert code == 1 and out == ""
    assert capsys.readouterr().err == (
        f"scorpion: game {game} is not finished: only finished games have a replay\n"
    )


async def test_a_game_with_a_restart_is_played_back(cli: CliRunner) -> None:
    deal, card, to = first_flipping_move("medium")
    assert (await cli("register", "ada"))[0] == 0
    script = [f"{card} {to}", "r!", "resign!"]
    code, played = await cli("play", "--level", "medium", "--deal", str(deal), lines=script)
    assert code == 0 and "turned up" in played, played
    game = (await cli("games"))[1].splitlines()[1].split()[0]
    code, shown = await cli("replay", game, "--speed", "0")
    assert code == 0, shown
    assert "cannot give this game's history" not in shown
    assert "-- step 3 --" in shown and "restarted from the deal" in shown
    replayed = boards(shown)
    assert replayed[0] == replayed[2]  # the restart is back at the deal


async def test_a_long_replay_is_fetched_page_by_page(
    cli: CliRunner, server: Running, config_dir: Path, tmp_path: Path
) -> None:
    assert (await cli("register", "ada"))[0] == 0
    stored = json.loads((config_dir / "credentials.json").read_text(encoding="utf-8"))
    token = next(iter(stored["servers"].values()))["token"]
    ada = await server.connect()
    await ada.hello(token)
    game = (await ada.request("new_game", level="hard", deal=1))["game"]
    total = REPLAY_PAGE_ACTIONS * 2 + 7
    await ada.pipeline([{"type": "restart", "game": game, "v": v} for v in range(total)])
    await ada.request("resign", game=game)
    target = tmp_path / "long.json"
    code, out = await cli("replay", str(game), "--export", str(target))
    assert code == 0, out
    document = json.loads(target.read_text(encoding="utf-8"))
    assert len(document["actions"]) == total  # three pages joined
    assert len(rebuild(parse_replay(document)).actions) == total
