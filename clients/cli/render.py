"""Text for the terminal: the board, events, results, stats and game lists.

Everything here is a pure function of its arguments (no I/O, no clock), so
golden tests can pin it. ``Style`` says whether to use ANSI colours and how
wide the terminal is; a board too wide for it is drawn one line per column.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from clients.cli.board import UNKNOWN, Board

__all__ = [
    "Style",
    "card_text",
    "describe_event",
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
CELL = 5  # "10♥" plus spacing
RESET = "\x1b[0m"
RED_CARD = "\x1b[31;47m"
BLACK_CARD = "\x1b[30;47m"
BACK = "\x1b[37;44m"
DIM = "\x1b[2m"
BOLD = "\x1b[1m"


@dataclass(frozen=True)
class Style:
    """How to draw: ANSI colours or not, and the terminal's width in columns."""

    color: bool = False
    width: int = 80

    def paint(self, code: str, text: str) -> str:
        return f"{code}{text}{RESET}" if self.color else text


def card_text(card: str) -> str:
    """``TH`` -> ``10♥``; an unknown card stays ``??``."""
    if card == UNKNOWN or len(card) != 2:
        return card
    rank = "10" if card[0] == "T" else card[0]
    return rank + SUITS.get(card[1], card[1])


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


def render_status(board: Board, time_ms: int | None = None, paused: bool = False) -> str:
    ms = board.time_ms if time_ms is None else time_ms
    parts = [
        f"level {board.level}",
        f"moves {board.moves}",
        f"time {time_text(ms)}",
        f"score {board.score_at(ms)}",
    ]
    if board.undos or board.hints:
        parts.append(f"undos {board.undos} · hints {board.hints}")
    if paused:
        parts.append("PAUSED")
    return " · ".join(parts)


def _header(board: Board, game: int | None) -> str:
    deal = "deal ?" if board.deal is None else f"deal {board.deal}"
    name = f"game {game} · " if game is not None else ""
    return f"Scorpion · {name}{board.level} · {deal}"


def _extras(board: Board, style: Style) -> list[str]:
    removed = " ".join(_suit(suit, style) for suit in board.removed)
    lines = [f"stock: {board.stock}   removed: {removed or '-'}"]
    if board.reserve:
        lines.append("reserve: " + " ".join(_card(card, style) for card in board.reserve))
    if board.won:
        lines.append("*** won ***")
    elif board.lost:
        lines.append(f"*** lost ({board.lost}) ***")
    elif board.stuck:
        lines.append("dead end: no useful move is left (u undo, r restart, n new game)")
    elif board.lost_position:
        lines.append("this position can no longer be won (u undo, r restart, n new game)")
    return lines


def _wide(board: Board, style: Style) -> list[str]:
    count = len(board.columns)
    lines = ["".join(_cell(str(i), CELL, str(i)) for i in range(1, count + 1))]
    stacks: list[list[tuple[str, str]]] = []
    for column in board.columns:
        stack = [("##", _back(style))] * column.down
        stack += [(card_text(card), _card(card, style)) for card in column.cards]
        stacks.append(stack)
    depth = max((len(stack) for stack in stacks), default=0)
    for row in range(depth):
        cells = []
        for stack in stacks:
            visible, painted = stack[row] if row < len(stack) else ("", "")
            cells.append(_cell(visible, CELL, painted))
        lines.append("".join(cells).rstrip())
    if depth == 0:
        lines.append("".join(_cell("·", CELL, "·") for _ in board.columns))
    return lines


def _narrow(board: Board, style: Style) -> list[str]:
    """One line per column, wrapped (indented) where the terminal is narrower still."""
    lines = []
    for number, column in enumerate(board.columns, 1):
        items = [("##", _back(style))] * column.down
        items += [(card_text(card), _card(card, style)) for card in column.cards]
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


