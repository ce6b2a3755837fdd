"""Text for the terminal: the board, events, results, stats and game lists.

Everything here is a pure function of its arguments and of the language
chosen with ``i18n.use`` (no I/O, no clock), so golden tests can pin it.
``Style`` says whether to use ANSI colours and how big the terminal is.

Fitting the board (``render_board``): the columns are drawn side by side in
cells as wide as the terminal allows (5 to 8 characters). When the screen
is too short for the longest column, the board is compressed step by step
until it fits: first the face-down cards of a column become one ``#n``
cell, then the middle of every same-suit run of five or more cards becomes
one ``⋮`` cell (the run's top and bottom cards stay, so the hidden ones
follow from them). When the columns do not fit side by side at all, each
column is drawn on its own line, wrapped where need be.
"""

from __future__ import annotations

import contextlib
import re
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from clients.cli.board import UNKNOWN, Board
from clients.cli.i18n import _, ngettext
from clients.cli.levels import LEVEL_ORDER, has_stock, level_name

__all__ = [
    "Style",
    "card_text",
    "cards_in_text",
    "describe_event",
    "percent",
    "render_board",
    "render_games",
    "render_hint",
    "render_results",
    "render_stats",
    "render_status",
    "time_text",
]

SUITS = {"S": "♠", "H": "♥", "D": "♦", "C": "♣"}
RED = frozenset("HD")
CELL = 5  # "10♥" plus spacing: the narrowest cell
WIDEST_CELL = 8
RESERVED_ROWS = 2  # the prompt and the status bar below the board
RUN = 5  # a same-suit run this long or longer may be shown as top, ⋮, bottom
RESET = "\x1b[0m"
RED_CARD = "\x1b[31;47m"
BLACK_CARD = "\x1b[30;47m"
BACK = "\x1b[37;44m"
DIM = "\x1b[2m"
BOLD = "\x1b[1m"
_RANKS = "A23456789TJQK"
_WIRE_CARD = re.compile(r"\b(10|[2-9TJQKA])([SHDC])\b")


@dataclass(frozen=True)
class Style:
    """How to draw: ANSI colours or not, and the terminal's size."""

    color: bool = False
    width: int = 80
    height: int | None = None  # None: as tall as need be (scripts, pipes)

    def paint(self, code: str, text: str) -> str:
        return f"{code}{text}{RESET}" if self.color else text


def card_text(card: str) -> str:
    """``TH`` -> ``10♥``; an unknown card stays ``??``."""
    if card == UNKNOWN or len(card) != 2:
        return card
    rank = "10" if card[0] == "T" else card[0]
    return rank + SUITS.get(card[1], card[1])


def cards_in_text(text: str) -> str:
    """A server message with its wire card names (``3C``) as the board shows them (``3♣``)."""
    return _WIRE_CARD.sub(lambda m: card_text(("T" if m[1] == "10" else m[1]) + m[2]), text)


def _card(card: str, style: Style) -> str:
    text = card_text(card)
    if card == UNKNOWN:
        return style.paint(BACK, text)
    return style.paint(RED_CARD if card[1] in RED else BLACK_CARD, text)


def _suit(suit: str, style: Style) -> str:
    return style.paint(RED_CARD if suit in RED else BLACK_CARD, SUITS.get(suit, suit))


def _back(style: Style) -> str:
    return style.paint(BACK, "▒▒") if style.color else "##"


def _cell(visible: str, width: int, painted: str) -> str:
    """``painted`` (maybe with ANSI codes) right-aligned in ``width`` visible chars."""
    return " " * max(0, width - len(visible)) + painted


def time_text(ms: int) -> str:
    seconds = max(0, ms) // 1000
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02}:{secs:02}" if hours else f"{minutes}:{secs:02}"


def percent(rate: float) -> str:
    """A win rate in 0..1 as a whole percentage, written as the language writes one
    ("42%", "42 %"), never 100% with a loss nor 0% with a win (199 of 200 is "99%")."""
    shown = round(100 * rate)
    if 0 < rate < 1:
        shown = min(max(shown, 1), 99)
    return _("format.percent", rate=shown)


def fit(parts: list[str], width: int | None, sep: str = " · ") -> str:
    """``parts`` joined by ``sep``, broken into lines no wider than ``width`` where need be."""
    lines: list[str] = []
    for part in parts:
        if lines and (width is None or len(lines[-1]) + len(sep) + len(part) <= width):
            lines[-1] += sep + part
        else:
            lines.append(part)
    return "\n".join(lines)


