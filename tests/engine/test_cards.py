"""Card notation (R2): every spelling parses to the same card, the canonical one fastest."""

from __future__ import annotations

import pytest

from engine.cards import CardParseError, card_str, parse_card


def test_every_card_reads_back_from_its_canonical_name_and_other_spellings() -> None:
    for card in range(52):
        name = card_str(card)
        assert parse_card(name) == card
        assert parse_card(name.lower()) == card
        assert parse_card(name.replace("T", "10")) == card


def test_a_suit_symbol_followed_by_a_presentation_selector_is_that_suit() -> None:
    # a phone's emoji keyboard types U+2665 U+FE0F for a heart; U+FE0E asks for the text form
    assert parse_card("4\u2665\ufe0f") == parse_card("4H")
    assert parse_card("10\u2663\ufe0e") == parse_card("TC")
    assert parse_card("q\u2660\ufe0f") == parse_card("QS")


@pytest.mark.parametrize(
    "text",
    [
        *["", "ZZ", "1H", "KX", "AS\x00", "T H", "4H\ufe0f", "4\u2665\ufe0f\ufe0f"],
        *[" KH", "KH ", "KH\n", "\tKH", "q\u2660\ufe0f "],  # R2 names no spelling with spaces
        *["4\ufe0f", "\ufe0f"],
        "A\u017f",  # the long s, which upper() makes S
        "\u212aS",  # the Kelvin sign, which lower() makes k
    ],
)
def test_what_is_not_a_card_is_refused(text: str) -> None:
    with pytest.raises(CardParseError):
        parse_card(text)


def test_a_card_must_be_text() -> None:
    with pytest.raises(CardParseError, match="must be text"):
        parse_card(7)  # type: ignore[arg-type]
