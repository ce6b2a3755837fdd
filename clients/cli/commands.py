"""The in-game command language: short and forgiving.

``parse`` turns one line into a ``Command``: a card alone (``4h``, ``4♥``,
``10h``, ``TH``) is an auto-move, a card and a column (``4h 7``) a move
there; ``d`` deal, ``u`` undo, ``r`` restart, ``h`` hint, ``p`` pause or
resume, ``n [level]`` new game (``n!`` without asking), ``s`` stats, ``b``
board, ``g`` games, ``resign``, ``?`` help, ``q`` quit. Longer words
(``deal``, ``undo``, ``hint``...) work too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from protocol import LEVELS

__all__ = ["HELP", "Command", "CommandError", "parse", "parse_card"]

_CARD = re.compile(r"^(10|[2-9atjqk])([shdc♠♥♦♣♤♡♢♧])$", re.IGNORECASE)
_SUIT = {"♠": "S", "♤": "S", "♥": "H", "♡": "H", "♦": "D", "♢": "D", "♣": "C", "♧": "C"}

_WORDS = {
    "d": "deal",
    "deal": "deal",
    "u": "undo",
    "undo": "undo",
    "r": "restart",
    "restart": "restart",
    "h": "hint",
    "hint": "hint",
    "p": "pause",
    "pause": "pause",
    "resume": "pause",
    "s": "stats",
    "stats": "stats",
    "b": "board",
    "board": "board",
    "g": "games",
    "games": "games",
    "resign": "resign",
    "?": "help",
    "help": "help",
    "q": "quit",
    "quit": "quit",
    "exit": "quit",
}

HELP = """\
commands:
  4h, 4♥, 10h    move a card where it fits (auto-move)
  4h 7           move a card (with what lies on it) to column 7
  d              deal the stock onto columns 1-3
  u / r          undo / restart from the deal
  h              hint: which card to move where
  p              pause or resume the clock
  n [level]      new game (an unfinished game counts as a loss; n! skips the question)
  resign         give the game up
  s / g / b      statistics / your games / show the board
  ?              this help
  q              quit (the game stays open; `scorpion play` continues it)
levels: """ + ", ".join(LEVELS)


class CommandError(ValueError):
    """A line that is not a command; the message says why."""


@dataclass(frozen=True)
class Command:
    """A parsed line: ``kind`` is move, deal, undo, restart, hint, pause, new..."""

    kind: str
    card: str | None = None
    to: int | None = None
    level: str | None = None
    force: bool = False


def parse_card(text: str) -> str | None:
    """The canonical two-character card (``TH``) for a spelling R2 allows, else None."""
    match = _CARD.match(text.strip())
    if match is None:
        return None
    rank, suit = match.group(1).upper(), match.group(2)
    return ("T" if rank == "10" else rank) + _SUIT.get(suit, suit.upper())


def parse(line: str) -> Command | None:
    """The command on ``line``; None for an empty line. Raises CommandError."""
    words = line.strip().split()
    if not words:
        return None
    head = words[0].lower()
    if head in ("n", "new", "n!", "new!"):
        if len(words) > 2:
            raise CommandError("usage: n [level]")
        level = words[1].lower() if len(words) == 2 else None
        if level is not None and level not in LEVELS:
            raise CommandError(f"unknown level {level!r}; levels: {', '.join(LEVELS)}")
        return Command("new", level=level, force=head.endswith("!"))
    card = parse_card(words[0])
    if card is not None and not (len(words) == 1 and head in _WORDS):
        if len(words) == 1:
            return Command("move", card=card)
        if len(words) == 2 and words[1].isdigit():
            return Command("move", card=card, to=int(words[1]))
        raise CommandError(f"usage: {words[0]} [column]")
    if head in _WORDS and len(words) == 1:
        return Command(_WORDS[head])
    raise CommandError(f"unknown command {line.strip()!r} (? for help)")
