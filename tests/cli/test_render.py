"""Golden tests of the screens: recorded views in each language, at 80x24, 160x50 and 30 columns.

The views in ``golden/views.json`` were recorded from the engine's
``public_view`` (what the server sends). Regenerate the expected files with
``SCORPION_UPDATE_GOLDEN=1 pytest tests/cli/test_render.py`` and review the diff.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from clients.cli.board import Board
from clients.cli.commands import help_text
from clients.cli.guide import menu_line
from clients.cli.i18n import LANGS, use
from clients.cli.render import (
    RESERVED_ROWS,
    Style,
    card_text,
    cards_in_text,
    describe_event,
    local_time,
    percent,
    render_board,
    render_games,
    render_hint,
    render_results,
    render_stats,
)
from protocol.events import EVENTS

GOLDEN = Path(__file__).parent / "golden"
VIEWS: dict[str, dict[str, Any]] = json.loads((GOLDEN / "views.json").read_text("utf-8"))
SIZES = {"80x24": (80, 24), "160x50": (160, 50)}
ANSI = re.compile(r"\x1b\[[0-9;]*m")
# The protocol catalogue's own example of a won event (with the level's stats).
WON = dict(EVENTS["won"].examples[0])


def check(name: str, text: str) -> None:
    path = GOLDEN / f"{name}.txt"
    if os.environ.get("SCORPION_UPDATE_GOLDEN"):
        path.write_text(text + "\n", encoding="utf-8")
    assert text + "\n" == path.read_text(encoding="utf-8")


def fits(text: str, width: int, height: int) -> bool:
    lines = ANSI.sub("", text).splitlines()
    return len(lines) <= height - RESERVED_ROWS and all(len(line) <= width for line in lines)


@pytest.mark.parametrize("size", sorted(SIZES))
@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("view", sorted(VIEWS))
def test_screen(view: str, lang: str, size: str) -> None:
    use(lang)
    width, height = SIZES[size]
    board = Board.from_view(VIEWS[view])
    text = render_board(board, Style(width=width, height=height), game=42)
    check(f"screen-{view}-{lang}-{size}", text)
    assert fits(text, width, height)


@pytest.mark.parametrize("view", sorted(VIEWS))
def test_colour_and_narrow(view: str) -> None:
    board = Board.from_view(VIEWS[view])
    check(f"{view}-color-80x24", render_board(board, Style(True, 80, 24), game=42))
    check(f"{view}-plain-30", render_board(board, Style(False, 30), game=42))


def test_plain_has_no_ansi_and_colour_does() -> None:
    board = Board.from_view(VIEWS["hard-deal"])
    assert "\x1b[" not in render_board(board, Style(width=80))
    coloured = render_board(board, Style(color=True, width=80))
    assert "\x1b[31;47m4♥" in coloured and "\x1b[30;47mA♠" in coloured


def test_a_long_column_is_compressed_to_fit_80x24() -> None:
    board = Board.from_view(VIEWS["medium-two-suits"])
    assert max(len(column.cards) for column in board.columns) == 22
    assert not fits(render_board(board, Style(width=80)), 80, 24)  # uncompressed: too tall
    text = render_board(board, Style(width=80, height=24))
    assert fits(text, 80, 24) and "⋮" in text


def test_a_wide_terminal_gets_wider_cells() -> None:
    board = Board.from_view(VIEWS["hard-deal"])
    narrow = render_board(board, Style(width=40)).splitlines()[1]
    wide = render_board(board, Style(width=160)).splitlines()[1]
    assert len(wide) > len(narrow)


def test_narrow_falls_back_to_one_line_per_column() -> None:
    board = Board.from_view(VIEWS["tbm-deal"])
    lines = render_board(board, Style(width=30)).splitlines()
    first = lines.index(next(line for line in lines if line.startswith(" 1:")))
    assert [line[:3] for line in lines[first : first + 10]] == [f"{n:>2}:" for n in range(1, 11)]
    assert all(len(line) <= 30 for line in lines)


def test_three_blind_mice_has_no_stock_line() -> None:
    board = Board.from_view(VIEWS["tbm-deal"])
    assert "stock" not in render_board(board, Style(width=80))
    assert "stock: 3" in render_board(Board.from_view(VIEWS["hard-deal"]), Style(width=80))


@pytest.mark.parametrize("lang", LANGS)
def test_results_stats_and_help(lang: str) -> None:
    use(lang)
    check(f"results-{lang}", render_results(WON))
    check(f"stats-empty-{lang}", render_stats([]))
    check(f"help-{lang}", help_text())


def test_stats_follow_the_level_order() -> None:
    row = dict(WON["stats"])
    rows = [{**row, "level": level} for level in ("relaxed", "easy", "hard")]
    lines = render_stats(rows).splitlines()
    assert [line.split()[0] for line in lines[1:]] == ["easy", "hard", "relaxed"]
    assert "longest streak" in lines[0]


def test_stats_show_the_fewest_moves_as_the_browser_does() -> None:
    row = {**WON["stats"], "level": "hard", "fewest_moves": 151}
    header, line = render_stats([row]).splitlines()
    assert header.endswith("fewest moves") and line.endswith(" 151")
    assert render_stats([{**row, "fewest_moves": None}]).splitlines()[1].endswith(" -")


@pytest.mark.parametrize("lang", LANGS)
def test_stats_wider_than_the_terminal_become_one_block_per_level(lang: str) -> None:
    """The table of ten columns is wider than 80 in every language: in a terminal
    of 80 columns each level gets its own lines, every figure still shown."""
    use(lang)
    rows = [{**WON["stats"], "level": level, "fewest_moves": 151} for level in ("hard", "easy")]
    table = render_stats(rows)
    assert max(len(line) for line in table.splitlines()) > 80  # what a pipe gets, unwrapped
    blocks = render_stats(rows, 80)
    assert max(len(line) for line in blocks.splitlines()) <= 80
    first, _second = blocks.split("\n\n")
    assert first.splitlines()[0] == table.splitlines()[1].split("  ")[0]  # easy first
    assert len(first.splitlines()) == 10 and first.splitlines()[-1].endswith("  151")
    assert render_stats(rows, 200) == table
    results = render_results({**WON, "stats": rows[0]}, 80)
    assert (
        results.endswith(render_stats([rows[0]], 80)) and max(map(len, results.splitlines())) <= 80
    )


@pytest.fixture
def zone(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[str], None]]:
    """Set the process's time zone (``TZ``) for the test; the one before comes back."""

    def set_zone(name: str) -> None:
        monkeypatch.setenv("TZ", name)
        time.tzset()

    yield set_zone
    monkeypatch.undo()
    time.tzset()