def render_status(
    board: Board,
    time_ms: int | None = None,
    paused: bool = False,
    score: int | None = None,
    width: int | None = None,
    *,
    offline: bool = False,
) -> str:
    """The status line: level, moves, play time, score (and undos, hints, pause, offline).

    With ``width``, it is broken into as many lines as that width needs.
    """
    ms = board.time_ms if time_ms is None else time_ms
    parts = [
        level_name(board.level),
        _("status.moves", moves=board.moves),
        _("status.time", time=time_text(ms)),
        _("status.score", score=board.score_at(ms) if score is None else score),
    ]
    if board.undos or board.hints:
        parts.append(_("status.undos_hints", undos=board.undos, hints=board.hints))
    if paused:
        parts.append(_("status.paused"))
    if offline:
        parts.append(_("status.offline"))
    return fit(parts, width)


def _header(board: Board, game: int | None, width: int) -> list[str]:
    deal = _("board.deal_hidden") if board.deal is None else _("board.deal", deal=board.deal)
    parts = [_("board.title"), level_name(board.level), deal]
    if game is not None:
        parts.insert(1, _("board.game", game=game))
    return fit(parts, width).splitlines()


def _extras(board: Board, style: Style) -> list[str]:
    removed = " ".join(_suit(suit, style) for suit in board.removed) or "-"
    parts = [_("board.removed", suits=removed)]
    if has_stock(board.level):
        parts.insert(0, _("board.stock", count=board.stock))
    lines = ["   ".join(parts)]
    if board.reserve:
        reserve = " ".join(_card(card, style) for card in board.reserve)
        lines.append(_("board.reserve", cards=reserve))
    banner = None
    if board.won:
        banner = _("board.won")
    elif board.lost:
        banner = _("board.lost", reason=_(f"lost.{board.lost}"))
    elif board.status == "lost":  # a view says lost, not why
        banner = _("board.lost_plain")
    elif board.stuck:
        banner = _("board.stuck")
    elif board.lost_position and board.lost_from_deal:
        banner = _("board.lost_from_deal")
    elif board.lost_position:
        banner = _("board.lost_position")
    if banner is not None:
        lines += textwrap.wrap(banner, max(20, style.width))
    return lines


Item = tuple[str, str]  # (visible text, painted text)


def _runs(cards: list[str]) -> list[tuple[int, int]]:
    """(start, end) of each same-suit descending run of face-up cards, bottom to top."""
    runs, start = [], 0
    for index in range(1, len(cards) + 1):
        ends = index == len(cards) or not _follows(cards[index - 1], cards[index])
        if ends:
            runs.append((start, index))
            start = index
    return runs


def _follows(lower: str, upper: str) -> bool:
    if UNKNOWN in (lower, upper) or lower[1] != upper[1]:
        return False
    return _RANKS.index(lower[0]) == _RANKS.index(upper[0]) + 1


def _stack(column: Any, style: Style, level: int) -> list[Item]:
    """One column's cells at compression ``level`` (0 full, 1 ``#n``, 2 also ``⋮``)."""
    items: list[Item]
    if level >= 1 and column.down > 1:
        items = [(f"#{column.down}", style.paint(BACK, f"#{column.down}"))]
    else:
        items = [("##", _back(style))] * column.down
    cards: list[str] = column.cards
    for start, end in _runs(cards):
        run = [(card_text(card), _card(card, style)) for card in cards[start:end]]
        if level >= 2 and len(run) >= RUN:
            run = [run[0], ("⋮", "⋮"), run[-1]]
        items += run
    return items


def _wide(board: Board, style: Style, cell: int, level: int) -> list[str]:
    count = len(board.columns)
    lines = ["".join(_cell(str(i), cell, str(i)) for i in range(1, count + 1))]
    stacks = [_stack(column, style, level) for column in board.columns]
    depth = max((len(stack) for stack in stacks), default=0)
    for row in range(depth):
        cells = []
        for stack in stacks:
            visible, painted = stack[row] if row < len(stack) else ("", "")
            cells.append(_cell(visible, cell, painted))
        lines.append("".join(cells).rstrip())
    if depth == 0:
        lines.append("".join(_cell("·", cell, "·") for _ in board.columns))
    return lines


def _narrow(board: Board, style: Style, level: int) -> list[str]:
    """One line per column, wrapped (indented) where the terminal is narrower still."""
    lines = []
    for number, column in enumerate(board.columns, 1):
        items = _stack(column, style, level)
        line, used = f"{number:>2}:", 3
        if not items:
            line += " ·"
        for visible, painted in items:
            if used + 1 + len(visible) > style.width and used > 4:
                lines.append(line)
                line, used = "   ", 3
            line += " " + painted
            used += 1 + len(visible)
        lines.append(line)
    return lines


