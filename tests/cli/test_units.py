"""The client's small parts: commands, options, the config file and the board's events."""

from __future__ import annotations

import io
import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from clients.cli import config
from clients.cli.board import Board
from clients.cli.commands import Command, CommandError, parse, parse_card
from clients.cli.guide import STOCK_TIP, guide_text
from clients.cli.i18n import LANGS, catalogue, use
from clients.cli.levels import has_stock
from clients.cli.options import UsageError, detect_locale, parse_args
from clients.cli.terminal import MIN_COLUMNS, Terminal
from protocol import LEVELS

GOLDEN = Path(__file__).parent / "golden"


@pytest.mark.parametrize(
    ("text", "card"),
    [
        ("4h", "4H"),
        ("4♥", "4H"),
        ("10h", "TH"),
        ("TH", "TH"),
        ("10♠", "TS"),
        ("kd", "KD"),
        ("4♥\ufe0f", "4H"),  # as a phone's emoji keyboard types it
        ("10♣\ufe0e", "TC"),
    ],
)
def test_card_spellings(text: str, card: str) -> None:
    assert parse_card(text) == card


@pytest.mark.parametrize(
    "text",
    ["1h", "zz", "4x", "100h", "", "4h\ufe0f", "4♥\ufe0f\ufe0f", "4\ufe0f", "\u212aS", "A\u017f"],
)
def test_not_cards(text: str) -> None:
    assert parse_card(text) is None


def test_commands() -> None:
    assert parse("4h") == Command("move", card="4H")
    assert parse("10♥ 7") == Command("move", card="TH", to=7)
    assert parse("4♥\ufe0f 5") == Command("move", card="4H", to=5)
    assert parse("d") == Command("deal")
    assert parse("4d") == Command("move", card="4D")
    assert parse("h") == Command("hint") and parse("u") == Command("undo")
    assert parse("r") == Command("restart") and parse("p") == Command("pause_or_resume")
    assert parse("n") == Command("new")
    assert parse("n hard") == Command("new", level="hard")
    with pytest.raises(CommandError, match="unknown level abc"):
        parse("n abc")
    with pytest.raises(CommandError, match="abc is not a deal number"):
        parse("n hard abc")  # after a level, what follows is the deal
    assert parse("n! easy") == Command("new", level="easy", force=True)
    assert parse("s") == Command("stats") and parse("?") == Command("help")
    assert parse("q") == Command("quit") and parse("  ") is None


@pytest.mark.parametrize("text", ["4h x", "n nightmare", "fly", "4h 7 8"])
def test_bad_commands(text: str) -> None:
    with pytest.raises(CommandError):
        parse(text)


@pytest.mark.parametrize(
    "line",
    ["x" * 65_536, "4h " + "9" * 500, "n " + "q" * 500, "n hard " + "x" * 500, "4h 5" + "0" * 500],
)
def test_a_refusal_quotes_at_most_the_start_of_what_was_typed(line: str) -> None:
    """A line of 65,536 characters came back whole in "unknown command ...": every
    refusal quotes the first 40 characters of a word or line at most."""
    with pytest.raises(CommandError) as refused:
        parse(line)
    text = str(refused.value)
    assert len(text) < 200 and "…" in text, text


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (
            ["register", "-x"],
            "unknown arguments: -x (a value that starts with - is written after --)",
        ),
        (["replay", "--bogus"], "unknown arguments: --bogus"),  # a game's number has no dash
        (
            ["--la", "fi", "register", "-x"],
            "tuntemattomat argumentit: -x (miinuksella alkava arvo kirjoitetaan --:n jälkeen)",
        ),
        (["register", "--", "-x", "--lang", "fi"], "unknown arguments: --lang fi"),
        (["--lang", "fi", "--lang", "ru", "replay"], "не хватает: ИГРА"),  # the last, as argparse
        (["register"], "missing: NAME"),
    ],
)
def test_an_unknown_option_is_named_before_a_missing_argument(argv: list[str], said: str) -> None:
    """argparse says a required argument is missing before it says an option is unknown:
    ``register -x`` said "missing: NAME", though a name was meant."""
    with pytest.raises(UsageError) as refused:
        parse_args(argv, env={"LANG": "en_US.UTF-8"})
    assert str(refused.value) == said
    assert parse_args(["register", "--", "-x"], env={}).name == "-x"
    assert parse_args(["register", "--serv=ws://h:1", "ada"], env={}).server == "ws://h:1"


@pytest.mark.parametrize(
    ("argv", "command", "name"),
    [
        (["--", "stats"], "stats", None),
        (["stats", "--"], "stats", None),
        (["--"], "play", None),
        (["--lang", "fi", "--", "stats"], "stats", None),
        (["--server", "ws://h:1", "--", "register", "-x"], "register", "-x"),
        (["register", "ada", "--"], "register", "ada"),
        (["--", "replay", "5"], "replay", None),
        (["--json", "--", "sign-out"], "sign-out", None),
        (["--", "stats", "--"], "stats", None),  # both ends: the second names nothing
        (["--no-color", "--", "stats", "--"], "stats", None),
    ],
)
def test_dashes_end_the_options_wherever_they_are(
    argv: list[str], command: str, name: str | None
) -> None:
    """``--`` ends the options, as in any program that takes them: before the command
    (``scorpion -- stats``) it was taken for the command, and with nothing after it
    (``scorpion stats --``) for an unknown argument."""
    options = parse_args(argv, env={})
    assert options.command == command and options.name == name


