"""Deals (R4-R6): engine.deal against pysol_cards, golden files and the layout facts."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.cards import card_str, make_card, parse_card
from engine.deal import (
    LAYOUTS,
    MAX_DEAL,
    Deal,
    DealNumberError,
    UnknownLayoutError,
    deal_layout,
    pysol_order,
)
from tests.engine.mt19937 import MersenneTwister

GOLDEN_DIR = Path(__file__).parent / "golden" / "deals"
GOLDEN_NUMBERS = (1, 2, 31999, 32000, 123456)

# 30 large deal numbers, fixed once and for all, spread up to MAX_DEAL.
_LARGE = (
    [32000 + 10**k for k in range(1, 20)]
    + [2**32 - 1, 2**32, 2**33, 2**64 - 1, 2**64, 2**66 + 12345]
    + [MAX_DEAL - 2, MAX_DEAL - 1, MAX_DEAL]
    + [random.Random(2024).randrange(32000, MAX_DEAL + 1) for _ in range(2)]
)
CROSS_CHECK_NUMBERS = [*range(1, 121), *range(31950, 32051), *_LARGE]

# PySolFC's LCG serves game numbers below this, the Mersenne Twister the rest
# (pysollib/pysolrandom.py, constructRandom).
PYSOLFC_LCG_LIMIT = 32000


def _pysol_cards_order(number: int) -> list[int]:
    """The talon order of PySolFC game ``number``, computed with pysol_cards' parts.

    pysol_cards builds the deck as PySolFC does (suits clubs, spades, hearts,
    diamonds; ace..king), re-arranges it for the LCG and shuffles with the same
    generators. Its own ``shuffle()`` sends game 32000 to the LCG (old PySol's
    ``<= 32000``) while PySolFC sends it to the twister (``< 32000``), so the
    generator is chosen here by PySolFC's rule. The talon deals from the end of the
    shuffled list, hence the reverse.
    """
    pc_cards: Any = pytest.importorskip("pysol_cards.cards", reason="pysol-cards is not installed")
    pc_random: Any = pytest.importorskip(
        "pysol_cards.random", reason="pysol-cards is not installed"
    )
    deck = pc_cards.createCards(1)
    if number < PYSOLFC_LCG_LIMIT:
        rng = pc_random.LCRandom31()
        rng.setSeed(number)
        deck = pc_cards.ms_rearrange(deck)
    else:
        rng = pc_random.MTRandom(number)
    shuffled = list(rng.shuffle(deck))
    shuffled.reverse()
    # pysol_cards' suit index is 0 clubs, 1 spades, 2 hearts, 3 diamonds; ours is SHDC.
    return [make_card(card.rank, (card.suit + 3) % 4) for card in shuffled]


@pytest.mark.parametrize("number", CROSS_CHECK_NUMBERS)
def test_pysol_order_matches_pysol_cards(number: int) -> None:
    assert pysol_order(number) == _pysol_cards_order(number)


@pytest.mark.parametrize("number", [n for n in CROSS_CHECK_NUMBERS if n != 32000][::7])
def test_pysol_order_matches_pysol_cards_shuffle(number: int) -> None:
    """pysol_cards' own top-level shuffle agrees too, except at 32000 (see above)."""
    pc_cards: Any = pytest.importorskip("pysol_cards.cards", reason="pysol-cards is not installed")
    pc_random: Any = pytest.importorskip(
        "pysol_cards.random", reason="pysol-cards is not installed"
    )
    shuffled = pc_random.shuffle(
        pc_cards.createCards(1), number, pc_random.RandomBase.DEALS_PYSOLFC
    )
    expected = [make_card(c.rank, (c.suit + 3) % 4) for c in reversed(shuffled)]
    assert pysol_order(number) == expected


@settings(max_examples=60, deadline=None)
@given(st.integers(min_value=1, max_value=MAX_DEAL))
def test_pysol_order_matches_pysol_cards_anywhere(number: int) -> None:
    assert pysol_order(number) == _pysol_cards_order(number)


def test_deal_one_is_microsoft_freecell_deal_one() -> None:
    """PySolFC's game 1 is Windows FreeCell's game 1, whose layout is widely published:
    its rows, read left to right, are the dealing order."""
    freecell_1 = (
        "JD 2D 9H JC 5D 7H 7C 5H KD KC 9S 5S AD QC KH 3H 2S KS 9D QD JS AS AH 3C "
        "4C 5C TS QH 4H AC 4D 7S 3S TD 4S TH 8H 2C JH 7D 6D 8S 8D QS 6C 3D 8C TC "
        "6S 9C 2H 6H"
    )
    assert [card_str(c) for c in pysol_order(1)] == freecell_1.split()


@pytest.mark.parametrize("seed", [0, 1, 31999, 32000, 2**32 - 1, 2**32, 2**64 + 7, MAX_DEAL])
def test_mersenne_twister_matches_cpython(seed: int) -> None:
    """Python guarantees random.Random(int).random()'s stream across versions."""
    ours = MersenneTwister(seed)
    theirs = random.Random(seed)
    assert [ours.next_double() for _ in range(1500)] == [theirs.random() for _ in range(1500)]


