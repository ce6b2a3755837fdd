"""The in-game command language: short and forgiving.

``parse`` turns one line into a ``Command``: a card alone (``4h``, ``4♥``,
``10h``, ``TH``) is an auto-move, a card and a column (``4h 7``) a move
there; ``d`` deal, ``u`` undo, ``r`` restart, ``h`` hint, ``p`` pause or
resume, ``n [level] [deal]`` new game, ``s`` stats, ``b`` board, ``g``
games, ``resign``, ``i`` the guide, ``?`` help, ``q`` quit. Longer words
(``deal``, ``undo``, ``hint``...) work too. The destructive commands
(``r``, ``resign``, ``n`` while a game is unfinished) ask first; a ``!``
after them (``r!``, ``resign!``, ``n!``) skips the question.
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass
from typing import Final

from clients.cli.i18n import _
from protocol import LEVELS
from protocol.constants import INT32_MAX, MAX_DEAL

__all__ = [
    "COMMAND_WORDS",
    "Command",
    "CommandError",
    "digits",
    "help_text",
    "number",
    "parse",
    "parse_card",
]

# a suit symbol may carry its text or emoji presentation selector (``4♥️``, from a phone)
# (re.ASCII: case folded as ASCII only, where the Kelvin sign K would match k)
_CARD = re.compile(
    r"^(10|[2-9atjqk])(?:([shdc])|([♠♥♦♣♤♡♢♧])[\ufe0e\ufe0f]?)$", re.IGNORECASE | re.ASCII
)
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
    "p": "pause_or_resume",
    "pause": "pause",
    "resume": "resume",
    "s": "stats",
    "stats": "stats",
    "b": "board",
    "board": "board",
    "g": "games",
    "games": "games",
    "resign": "resign",
    "i": "guide",
    "guide": "guide",
    "rules": "guide",
    "?": "help",
    "help": "help",
    "q": "quit",
    "quit": "quit",
    "exit": "quit",
}
_FORCEABLE = frozenset({"restart", "resign"})
COMMAND_WORDS: tuple[str, ...] = (*_WORDS, "n", "new", "n!", "r!", "resign!")


HELP_ROOM = 24
"""The fewest columns the help's words get beside its commands: fewer, and they go
under each (a column of a character or two was one character a line)."""


def _wrapped(text: str, width: int, indent: str = "") -> list[str]:
    """``text`` in lines of ``width``, each after ``indent``; a word longer than the line
    goes whole onto a line of its own ("three-blind-mice" too)."""
    return textwrap.wrap(
        text,
        width,
        initial_indent=indent,
        subsequent_indent=" " * len(indent),
        break_long_words=False,
        break_on_hyphens=False,
    )


def help_text(width: int = 80) -> str:
    """The command list in the current language, wrapped to ``width`` columns."""
    rows = [
        ("4h, 4♥, 10h", "help.move"),
        ("4h 7", "help.move_to"),
        ("d", "help.deal"),
        ("u", "help.undo"),
        ("r", "help.restart"),
        ("h", "help.hint"),
        ("p", "help.pause"),
        (_("help.new_syntax"), "help.new"),
        ("resign", "help.resign"),
        ("s / g / b", "help.lists"),
        ("i", "help.guide"),
        ("?", "help.help"),
        ("q", "help.quit"),
    ]
    left_width = max(len(left) for left, _key in rows)
    lines = [_("help.title")]
    wrap = max(20, width - 1)
    # beside the commands when there is room for the words, else under each command
    beside = wrap - (left_width + 4) >= HELP_ROOM
    for left, key in rows:
        prefix = f"  {left.ljust(left_width)}  " if beside else "    "
        if not beside:
            lines += _wrapped(left, wrap, "  ")
        lines += _wrapped(_(key), wrap, prefix)
    lines += _wrapped(_("help.levels", levels=", ".join(LEVELS)), wrap)
    return "\n".join(lines)


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
    deal: int | None = None


def parse_card(text: str) -> str | None:
    """The canonical two-character card (``TH``) for a spelling R2 allows, else None."""
    match = _CARD.match(text.strip())
    if match is None:
        return None
    rank, suit = match.group(1).upper(), match.group(2) or match.group(3)
    return ("T" if rank == "10" else rank) + _SUIT.get(suit, suit.upper())


def digits(text: str) -> bool:
    """``text`` is ASCII digits (``str.isdigit`` passes ``²`` and ``①``, which ``int`` refuses)."""
    return text.isascii() and text.isdigit()


def number(text: str, limit: int) -> int | None:
    """The number 1..limit that ``text`` spells in ASCII digits, else None."""
    if not digits(text):
        return None
    significant = text.lstrip("0")
    if len(significant) > len(str(limit)):  # too big (and maybe too long for ``int``)
        return None
    value = int(significant or "0")
    return value if 1 <= value <= limit else None


def parse_deal(text: str) -> int:
    """A deal number 1..MAX_DEAL; CommandError naming the bad text otherwise."""
    deal = number(text, MAX_DEAL)
    if deal is None:
        raise CommandError(_("command.bad_deal", deal=_quoted(text), limit=MAX_DEAL))
    return deal


def _new(words: list[str], force: bool) -> Command:
    if len(words) > 3:
        raise CommandError(_("command.usage_new"))
    level = deal = None
    for word in words[1:]:
        if word.lower() in LEVELS:
            if level is not None:  # two levels
                raise CommandError(_("command.usage_new"))
            level = word.lower()
        elif digits(word):
            if deal is not None:  # two deals
                raise CommandError(_("command.usage_new"))
            deal = parse_deal(word)
        elif word.lstrip("-").isdigit() or level is not None:  # a number, or after a level
            raise CommandError(_("command.bad_deal", deal=_quoted(word), limit=MAX_DEAL))
        else:
            raise CommandError(
                _("command.bad_level", level=_quoted(word), levels=", ".join(LEVELS))
            )
    return Command("new", level=level, force=force, deal=deal)


QUOTED_CHARS: Final = 40
"""How much of what was typed a refusal quotes: a line may be 65,536 characters."""


def _quoted(typed: str) -> str:
    """``typed`` as a refusal quotes it: its first ``QUOTED_CHARS`` characters, at most."""
    return typed if len(typed) <= QUOTED_CHARS else typed[: QUOTED_CHARS - 1] + "…"


NEW_GAME_WORDS: Final = ("n", "new", "n!", "new!")


def asks_new_game(line: str) -> bool:
    """Whether ``line`` is an ``n`` command, one ``parse`` takes or refuses."""
    words = line.strip().split()
    return bool(words) and words[0].lower() in NEW_GAME_WORDS


def parse(line: str) -> Command | None:
    """The command on ``line``; None for an empty line. Raises CommandError."""
    words = line.strip().split()
    if not words:
        return None
    head = words[0].lower()
    if head in NEW_GAME_WORDS:
        return _new(words, head.endswith("!"))
    card = parse_card(words[0])
    if card is not None and not (len(words) == 1 and head in _WORDS):
        if len(words) == 1:
            return Command("move", card=card)
        if len(words) == 2 and digits(words[1]):
            to = number(words[1], INT32_MAX)  # the wire's range: the server says which exist
            if to is None:
                raise CommandError(_("command.bad_column", column=_quoted(words[1])))
            return Command("move", card=card, to=to)
        raise CommandError(_("command.usage_move", card=_quoted(words[0])))
    force = head.endswith("!") and head[:-1] in _WORDS and _WORDS[head[:-1]] in _FORCEABLE
    word = head[:-1] if force else head
    if word in _WORDS and len(words) == 1:
        return Command(_WORDS[word], force=force)
    raise CommandError(_("command.unknown", line=_quoted(line.strip())))