def test_games_wider_than_the_terminal_become_one_block_per_game(
    zone: Callable[[str], None],
) -> None:
    """The games table is 102 columns wide: it wrapped row by row at 80."""
    use("en")
    zone("UTC0")
    game = {"game": 6988716928896923, "level": "three-blind-mice", "status": "active", "moves": 12}
    game |= {
        "score": 480,
        "time_ms": 754_000,
        "deal": None,
        "updated": "2026-12-06T17:42:06.123+00:00",
    }
    table = render_games([game, {**game, "game": 7}])
    assert max(len(line) for line in table.splitlines()) > 80
    blocks = render_games([game, {**game, "game": 7}], None, 80)
    assert max(len(line) for line in blocks.splitlines()) <= 80
    first, second = blocks.split("\n\n")
    assert first.splitlines()[0] == "game 6988716928896923" and second.startswith("game 7\n")
    assert "  updated  2026-12-06 17:42:06" in first.splitlines()[-1].replace("   ", "  ")
    assert render_games([game], None, 200) == render_games([game])


def test_a_games_time_is_shown_in_the_terminals_time_zone(zone: Callable[[str], None]) -> None:
    """The ``updated`` column was the wire's UTC, cut to the second, with no zone named."""
    zone("EET-2EEST,M3.5.0/3,M10.5.0/4")  # Helsinki's, written out: no tz database needed
    assert local_time("2026-12-07T02:00:13.250Z") == "2026-12-07 04:00:13"
    assert local_time("2026-07-01T23:30:00+00:00") == "2026-07-02 02:30:00"  # summer: +3
    zone("EST5EDT,M3.2.0,M11.1.0")  # New York's
    assert local_time("2026-12-07T02:00:13Z") == "2026-12-06 21:00:13"
    assert local_time("not a time") == "not a time"
    zone("EET-2")  # east of UTC: the last second of the calendar is beyond it
    assert local_time("9999-12-31T23:59:59Z") == "9999-12-31 23:59:59"
    zone("EST5")
    assert local_time("0001-01-01T00:00:00Z") == "0001-01-01 00:00:00"