def _body(board: Board, style: Style, room: int | None) -> list[str]:
    """The columns, compressed as little as ``room`` lines allow (see the module doc)."""
    count = max(1, len(board.columns))
    cell = min(WIDEST_CELL, (style.width - 1) // count)
    if cell >= CELL:
        for level in range(3):
            lines = _wide(board, style, cell, level)
            if room is None or len(lines) <= room:
                return lines
    best: list[str] = []
    for level in range(3):
        best = _narrow(board, style, level)
        if room is None or len(best) <= room:
            break
    return best


def render_board(
    board: Board,
    style: Style,
    *,
    game: int | None = None,
    time_ms: int | None = None,
    paused: bool = False,
    score: int | None = None,
    status: bool = True,
    offline: bool = False,
) -> str:
    """The whole screen for a position: header, columns, stock and status line.

    ``status=False`` leaves the status line out (the line editor's status bar,
    redrawn every second, shows it instead of a copy that would go stale).
    """
    extras = _extras(board, style)
    top = len(_header(board, game, style.width))
    shown = render_status(board, time_ms, paused, score, style.width, offline=offline)
    bottom = len(shown.splitlines()) if status else 0
    used = RESERVED_ROWS + top + len(extras) + bottom
    body = _body(board, style, None if style.height is None else style.height - used)
    header = [style.paint(BOLD, line) for line in _header(board, game, style.width)]
    lines = [*header, *body, *extras]
    if status:
        status_text = render_status(board, time_ms, paused, score, style.width, offline=offline)
        lines += [style.paint(DIM, line) for line in status_text.splitlines()]
    return "\n".join(lines)


def _where(place: Any) -> str:
    return _("where.reserve") if place == "reserve" else _("where.column", column=place)


def describe_event(
    event: dict[str, Any], *, undoable: bool = True, lost: bool = False
) -> str | None:
    """One line about an event, or None for those the board shows by itself.

    ``undoable``: whether undo can take anything back now (a hint's advice)."""
    kind = event.get("type")
    if kind == "moved":
        count = int(event["count"])
        fields = {
            "card": card_text(event["card"]),
            "count": count,
            "source": _where(event["from"]),
            "target": _where(event["to"]),
        }
        if count > 1:
            return ngettext("event.moved_group", count, **fields)
        return _("event.moved", **fields)
    if kind == "flipped":
        return _("event.flipped", card=card_text(event["card"]), column=event["column"])
    if kind == "dealt":
        return _("event.dealt", cards=" ".join(card_text(card) for card in event["cards"]))
    if kind == "suit_removed":
        suit = SUITS.get(event["suit"], event["suit"])
        return _("event.suit_removed", suit=suit, column=event["column"])
    if kind == "undone":
        return _("event.undone")
    if kind == "restarted":
        return _("event.restarted")
    if kind == "stuck":
        return _("event.stuck")
    if kind == "lost_position" and event.get("from_deal"):
        return _("event.lost_from_deal")
    if kind == "lost_position":
        return _("event.lost_position")
    if kind == "game_lost":
        return _("event.game_lost", reason=_(f"lost.{event.get('reason', 'resigned')}"))
    if kind == "hint":
        return render_hint(event, undoable=undoable, lost=lost)
    if kind == "won":
        return _("event.won")
    return None


def render_hint(hint: dict[str, Any], *, undoable: bool = True, lost: bool = False) -> str:
    """A hint's line; with nothing to undo (at the deal), a lost position is the deal's.
    In a position proved ``lost`` the server still names a move (it plays on): said so."""
    action = hint.get("action")
    if action in ("move", "deal"):
        line = (
            _("hint.move", card=card_text(str(hint.get("card"))), column=hint.get("to"))
            if action == "move"
            else _("hint.deal")
        )
        if lost:
            line += _("hint.lost_suffix" if undoable else "hint.lost_deal_suffix")
        return line
    if hint.get("reason") == "lost":
        return _("hint.none_lost" if undoable else "hint.none_lost_deal")
    if hint.get("reason") == "seen":
        return _("hint.none_seen")
    return _("hint.none")


def render_results(won: dict[str, Any], width: int | None = None) -> str:
    """The results screen after a win, with the level's statistics when sent
    (as ``render_stats`` draws them in ``width`` columns)."""
    rows = [
        [_("results.moves"), str(won.get("moves", 0))],
        [_("results.time"), time_text(int(won.get("time_ms", 0)))],
        [_("results.score"), str(won.get("score", 0))],
        [_("results.suits"), str(won.get("suits", 4))],
        [_("results.hints"), str(won.get("hints", 0))],
        [_("results.undos"), str(won.get("undos", 0))],
    ]
    label_width = max(len(label) for label, _value in rows)
    lines = [_("results.title"), *(f"{label.ljust(label_width)}  {value}" for label, value in rows)]
    stats = won.get("stats")
    if isinstance(stats, dict):
        lines += ["", render_stats([stats], width)]
    return "\n".join(lines)


def _opt(value: Any, fmt: str = "{}") -> str:
    return "-" if value is None else fmt.format(value)


def _table(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    out = []
    for row in [header, *rows]:
        cells = [
            cell.ljust(w) if i == 0 else cell.rjust(w)
            for i, (cell, w) in enumerate(zip(row, widths, strict=True))
        ]
        out.append("  ".join(cells).rstrip())
    return "\n".join(out)


def _level_rank(row: dict[str, Any]) -> int:
    level = str(row.get("level"))
    return LEVEL_ORDER.index(level) if level in LEVEL_ORDER else len(LEVEL_ORDER)


def render_stats(rows: list[dict[str, Any]], width: int | None = None) -> str:
    """The per-level table in the levels' own order (easiest first); wider than
    ``width`` columns (a terminal's), one block of lines per level instead."""
    if not rows:
        return _("stats.none")
    header = [
        _("stats.level"),
        _("stats.games"),
        _("stats.wins"),
        _("stats.losses"),
        _("stats.win_rate"),
        _("stats.streak"),
        _("stats.best_streak"),
        _("stats.best_score"),
        _("stats.fastest"),
        _("stats.fewest_moves"),
    ]
    body = [
        [
            level_name(str(row["level"]))
            + (" " + _("stats.winnable") if row.get("winnable") else ""),
            str(row["games"]),
            str(row["wins"]),
            str(row["losses"]),
            percent(float(row["win_rate"])) if row["games"] else "-",  # as best score's
            str(row["current_streak"]),
            str(row["best_streak"]),
            _opt(row.get("best_score")),
            "-" if row.get("fastest_win_ms") is None else time_text(int(row["fastest_win_ms"])),
            _opt(row.get("fewest_moves")),
        ]
        for row in sorted(rows, key=_level_rank)
    ]
    return _fitted(header, body, width, lambda row: row[0])


def render_games(
    games: list[dict[str, Any]], status: str | None = None, width: int | None = None
) -> str:
    """The player's games, newest first (those of ``status`` only, if given); wider
    than ``width`` columns, one block of lines per game."""
    if not games:
        if status is not None:
            return _("games.none_with", status=_(f"status.{status}"))
        return _("games.none")
    header = [
        _("games.game"),
        _("stats.level"),
        _("games.status"),
        _("results.moves"),
        _("results.score"),
        _("results.time"),
        _("games.deal"),
        _("games.updated"),
    ]
    body = [
        [
            str(game["game"]),
            level_name(str(game["level"])),
            _(f"status.{game['status']}"),
            str(game["moves"]),
            str(game["score"]),
            time_text(int(game["time_ms"])),
            _opt(game.get("deal")),
            local_time(game.get("updated", "")),
        ]
        for game in games
    ]
    return _fitted(header, body, width, lambda row: f"{header[0]} {row[0]}")


def local_time(stamp: object) -> str:
    """A time on the wire (ISO 8601, UTC) in the terminal's own time zone (``TZ``), to
    the second: ``2026-12-07 04:00:13``. What does not read as one is shown as sent."""
    try:
        moment = datetime.fromisoformat(str(stamp))
    except ValueError:
        return str(stamp)[:19].replace("T", " ")
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    with contextlib.suppress(OverflowError, OSError, ValueError):  # past the calendar's ends
        moment = moment.astimezone()
    return f"{moment:%Y-%m-%d %H:%M:%S}".zfill(19)


def _fitted(
    header: list[str], body: list[list[str]], width: int | None, title: Callable[[list[str]], str]
) -> str:
    """The table, or wider than ``width`` columns (a terminal's), one block of lines
    per row under its ``title``: each other cell beside its column's name."""
    table = _table(header, body)
    if width is None or max(len(line) for line in table.splitlines()) <= width:
        return table
    label_width = max(len(label) for label in header[1:])
    blocks = [
        "\n".join(
            [
                title(row),
                *(
                    f"  {label.ljust(label_width)}  {cell}"
                    for label, cell in zip(header[1:], row[1:], strict=True)
                ),
            ]
        )
        for row in body
    ]
    return "\n\n".join(blocks)
