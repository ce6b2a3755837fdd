"""Golden tests of the board rendering: recorded views, colour and plain, narrow and wide.

The views in ``golden/views.json`` were recorded from the engine's
``public_view`` (what the server sends). Regenerate the expected files with
``SCORPION_UPDATE_GOLDEN=1 pytest tests/cli/test_render.py`` and review the diff.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from clients.cli.board import Board
from clients.cli.render import (
    Style,
    card_text,
    describe_event,
    render_board,
    render_results,
    render_stats,
)
from protocol.events import EVENTS

GOLDEN = Path(__file__).parent / "golden"
VIEWS: dict[str, dict[str, Any]] = json.loads((GOLDEN / "views.json").read_text("utf-8"))
STYLES = {
    "plain-wide": Style(color=False, width=80),
    "plain-narrow": Style(color=False, width=30),
    "color-wide": Style(color=True, width=80),
    "color-narrow": Style(color=True, width=30),
}
# The protocol catalogue's own example of a won event (with the level's stats).
WON = dict(EVENTS["won"].examples[0])


def check(name: str, text: str) -> None:
    path = GOLDEN / f"{name}.txt"
    if os.environ.get("SCORPION_UPDATE_GOLDEN"):
        path.write_text(text + "\n", encoding="utf-8")
    assert text + "\n" == path.read_text(encoding="utf-8")


@pytest.mark.parametrize("style", sorted(STYLES))
@pytest.mark.parametrize("view", sorted(VIEWS))
def test_board(view: str, style: str) -> None:
    board = Board.from_view(VIEWS[view])
    check(f"{view}-{style}", render_board(board, STYLES[style], game=42))


def test_plain_has_no_ansi_and_colour_does() -> None:
    board = Board.from_view(VIEWS["hard-deal"])
    assert "\x1b[" not in render_board(board, STYLES["plain-wide"])
    coloured = render_board(board, STYLES["color-wide"])
    assert "\x1b[31;47m4♥" in coloured and "\x1b[30;47mA♠" in coloured


def test_narrow_falls_back_to_one_line_per_column() -> None:
    board = Board.from_view(VIEWS["tbm-deal"])
    lines = render_board(board, STYLES["plain-narrow"]).splitlines()
    assert [line[:3] for line in lines[1:11]] == [f"{n:>2}:" for n in range(1, 11)]
    assert all(len(line) <= 30 for line in lines[1:11])


def test_results_and_stats() -> None:
    check("results", render_results(WON))
    check("stats-empty", render_stats([]))


def test_cards_and_events() -> None:
    assert card_text("TH") == "10♥" and card_text("AS") == "A♠" and card_text("??") == "??"
    moved = {"type": "moved", "card": "4H", "from": 2, "to": 7, "count": 3}
    assert describe_event(moved) == "moved 4♥ (3 cards) from column 2 to column 7"
    assert describe_event({"type": "score", "score": 1, "moves": 1, "undos": 0, "hints": 0}) is None
    assert "undo" in str(describe_event({"type": "stuck"}))
    assert describe_event({"type": "something_new"}) is None