def test_a_win_rate_is_never_100_percent_with_a_loss_nor_0_with_a_win() -> None:
    """199 wins of 200 showed "100%", 1 of 201 "0%": rounded to a whole percent."""
    assert [percent(rate) for rate in (0, 1, 0.4166, 0.995, 0.999, 1 / 201)] == [
        "0%",
        "100%",
        "42%",
        "99%",
        "99%",
        "1%",
    ]
    row = {**WON["stats"], "level": "hard", "games": 200, "wins": 199, "win_rate": 0.995}
    assert " 99% " in render_stats([row]) and "100%" not in render_stats([row])
    assert "99%" in menu_line("hard", row)
    none = {**row, "games": 0, "wins": 0, "losses": 0, "win_rate": 0.0}
    assert "0%" not in render_stats([none]).splitlines()[1]  # no games: no rate, as the web's "—"


@pytest.mark.parametrize("lang", LANGS)
def test_the_help_keeps_its_words_whole_on_a_narrow_terminal(lang: str) -> None:
    """At 20 to 26 columns the words beside the commands got a column of one or two
    characters: 400 lines of one character each, and Russian words cut in two."""
    use(lang)
    words = help_text(200).split()
    for width in range(20, 81):
        text = help_text(width)
        assert text.split() == words, width  # no word cut, none lost
        lines = text.splitlines()
        assert len(lines) <= 60, (width, len(lines))
        long = [line for line in lines if len(line) > width - 1 and " " in line.strip()]
        assert not long or width < 24, (width, long)  # but a command, or one long word


def test_cards_and_events() -> None:
    assert card_text("TH") == "10♥" and card_text("AS") == "A♠" and card_text("??") == "??"
    assert cards_in_text("3C must go onto a card exactly one rank higher.").startswith("3♣ ")
    assert cards_in_text("TH has nowhere to go.") == "10♥ has nowhere to go."
    moved = {"type": "moved", "card": "4H", "from": 2, "to": 7, "count": 3}
    assert describe_event(moved) == "moved 4♥ (3 cards) from column 2 to column 7"
    assert describe_event({"type": "score", "score": 1, "moves": 1, "undos": 0, "hints": 0}) is None
    assert "undo" in str(describe_event({"type": "stuck"}))
    assert describe_event({"type": "something_new"}) is None


def test_a_none_hint_says_why() -> None:
    assert "can no longer be won" in render_hint({"action": "none", "reason": "lost"})
    assert "back to a position" in render_hint({"action": "none", "reason": "seen"})
    assert render_hint({"action": "none", "reason": "stuck"}) == "hint: no useful move is left"
    assert render_hint({"action": "none"}) == "hint: no useful move is left"


def test_a_hint_in_a_lost_position_says_it_only_plays_on() -> None:
    """At a deal proved lost, ``h`` named a move and nothing more, where the guide says
    the hint tells that the deal cannot be won."""
    move = {"type": "hint", "action": "move", "card": "7C", "to": 5}
    assert describe_event(move) == "hint: move 7♣ to column 5"
    at_deal = describe_event(move, undoable=False, lost=True)
    assert (
        at_deal == "hint: move 7♣ to column 5, though this deal cannot be won, whatever is played"
    )
    later = render_hint({"action": "deal"}, lost=True)
    assert later == "hint: deal the stock (d), though this position can no longer be won"
    use("fi")
    assert render_hint(move, lost=True).endswith("vaikka tätä asemaa ei voi enää voittaa")
    use("en")


def test_lost_from_the_deal_is_worded_apart_from_lost_after_the_moves() -> None:
    from_deal = describe_event({"type": "lost_position", "from_deal": True}) or ""
    after_moves = describe_event({"type": "lost_position", "from_deal": False}) or ""
    assert "deal cannot be won" in from_deal and "undo" not in from_deal
    assert "position can no longer be won" in after_moves and "undo" in after_moves