@pytest.mark.parametrize("number", [n for n in CROSS_CHECK_NUMBERS if n >= 32000][::5])
def test_twister_deals_are_the_pages_shuffle(number: int) -> None:
    """docs/deals.md sections 3 and 4, followed step by step with the page's generator,
    give ``pysol_order``'s cards (without pysol-cards)."""
    twister = MersenneTwister(number)
    cards = [make_card(rank, suit) for suit in (3, 0, 1, 2) for rank in range(1, 14)]
    for n in range(51, 0, -1):
        j = int(twister.next_double() * (n + 1))
        cards[n], cards[j] = cards[j], cards[n]
    assert pysol_order(number) == cards[::-1]


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("number", [1, 2, 77, 31999, 32000, 32001, 10**9, MAX_DEAL])
def test_every_deal_holds_the_whole_deck(layout: str, number: int) -> None:
    deal = deal_layout(layout, number)
    cards = [c for column in deal.columns for c in column] + list(deal.stock + deal.reserve)
    assert sorted(cards) == list(range(52))
    assert sorted(pysol_order(number)) == list(range(52))


def test_scorpion_layout_r4() -> None:
    deal = deal_layout("scorpion", 5)
    assert [len(c) for c in deal.columns] == [7] * 7
    assert deal.face_down == (3, 3, 3, 3, 0, 0, 0)
    assert len(deal.stock) == 3
    assert deal.reserve == ()


def test_three_blind_mice_layout_r5() -> None:
    deal = deal_layout("three-blind-mice", 5)
    assert [len(c) for c in deal.columns] == [5] * 10
    assert deal.face_down == (0, 0, 0, 0, 0, 0, 0, 3, 3, 3)
    assert deal.stock == ()
    assert len(deal.reserve) == 2


@pytest.mark.parametrize("number", [3, 40000])
def test_dealing_order(number: int) -> None:
    """Row by row, left to right; then the stock (scorpion) or reserve (mice)."""
    order = pysol_order(number)
    scorpion = deal_layout("scorpion", number)
    assert scorpion.columns[0] == tuple(order[0:49:7])
    assert scorpion.columns[6] == tuple(order[6:49:7])
    assert scorpion.stock == tuple(order[49:])
    mice = deal_layout("three-blind-mice", number)
    assert mice.columns[0] == tuple(order[0:50:10])
    assert mice.columns[9] == tuple(order[9:50:10])
    assert mice.reserve == tuple(order[50:])


def test_deal_is_frozen_and_deterministic() -> None:
    deal = deal_layout("scorpion", 123)
    assert deal == deal_layout("scorpion", 123)
    assert deal != deal_layout("scorpion", 124)
    with pytest.raises(AttributeError):
        deal.stock = ()  # type: ignore[misc]


@pytest.mark.parametrize("bad", [0, -1, MAX_DEAL + 1, 10**30])
def test_out_of_range_numbers_are_rejected(bad: int) -> None:
    with pytest.raises(DealNumberError, match=str(bad)):
        pysol_order(bad)
    for layout in LAYOUTS:
        with pytest.raises(DealNumberError, match=str(bad)):
            deal_layout(layout, bad)


@pytest.mark.parametrize("bad", [1.0, "7", True, None])
def test_non_int_numbers_are_rejected(bad: object) -> None:
    with pytest.raises(DealNumberError, match="is not an integer"):
        pysol_order(bad)  # type: ignore[arg-type]


def test_deal_number_error_is_a_value_error() -> None:
    assert issubclass(DealNumberError, ValueError)
    assert MAX_DEAL == 10**20
    pysol_order(MAX_DEAL)


def test_unknown_layout() -> None:
    with pytest.raises(UnknownLayoutError, match="spider"):
        deal_layout("spider", 1)
    assert issubclass(UnknownLayoutError, ValueError)


def golden_payload(layout: str, number: int) -> dict[str, Any]:
    """The golden file's content for a deal, in canonical card names (R2)."""
    deal: Deal = deal_layout(layout, number)
    return {
        "layout": layout,
        "deal": number,
        "columns": [[card_str(c) for c in column] for column in deal.columns],
        "face_down": list(deal.face_down),
        "stock": [card_str(c) for c in deal.stock],
        "reserve": [card_str(c) for c in deal.reserve],
    }


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("number", GOLDEN_NUMBERS)
def test_golden_deals(layout: str, number: int) -> None:
    path = GOLDEN_DIR / f"{layout}-{number}.json"
    golden = json.loads(path.read_text(encoding="utf-8"))
    assert golden == golden_payload(layout, number)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("number", GOLDEN_NUMBERS)
def test_golden_deals_match_pysol_cards(layout: str, number: int) -> None:
    """Read back in dealing order (row by row, then stock or reserve), each golden
    file is pysol_cards' talon order for that game number."""
    golden = json.loads((GOLDEN_DIR / f"{layout}-{number}.json").read_text(encoding="utf-8"))
    columns: list[list[str]] = golden["columns"]
    dealt = [column[row] for row in range(len(columns[0])) for column in columns]
    names = dealt + golden["stock"] + golden["reserve"]
    assert [parse_card(name) for name in names] == _pysol_cards_order(number)
