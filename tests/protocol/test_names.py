"""The characters no name may have although they are printable (``protocol.names``)."""

from __future__ import annotations

import itertools
import unicodedata

from protocol.names import BLANK, DEFAULT_IGNORABLE, invisible


def test_the_ranges_are_sorted_apart_and_of_ignorable_kinds() -> None:
    """Ranges in order, never touching (joined when adjacent), each code point a format
    character, a mark, a filler letter or unassigned, as DerivedCoreProperties has them."""
    for (_first, last), (after, _end) in itertools.pairwise(DEFAULT_IGNORABLE):
        assert last + 1 < after
    kinds = {
        unicodedata.category(chr(code))
        for first, last in DEFAULT_IGNORABLE
        for code in range(first, last + 1)
    }
    assert kinds == {"Cf", "Mn", "Lo", "Cn"}
    assert sum(last - first + 1 for first, last in DEFAULT_IGNORABLE) == 4174


def test_invisible_names_the_first_such_character() -> None:
    assert invisible("admin") is None
    assert invisible("Ада Лавлейс") is None
    assert invisible("ad\u034fmin\ufe0f") == "\u034f"
    assert invisible("\u2800") == "\u2800"
    assert all(invisible(f"a{each}b") == each for each in BLANK)
    edges = [chr(code) for first, last in DEFAULT_IGNORABLE for code in (first, last)]
    assert all(invisible(f"x{each}") == each for each in edges)
    assert invisible("\u00ac\u00ae\u034e\u0350\ue000\U000e1000") is None  # next to them


def test_a_variation_selector_that_changes_the_character_before_it_shows() -> None:
    """Refusing every variation selector refused "Anna ❤️" as an emoji keyboard types it,
    a keycap, a kanji's glyph and a Mongolian letter's form; after a Latin, Greek or
    Cyrillic letter one changes nothing a screen shows."""
    for name in (
        "Anna \u2764\ufe0f",
        "\u263a\ufe0f",
        "1\ufe0f\u20e3",
        "\u845b\U000e0100",
        "\u1820\u180b",
    ):
        assert invisible(name) is None, ascii(name)
    for name in (
        "admin\ufe0f",
        "Ren\u00e9e\ufe0f",
        "\u0416\ufe0f",
        "\u2764\ufe0f\ufe0f",
        "\ufe0fa",
    ):
        assert invisible(name) == "\ufe0f", ascii(name)
    assert invisible("a\u200b\ufe0f") == "\u200b"
