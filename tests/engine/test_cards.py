"""Card notation (R2): every spelling parses to the same card, the canonical one fastest."""

from __future__ import annotations

import pytest

from engine.cards import CardParseError, card_str, parse_card


def test_every_card_reads_back_from_its_canonical_name_and_other_spellings() -> None:
    for card in range(52):
        name = card_str(card)
        assert parse_card(name) == card
        assert parse_card(name.lower()) == card
        assert parse_card(f" {name} ") == card
        assert parse_card(name.replace("T", "10")) == card


@pytest.mark.parametrize("text", ["", "ZZ", "1H", "KX", "AS\x00", "T H"])
def test_what_is_not_a_card_is_refused(text: str) -> None:
    with pytest.raises(CardParseError):
        parse_card(text)


def test_a_card_must_be_text() -> None:
    with pytest.raises(CardParseError, match="must be text"):
        parse_card(7)  # type: ignore[arg-type]
