"""Cards and their notation (rules R1-R2).

A card is a plain ``int`` from 0 to 51: ``suit * 13 + (rank - 1)``, with suits in
the order spades, hearts, diamonds, clubs (``SUITS``) and ranks from ace = 1 to
king = 13. Plain integers keep the solver's hot loops fast; this module is the
only place that knows the encoding's text form.

The encoding has one property the rules lean on: under same-suit building the
card that may go onto ``c`` is ``c - 1``, unless ``c`` is an ace (R8).

``parse_card`` is the checked entry point for text from outside (replays, the
wire, the CLI); ``card_str`` prints the canonical two characters (R2).
"""

from __future__ import annotations

__all__ = [
    "ACE",
    "KING",
    "RANKS",
    "SUITS",
    "Card",
    "CardParseError",
    "card_str",
    "make_card",
    "parse_card",
    "rank_of",
    "suit_of",
]

Card = int

SUITS = "SHDC"
RANKS = "A23456789TJQK"
ACE = 1
KING = 13

_SUIT_ALIASES = {
    "S": 0,
    "H": 1,
    "D": 2,
    "C": 3,
    "♠": 0,
    "♥": 1,
    "♦": 2,
    "♣": 3,
    "♤": 0,
    "♡": 1,
    "♢": 2,
    "♧": 3,
}
# After a suit symbol: its text (U+FE0E) or emoji (U+FE0F) form, which phones' emoji
# keyboards add (``4♥️``). Taken for the symbol alone, and only after one.
_PRESENTATION = "\ufe0e\ufe0f"
_SYMBOLS = "♠♥♦♣♤♡♢♧"
_RANK_ALIASES = {name: value for value, name in enumerate(RANKS, start=1)}
_RANK_ALIASES["10"] = 10

_NAMES = tuple(rank + suit for suit in SUITS for rank in RANKS)


class CardParseError(ValueError):
    """Text that names no card; the message quotes the text."""


def make_card(rank: int, suit: int) -> Card:
    """The card of ``rank`` (1..13) and ``suit`` (index into SUITS)."""
    return suit * 13 + rank - 1


def rank_of(card: Card) -> int:
    """1 for an ace ... 13 for a king."""
    return card % 13 + 1


def suit_of(card: Card) -> int:
    """Index into SUITS."""
    return card // 13


def card_str(card: Card) -> str:
    """Canonical notation (R2): rank then suit, two characters, e.g. ``TH``."""
    return _NAMES[card]


def parse_card(text: str) -> Card:
    """Parse any spelling R2 allows: ``AS``, ``th``, ``10h``, ``4♥``, and no other (no
    surrounding spaces: the wire reads requests strictly; a typed line is trimmed by
    its reader)."""
    card = _CANONICAL.get(text) if isinstance(text, str) else None
    if card is not None:  # the common case, and every stored log's: looked up at once
        return card
    if not isinstance(text, str):
        raise CardParseError(f"a card must be text, not {type(text).__name__}")
    cleaned = text
    if len(cleaned) > 2 and cleaned[-1] in _PRESENTATION and cleaned[-2] in _SYMBOLS:
        cleaned = cleaned[:-1]
    if not all(char.isascii() or char in _SYMBOLS for char in cleaned):
        raise CardParseError(f"not a card: {_quoted(text)}")  # upper() makes "Aſ" (long s) "AS"
    cleaned = cleaned.upper()
    rank = _RANK_ALIASES.get(cleaned[:-1])
    suit = _SUIT_ALIASES.get(cleaned[-1:])
    if rank is None or suit is None:
        raise CardParseError(f"not a card: {_quoted(text)}")
    return make_card(rank, suit)


def _quoted(text: str, most: int = 20) -> str:
    """``text`` quoted for a message, cut after ``most`` characters (a replay file's
    card of ten million characters made a line of ten megabytes)."""
    return repr(text) if len(text) <= most else f"{text[:most]!r}... ({len(text):,} characters)"


_CANONICAL: dict[str, Card] = {name: card for card, name in enumerate(_NAMES)}