def test_what_follows_dashes_is_no_option() -> None:
    with pytest.raises(UsageError) as refused:
        parse_args(["--", "stats", "--level", "hard"], env={})
    assert "--level hard" in str(refused.value)
    with pytest.raises(UsageError):
        parse_args(["--", "--lang", "fi"], env={})


@pytest.mark.parametrize(
    ("env", "color"),
    [
        ({"TERM": "xterm-256color"}, True),
        ({"TERM": "dumb"}, False),
        ({"TERM": ""}, False),
        ({}, False),
    ],
)
def test_a_dumb_terminal_gets_no_colours(env: dict[str, str], color: bool) -> None:
    """``TERM=dumb`` (an Emacs shell, a CI console), or no ``TERM`` at all, got the
    board in ANSI colour sequences, which such a terminal shows as text."""
    assert parse_args(["play"], env=env).color is color


def test_options_from_the_environment() -> None:
    env = {"SCORPION_SERVER": "ws://example:1", "NO_COLOR": "1", "LANG": "fi_FI.UTF-8"}
    options = parse_args([], env=env)
    assert options.command == "play" and options.server == "ws://example:1"
    assert options.color is False and options.lang == "fi"
    options = parse_args(["stats", "--server", "ws://x:2", "--lang", "ru", "--no-color"], env={})
    assert (options.command, options.server, options.lang, options.color) == (
        "stats",
        "ws://x:2",
        "ru",
        False,
    )
    assert parse_args(["replay", "3", "--speed", "0"], env={}).speed == 0.0
    assert parse_args(["replay", "3", "--speed", "0.01"], env={}).speed == 0.01
    with pytest.raises(UsageError):  # a step every 1e300 s waited without end
        parse_args(["replay", "3", "--speed", "1e-300"], env={})
    assert detect_locale({"LANG": "de_DE"}) == "en" and detect_locale({}) == "en"


def test_config_dir_follows_xdg(tmp_path: Path) -> None:
    assert config.config_dir({"XDG_CONFIG_HOME": str(tmp_path)}) == tmp_path / "scorpion"
    assert config.config_dir({"XDG_CONFIG_HOME": "relative"}).parts[-2:] == (".config", "scorpion")


