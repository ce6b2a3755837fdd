"""Reproducible deals (rule R6): PySolFC's shuffle and dealing order.

Deal number ``N`` of a layout is the deal PySolFC shows as game number ``N`` of
"Scorpion" (PySolFC game id 29) or "Three Blind Mice" (game id 305). The whole
algorithm is described step by step, with a worked example, in ``docs/deals.md``;
this module follows that page. In short:

1. Start from PySolFC's unshuffled deck: clubs, spades, hearts, diamonds (PySolFC's
   suit order), ace to king within each suit.
2. Deal numbers below 32000 use the Microsoft C runtime ``rand()`` LCG seeded with
   the number, after first re-arranging the deck into Windows FreeCell's order
   (by rank, and within a rank clubs, diamonds, hearts, spades). Numbers from 32000
   up use the MT19937 Mersenne Twister seeded the way CPython seeds it from an int
   (``init_by_array`` on the number's 32-bit words), drawing 53-bit doubles.
3. Shuffle: for ``n`` from 51 down to 1, draw ``j`` in ``0..n`` and swap positions
   ``n`` and ``j``. The LCG draws ``j = rand() % (n + 1)``; the twister draws
   ``j = int(random() * (n + 1))``.
4. The shuffled list is PySolFC's talon, bottom card first, so cards are dealt from
   its end: ``pysol_order`` is the shuffled list reversed.
5. Each layout deals that order row by row, left to right (see ``deal_layout``).

The LCG is written out here. The twister is CPython's ``random.Random``, whose
stream for an int seed Python guarantees across versions; the shuffle loop is
ours, since ``random.shuffle``'s is not guaranteed. So the result does not depend
on any library's shuffle or on the Python version.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Final

from engine.cards import Card, make_card

__all__ = [
    "LAYOUTS",
    "MAX_DEAL",
    "Deal",
    "DealNumberError",
    "UnknownLayoutError",
    "deal_layout",
    "pysol_order",
]

MAX_DEAL: Final[int] = 10**20
"""The largest deal number: PySolFC's ``MAX_SEED`` (10**20), the largest game number
it draws at random or reaches with "next game" before wrapping back to 0. PySolFC
also knows game 0 (an LCG deal); deal numbers here start at 1."""

LAYOUTS: Final = ("scorpion", "three-blind-mice")

# Below this deal number PySolFC uses the LCG, from it up the Mersenne Twister
# (pysollib/pysolrandom.py, constructRandom: ``0 <= seed < 32000``).
_LCG_LIMIT: Final = 32000

# PySolFC's suit order is clubs, spades, hearts, diamonds (index 0..3). Our suit
# index (engine.cards.SUITS = "SHDC") for each PySolFC suit index:
_OUR_SUIT_OF_PYSOL_SUIT: Final = (3, 0, 1, 2)

# The unshuffled deck as PySolFC creates it, in our encoding.
_PYSOL_DECK: Final[tuple[Card, ...]] = tuple(
    make_card(rank, _OUR_SUIT_OF_PYSOL_SUIT[pysol_suit])
    for pysol_suit in range(4)
    for rank in range(1, 14)
)

# The same deck re-arranged for the LCG: position 4 * r + k holds the card of rank
# r + 1 of PySolFC suit (0, 3, 2, 1)[k], i.e. clubs, diamonds, hearts, spades.
_LCG_DECK: Final[tuple[Card, ...]] = tuple(
    _PYSOL_DECK[rank0 + 13 * pysol_suit] for rank0 in range(13) for pysol_suit in (0, 3, 2, 1)
)

_MASK32: Final = 0xFFFFFFFF


class DealNumberError(ValueError):
    """A deal number that is not an int in 1..MAX_DEAL; the message names it."""


class UnknownLayoutError(ValueError):
    """A layout name not in LAYOUTS; the message names it."""


@dataclass(frozen=True, slots=True)
class Deal:
    """A dealt layout (R4/R5).

    ``columns`` holds each column bottom to top (column 1 first). The bottom
    ``face_down[i]`` cards of column ``i + 1`` are face down, the rest face up.
    ``stock`` is the undealt stock in dealing order: ``stock[0]`` goes onto column 1,
    ``stock[1]`` onto column 2, ``stock[2]`` onto column 3 (empty for
    three-blind-mice). ``reserve`` holds three-blind-mice's two face-up reserve
    cards, reserve 1 first (empty for scorpion).
    """

    columns: tuple[tuple[int, ...], ...]
    face_down: tuple[int, ...]
    stock: tuple[int, ...]
    reserve: tuple[int, ...]


def _check_number(number: object) -> int:
    if isinstance(number, bool) or not isinstance(number, int):
        raise DealNumberError(f"deal number {number!r} is not an integer")
    if not 1 <= number <= MAX_DEAL:
        raise DealNumberError(f"deal number {number} is outside 1..{MAX_DEAL}")
    return number


def _lcg_shuffle(number: int) -> list[Card]:
    """The Microsoft LCG shuffle of the FreeCell-ordered deck (numbers < 32000)."""
    cards = list(_LCG_DECK)
    state = number
    for n in range(len(cards) - 1, 0, -1):
        # PySolFC keeps 33 bits of state; the output bits 16..30 depend only on the
        # low 31 bits, so 32 bits (the C runtime's unsigned int) give the same draws.
        state = (state * 214013 + 2531011) & _MASK32
        j = ((state >> 16) & 0x7FFF) % (n + 1)
        cards[n], cards[j] = cards[j], cards[n]
    return cards


def _mt_shuffle(number: int) -> list[Card]:
    """The Mersenne Twister shuffle of PySolFC's deck (numbers >= 32000).

    The generator is CPython's ``random.Random`` seeded with the number, as PySolFC
    seeds its own: Python guarantees the stream of ``random()`` for an int seed
    across versions (the ``random`` module's "Notes on Reproducibility").
    docs/deals.md section 4 writes the generator out, and the tests hold
    ``random.Random`` to that; written out in Python here, it took 430 us a deal
    against 11 us for the classic deals' LCG, and the server draws nearly all its
    deals from this range. The shuffle is ours: ``random.shuffle`` carries no such
    guarantee.
    """
    cards = list(_PYSOL_DECK)
    draw = random.Random(number).random
    for n in range(len(cards) - 1, 0, -1):
        # IEEE-754 double product, truncated: exactly what PySolFC computes.
        j = int(draw() * (n + 1))
        cards[n], cards[j] = cards[j], cards[n]
    return cards


def pysol_order(number: int) -> list[int]:
    """The 52 cards of deal ``number`` in the order PySolFC's talon deals them.

    Index 0 is the first card dealt (the top of PySolFC's shuffled talon), index 51
    the last. Raises DealNumberError unless ``number`` is an int in 1..MAX_DEAL.
    """
    number = _check_number(number)
    shuffled = _lcg_shuffle(number) if number < _LCG_LIMIT else _mt_shuffle(number)
    shuffled.reverse()
    return shuffled


def _deal_rows(order: list[Card], ncolumns: int, nrows: int) -> tuple[tuple[int, ...], ...]:
    """Deal ``nrows`` rounds of one card to each column, left to right: column ``col``
    gets every ``ncolumns``-th card from ``order[col]`` on (a slice: a generator per
    column took 5 times as long, and every game and rebuild lays out its deal)."""
    dealt = ncolumns * nrows
    return tuple(tuple(order[col:dealt:ncolumns]) for col in range(ncolumns))


def deal_layout(layout: str, number: int) -> Deal:
    """Deal ``number`` of ``layout`` (one of LAYOUTS), as PySolFC deals it.

    scorpion (PySolFC ``Scorpion.startGame``): 7 rounds, each one card to columns
    1..7 in turn (rounds 1-3 face down on columns 1-4); the last 3 cards stay in the
    stock, next to deal onto columns 1, 2, 3.

    three-blind-mice (``ThreeBlindMice.startGame``): 5 rounds, each one card to
    columns 1..10 in turn (rounds 1-3 face down on columns 8-10); then one card to
    reserve 1 and one to reserve 2.
    """
    if layout == "scorpion":
        order = pysol_order(number)
        return Deal(
            columns=_deal_rows(order, 7, 7),
            face_down=(3, 3, 3, 3, 0, 0, 0),
            stock=tuple(order[49:]),
            reserve=(),
        )
    if layout == "three-blind-mice":
        order = pysol_order(number)
        return Deal(
            columns=_deal_rows(order, 10, 5),
            face_down=(0, 0, 0, 0, 0, 0, 0, 3, 3, 3),
            stock=(),
            reserve=tuple(order[50:]),
        )
    raise UnknownLayoutError(f"unknown layout {layout!r}; expected one of {', '.join(LAYOUTS)}")
