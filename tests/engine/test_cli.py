"""``scorpion-engine`` (engine.cli): deal, verify and bench.

Most tests call ``main(argv)`` in-process and read the output with capsys; one
runs the real program (``python -m engine``) in a subprocess to pin the exit
codes a shell sees.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from engine.cards import parse_card
from engine.cli import main
from engine.deal import deal_layout
from engine.levels import LEVEL_NAMES, LEVELS
from tests.engine.conftest import FLIP_MOVE, HARD_5_AFTER_FLIP_MOVE

REPO_ROOT = Path(__file__).resolve().parents[2]

CANONICAL = re.compile(r"^[A2-9TJQK][SHDC]$")


def names(text: str) -> list[str]:
    return text.split()


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def replay_file(tmp_path: Path, document: object, name: str = "game.json") -> str:
    path = tmp_path / name
    path.write_text(json.dumps(document), encoding="utf-8")
    return str(path)


def replay(level: str, deal: int, actions: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "format": "scorpion-replay",
        "version": 1,
        "level": level,
        "deal": deal,
        "actions": actions,
    }


# hard deal 5: 5H (with 8H 9D TH) onto 6H in column 3 turns 3C face up in column 1.


# -- deal ---------------------------------------------------------------------------------


def test_deal_json_has_the_replay_shape(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "deal", "--level", "hard", "--number", "1", "--json")
    assert (code, err) == (0, "")
    data = json.loads(out)
    assert list(data) == ["level", "deal", "columns", "face_down", "stock", "reserve"]
    assert (data["level"], data["deal"]) == ("hard", 1)
    assert [len(col) for col in data["columns"]] == [7] * 7
    assert data["face_down"] == [3, 3, 3, 3, 0, 0, 0]
    assert len(data["stock"]) == 3
    assert data["reserve"] == []
    every = [card for col in data["columns"] for card in col] + data["stock"] + data["reserve"]
    assert len(every) == 52
    assert all(CANONICAL.match(card) for card in every)
    assert sorted(parse_card(card) for card in every) == list(range(52))
    assert data["columns"][0] == names("JD 5H KH AS 4H TH 8D")
    assert data["stock"] == ["9C", "2H", "6H"]


@pytest.mark.parametrize("level", LEVEL_NAMES)
def test_deal_json_matches_the_deal_of_every_level(
    capsys: pytest.CaptureFixture[str], level: str
) -> None:
    code, out, _err = run(capsys, "deal", "--level", level, "--number", "40000", "--json")
    assert code == 0
    data = json.loads(out)
    layout = deal_layout(LEVELS[level].layout, 40000)
    assert data["level"] == level
    assert data["deal"] == 40000
    assert [[parse_card(card) for card in col] for col in data["columns"]] == [
        list(col) for col in layout.columns
    ]
    assert data["face_down"] == list(layout.face_down)
    assert [parse_card(card) for card in data["stock"]] == list(layout.stock)
    assert [parse_card(card) for card in data["reserve"]] == list(layout.reserve)


def test_deal_text_shows_seven_numbered_columns_and_hides_cards(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = run(capsys, "deal", "--level", "hard", "--number", "1")
    assert (code, err) == (0, "")
    lines = out.splitlines()
    numbered = [line for line in lines if re.match(r"^\d+: ", line)]
    assert [line.split(":")[0] for line in numbered] == [str(n) for n in range(1, 8)]
    assert numbered[0] == "1: ? ? ? AS 4H TH 8D"
    assert numbered[4] == "5: 5D 5S 9D 5C 3S 7D 8C"
    for line in numbered[:4]:
        assert line.split()[1:4] == ["?", "?", "?"]
        assert line.count("?") == 3
    for line in numbered[4:]:
        assert "?" not in line
    assert "stock: ? ? ?" in lines
    # Not one hidden card is named (R4: 12 face down + 3 in the stock).
    hidden = ["JD", "5H", "KH", "2D", "KD", "3H", "9H", "KC", "2S", "JC", "9S", "KS"]
    for card in [*hidden, "9C", "2H", "6H"]:
        assert card not in out.split()


def test_deal_text_of_three_blind_mice_shows_ten_columns_and_the_reserve(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _err = run(capsys, "deal", "--level", "three-blind-mice", "--number", "4")
    assert code == 0
    lines = out.splitlines()
    numbered = [line for line in lines if re.match(r"^\d+: ", line)]
    assert [line.split(":")[0] for line in numbered] == [str(n) for n in range(1, 11)]
    for line in numbered[:7]:
        assert "?" not in line
        assert len(line.split()) == 1 + 5
    for line in numbered[7:]:
        assert line.split()[1:4] == ["?", "?", "?"]
        assert len(line.split()) == 1 + 5
    assert "reserve: 4S AD" in lines
    code, out, _err = run(capsys, "deal", "--level", "three-blind-mice", "--number", "4", "--json")
    data = json.loads(out)
    assert len(data["columns"]) == 10
    assert data["reserve"] == ["4S", "AD"]
    assert data["stock"] == []


# -- verify -------------------------------------------------------------------------------


def test_verify_a_valid_replay(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = replay_file(tmp_path, replay("hard", 5, [FLIP_MOVE, {"type": "hint", "t": 31_000}]))
    code, out, err = run(capsys, "verify", path)
    assert (code, err) == (0, "")
    assert out.endswith("\n") and out.count("\n") == 1
    data = json.loads(out)
    assert data == {
        "valid": True,
        "won": False,
        "score": 0,  # R24: 10 for the move, less 30 for 31 s, never below 0
        "moves": 1,
        "undos": 0,
        "hints": 1,
        "suits_removed": 0,
        **HARD_5_AFTER_FLIP_MOVE,
    }


def test_verify_an_illegal_action(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    actions = [FLIP_MOVE, {"type": "deal"}, {"type": "deal"}]
    path = replay_file(tmp_path, replay("hard", 5, actions))
    code, out, err = run(capsys, "verify", path)
    assert (code, err) == (1, "")
    data = json.loads(out)
    assert set(data) == {"valid", "index", "code", "message"}
    assert data["valid"] is False
    assert (data["index"], data["code"]) == (2, "stock_empty")
    assert isinstance(data["message"], str) and data["message"]


def _bad_json(tmp_path: Path) -> str:
    path = tmp_path / "bad.json"
    path.write_text('{"format": "scorpion-replay", "version": 1,', encoding="utf-8")
    return str(path)


def _missing(tmp_path: Path) -> str:
    return str(tmp_path / "no-such-file.json")


def _unknown_level(tmp_path: Path) -> str:
    return replay_file(tmp_path, replay("expert", 1, []))


def _bad_card(tmp_path: Path) -> str:
    return replay_file(tmp_path, replay("hard", 1, [{"type": "move", "card": "1X"}]))


def _not_utf8(tmp_path: Path) -> str:
    path = tmp_path / "latin1.json"
    path.write_bytes('{"level": "\u00e9"}'.encode("latin-1"))
    return str(path)


def _deeply_nested(tmp_path: Path) -> str:
    """Valid JSON, but no replay: an array nested 100000 deep."""
    path = tmp_path / "deep.json"
    path.write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    return str(path)


def _huge_number(tmp_path: Path) -> str:
    """A deal number of 5000 digits (more than Python reads from text by default)."""
    text = json.dumps(replay("hard", 1, [])).replace('"deal": 1', '"deal": ' + "7" * 5000)
    path = tmp_path / "huge.json"
    path.write_text(text, encoding="utf-8")
    return str(path)


@pytest.mark.parametrize(
    "make",
    [_bad_json, _missing, _unknown_level, _bad_card, _not_utf8, _deeply_nested, _huge_number],
)
def test_verify_exits_2_with_one_line_for_what_is_not_a_replay(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, make: Callable[[Path], str]
) -> None:
    code, out, err = run(capsys, "verify", make(tmp_path))
    assert code == 2
    assert out == ""
    assert err.endswith("\n")
    assert err.count("\n") == 1
    assert err.strip()


# -- bench --------------------------------------------------------------------------------


def test_bench_json_report(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _err = run(capsys, "bench", "--seconds", "0.2", "--json")
    assert code == 0
    report = json.loads(out)
    assert set(report) >= {
        "seed",
        "rounds",
        "positions",
        "moves",
        "actions",
        "unchecked_pairs_per_s",
        "unchecked_pairs_per_s_range",
        "checked_actions_per_s",
        "checked_actions_per_s_range",
    }
    for key in ("rounds", "positions", "moves", "actions"):
        assert isinstance(report[key], int) and report[key] > 0, key
    for key in ("unchecked_pairs_per_s", "checked_actions_per_s"):
        low, high = report[key + "_range"]
        assert 0 < low <= report[key] <= high, key


# -- the real program ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "exit_code"),
    [
        (["deal", "--level", "hard", "--number", "1", "--json"], 0),
        (["verify", "{valid}"], 0),
        (["verify", "{illegal}"], 1),
        (["verify", "{missing}"], 2),
        (["verify", "{deep}"], 2),
    ],
    ids=["deal", "verify-valid", "verify-illegal", "verify-missing", "verify-deep"],
)
def test_the_program_in_a_subprocess(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, argv: list[str], exit_code: int
) -> None:
    files = {
        "valid": replay_file(tmp_path, replay("hard", 5, [FLIP_MOVE]), "valid.json"),
        "illegal": replay_file(tmp_path, replay("hard", 5, [{"type": "undo"}]), "illegal.json"),
        "missing": str(tmp_path / "missing.json"),
        "deep": _deeply_nested(tmp_path),
    }
    args = [arg.format(**files) for arg in argv]
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    result = subprocess.run(
        [sys.executable, "-m", "engine", *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == exit_code, result.stderr
    # The same output as main() in-process.
    in_process = main(args)
    out, err = capsys.readouterr()
    assert in_process == exit_code
    assert result.stdout == out
    assert result.stderr == err
    if "missing" in argv[-1]:  # no file: named with the reason, not called no replay
        assert (
            result.stderr == f"scorpion-engine: cannot read {args[-1]}: No such file or directory\n"
        )
    if exit_code == 2:
        assert result.stdout == ""
        assert result.stderr.count("\n") == 1
    else:
        assert result.stderr == ""
        json.loads(result.stdout)