def test_credentials_are_kept_per_server(tmp_path: Path) -> None:
    path = config.save("ws://a/", config.Credentials("ada", "t1"), tmp_path)
    config.save("ws://b", config.Credentials("bob", "t2"), tmp_path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert config.load("ws://a", tmp_path) == config.Credentials("ada", "t1")
    assert config.load("ws://b", tmp_path) == config.Credentials("bob", "t2")
    assert config.load("ws://c", tmp_path) is None
    path.write_text("not json")
    with pytest.raises(config.Malformed):  # the app names the file and reads no player
        config.load("ws://a", tmp_path)


def view() -> dict[str, Any]:
    views: dict[str, dict[str, Any]] = json.loads((GOLDEN / "views.json").read_text("utf-8"))
    return views["hard-deal"]


def test_events_forward_and_back() -> None:
    start = Board.from_view(view())
    batches: list[list[dict[str, Any]]] = [
        [{"type": "moved", "card": "7C", "from": 7, "to": 5, "count": 7}],
        [{"type": "dealt", "cards": ["7D", "KC", "2S"]}],
        [{"type": "moved", "card": "8D", "from": 1, "to": 4, "count": 1}],
        [{"type": "moved", "card": "TH", "from": 1, "to": 7, "count": 2}],
        [{"type": "moved", "card": "4H", "from": 1, "to": 6, "count": 1}],
        [
            {"type": "moved", "card": "AS", "from": 1, "to": 3, "count": 1},
            {"type": "flipped", "column": 1, "card": "9S"},
        ],
        [
            {"type": "undone", "action": "move"},
            {"type": "unflipped", "column": 1},
            {"type": "moved", "card": "AS", "from": 3, "to": 1, "count": 1},
        ],
    ]
    board = start.copy()
    for batch in batches:
        board.apply_batch(batch)
    assert board.columns[0].down == 3 and board.columns[0].cards == ["AS"]
    assert board.columns[4].cards[-7:] == ["7C", "QC", "JS", "QH", "4S", "8S", "6S"]
    assert board.stock == 0
    for batch in reversed(batches):
        for event in reversed(batch):
            board.unapply(event)
    assert board.columns == start.columns and board.stock == start.stock


def test_suits_and_unrecorded_events() -> None:
    board = Board.from_view(view())
    board.columns[2].cards = [
        "KH",
        "QH",
        "JH",
        "TH",
        "9H",
        "8H",
        "7H",
        "6H",
        "5H",
        "4H",
        "3H",
        "2H",
        "AH",
    ]
    board.apply({"type": "suit_removed", "suit": "H", "column": 3, "slot": 1})
    assert board.columns[2].cards == [] and board.removed == ["H"]
    board.apply({"type": "suit_restored", "suit": "H", "column": 3, "slot": 1})
    assert len(board.columns[2].cards) == 13 and board.removed == []
    score = {"type": "score", "score": 9, "moves": 9, "undos": 0, "hints": 0, "earned": 9}
    score |= {"undo_depth": 1, "stuck": False}
    board.apply_batch([score, {"type": "clock", "running": True, "time_ms": 5}], recorded=False)
    assert board.moves == 0 and board.running and board.time_ms == 5
    board.apply_batch([{"type": "stuck"}])
    assert board.stuck
    board.apply_batch([{"type": "something_new"}, score])
    assert not board.stuck and board.moves == 9


def test_the_board_follows_the_protocols_view_fields() -> None:
    """Timed score decays with play time; stuck clears; restart and the deal arrive as events."""
    view = {
        "level": "hard",
        "deal": None,
        "columns": [{"down": 1, "cards": ["KS"]}, {"down": 0, "cards": []}],
        "stock": 3,
        "score": 40,
        "earned": 40,
        "scoring": "timed",
        "running": True,
    }
    board = Board.from_view(view)
    assert board.running and [board.score_at(t) for t in (0, 29_999, 30_000, 95_000)] == [
        40, 40, 10, 0,
    ]  # fmt: skip
    board.apply({"type": "stuck"})
    score = {"type": "score", "score": 50, "moves": 2, "undos": 1, "hints": 0, "earned": 50}
    board.apply({**score, "undo_depth": 0, "stuck": False})
    assert not board.stuck and (board.score_at(30_000), board.score_at(60_000)) == (20, 0)
    restart = {"type": "restarted", "columns": view["columns"], "stock": 3, "reserve": []}
    board.apply(restart)
    assert [column.cards for column in board.columns] == [["KS"], []] and not board.needs_snapshot
    board.apply({"type": "game_lost", "reason": "resigned", "deal": 77})
    assert (board.lost, board.deal) == ("resigned", 77)
    points = Board.from_view({**view, "scoring": "points", "score": 7, "earned": 7})
    assert points.score_at(10**7) == 7


def test_an_undone_reserve_move_puts_the_card_back_at_its_place() -> None:
    board = Board.from_view(json.loads((GOLDEN / "views.json").read_text("utf-8"))["tbm-deal"])
    assert board.reserve == ["5S", "5C"]
    board.apply({"type": "moved", "card": "5S", "from": "reserve", "to": 9, "count": 1})
    assert board.reserve == ["5C"]
    board.apply({"type": "moved", "card": "5S", "from": 9, "to": "reserve", "count": 1, "index": 1})
    assert board.reserve == ["5S", "5C"]


def test_winnable_is_a_play_option() -> None:
    from clients.cli.options import parse_args

    assert parse_args(["play", "--level", "hard", "--winnable"], {}).winnable is True
    assert parse_args(["play"], {}).winnable is False


@pytest.mark.parametrize("lang", LANGS)
def test_the_stock_tip_only_on_a_level_with_a_stock(lang: str) -> None:
    use(lang)
    stock_tip = catalogue(lang)[f"tips.{STOCK_TIP}"]
    for level in LEVELS:
        shown = " ".join(guide_text(level, width=1000).split())
        assert (stock_tip in shown) == has_stock(level), (level, shown)
    assert not has_stock("three-blind-mice") and has_stock("hard")
    use("en")


def test_requests_are_paced_by_the_kind_the_server_limits_them_by() -> None:
    """A new game is a kind of its own (PROTOCOL.md section 10): counted as an action, one
    new game refused for the game rate spaced every later move 2 s apart."""
    from clients.cli.connection import _rate_kind

    assert _rate_kind("new_game") == "game"
    assert {_rate_kind(t) for t in ("move", "deal", "undo", "pause")} == {"action"}
    assert {_rate_kind(t) for t in ("register", "rotate_token", "sign_out")} == {"register"}
    assert (_rate_kind("hint"), _rate_kind("stats"), _rate_kind("ping")) == ("hint", "read", "read")


@pytest.mark.parametrize(
    ("reported", "drawn"),
    [
        ((0, 0), (80, 24)),
        ((4, 0), (MIN_COLUMNS, 24)),
        ((5, 3), (MIN_COLUMNS, 3)),
        ((120, 40), (120, 40)),
    ],
)
def test_a_terminal_of_unknown_or_tiny_size_is_drawn_for_one_that_fits(
    monkeypatch: pytest.MonkeyPatch, reported: tuple[int, int], drawn: tuple[int, int]
) -> None:
    """A pty whose size was never set says 0 by 0, and a terminal may be 5 columns
    wide: the level menu took its width less its indent, and its wrapper ended
    the client with "invalid width -4"."""
    monkeypatch.setattr(os, "get_terminal_size", lambda *_: os.terminal_size(reported))
    assert Terminal(io.StringIO(), editor=True).size() == drawn