def render_board(
    board: Board,
    style: Style,
    *,
    game: int | None = None,
    time_ms: int | None = None,
    paused: bool = False,
) -> str:
    """The whole screen for a position: header, columns, stock and status line."""
    wide = len(board.columns) * CELL + 1 <= style.width
    body = _wide(board, style) if wide else _narrow(board, style)
    lines = [style.paint(BOLD, _header(board, game)), *body, *_extras(board, style)]
    lines.append(style.paint(DIM, render_status(board, time_ms, paused)))
    return "\n".join(lines)


def _where(place: Any) -> str:
    return "the reserve" if place == "reserve" else f"column {place}"


def describe_event(event: dict[str, Any]) -> str | None:
    """One line about an event, or None for those the board shows by itself."""
    kind = event.get("type")
    if kind == "moved":
        count = int(event["count"])
        group = f" ({count} cards)" if count > 1 else ""
        places = f"from {_where(event['from'])} to {_where(event['to'])}"
        return f"moved {card_text(event['card'])}{group} {places}"
    if kind == "flipped":
        return f"flipped {card_text(event['card'])} in column {event['column']}"
    if kind == "dealt":
        return "dealt " + " ".join(card_text(card) for card in event["cards"])
    if kind == "suit_removed":
        return f"removed {SUITS.get(event['suit'], event['suit'])} from column {event['column']}"
    if kind == "undone":
        return f"undone: {event.get('action', 'move')}"
    if kind == "restarted":
        return "restarted from the deal"
    if kind == "stuck":
        return "dead end: no useful move is left. Try u (undo), r (restart) or n (new game)."
    if kind == "lost_position":
        return "this position can no longer be won: u (undo), r (restart) or n (new game)."
    if kind == "game_lost":
        return f"the game is lost ({event.get('reason', 'resigned')})"
    if kind == "hint":
        return render_hint(event)
    if kind == "won":
        return "won!"
    return None


def render_hint(hint: dict[str, Any]) -> str:
    action = hint.get("action")
    if action == "move":
        return f"hint: move {card_text(str(hint.get('card')))} to column {hint.get('to')}"
    if action == "deal":
        return "hint: deal the stock (d)"
    return "hint: no useful move is left"


def render_results(won: dict[str, Any]) -> str:
    """The results screen after a win, with the level's statistics when sent."""
    lines = [
        "=== You won! ===",
        f"moves  {won.get('moves', 0)}",
        f"time   {time_text(int(won.get('time_ms', 0)))}",
        f"score  {won.get('score', 0)}",
        f"suits  {won.get('suits', 4)}",
        f"hints  {won.get('hints', 0)}",
        f"undos  {won.get('undos', 0)}",
    ]
    stats = won.get("stats")
    if isinstance(stats, dict):
        lines += ["", render_stats([stats])]
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


def render_stats(rows: list[dict[str, Any]]) -> str:
    """The per-level table: games, wins, losses, win rate, streaks, best score, fastest win."""
    if not rows:
        return "no finished games yet"
    header = ["level", "games", "wins", "losses", "win%", "streak", "best", "best score", "fastest"]
    body = [
        [
            str(row["level"]),
            str(row["games"]),
            str(row["wins"]),
            str(row["losses"]),
            f"{100 * float(row['win_rate']):.0f}%",
            str(row["current_streak"]),
            str(row["best_streak"]),
            _opt(row.get("best_score")),
            "-" if row.get("fastest_win_ms") is None else time_text(int(row["fastest_win_ms"])),
        ]
        for row in rows
    ]
    return _table(header, body)


def render_games(games: list[dict[str, Any]]) -> str:
    """The player's games, newest first."""
    if not games:
        return "no games yet"
    header = ["game", "level", "status", "moves", "score", "time", "deal", "updated"]
    body = [
        [
            str(game["game"]),
            str(game["level"]),
            str(game["status"]),
            str(game["moves"]),
            str(game["score"]),
            time_text(int(game["time_ms"])),
            _opt(game.get("deal")),
            str(game.get("updated", ""))[:19].replace("T", " "),
        ]
        for game in games
    ]
    return _table(header, body)
