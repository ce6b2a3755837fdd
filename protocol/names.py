"""Characters a player's name may not have although Python calls them printable.

``str.isprintable()`` refuses control, format and separator characters, but it
takes some that a screen shows as nothing: a combining grapheme joiner or a
variation selector inside "admin" gives a second "admin", and a Hangul filler
or a blank braille pattern gives a blank name. The server refuses a name with
any of them at ``register``; the clients check the same before they send one
(the web client's copy of this table is ``clients/web/src/names.ts``).
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["BLANK", "DEFAULT_IGNORABLE", "VARIATION_SELECTORS", "invisible"]

DEFAULT_IGNORABLE: Final = (
    (0x00AD, 0x00AD),
    (0x034F, 0x034F),
    (0x061C, 0x061C),
    (0x115F, 0x1160),
    (0x17B4, 0x17B5),
    (0x180B, 0x180F),
    (0x200B, 0x200F),
    (0x202A, 0x202E),
    (0x2060, 0x206F),
    (0x3164, 0x3164),
    (0xFE00, 0xFE0F),
    (0xFEFF, 0xFEFF),
    (0xFFA0, 0xFFA0),
    (0xFFF0, 0xFFF8),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    (0xE0000, 0xE0FFF),
)
"""Unicode's Default_Ignorable_Code_Point, as first and last code point of each range,
adjacent ranges joined: DerivedCoreProperties.txt of Unicode 14.0, the version of
Python 3.11's ``unicodedata`` (the same in Unicode 17.0). Characters a renderer shows
as nothing when it has no glyph for them."""

BLANK: Final = "\u115f\u1160\u3164\uffa0\u2800"
"""Characters with a glyph that is blank: the Hangul fillers (choseong, jungseong,
compatibility, halfwidth: default ignorable too) and the blank braille pattern."""

_INVISIBLE: Final = re.compile(
    "["
    + "".join(f"{re.escape(chr(a))}-{re.escape(chr(b))}" for a, b in DEFAULT_IGNORABLE)
    + re.escape(BLANK)
    + "]"
)


VARIATION_SELECTORS: Final = "\u180b-\u180d\u180f\ufe00-\ufe0f\U000e0100-\U000e01ef"
"""The variation selectors (Mongolian's free ones, VS1 to VS16, the ideographic ones), as a
regular expression's class: default ignorable, but what they follow they change, and a
name may want that: "Anna \u2764\ufe0f" (the red heart an emoji keyboard types),
"\u845b\U000e0100" (a Japanese name's glyph of a kanji), Mongolian letters."""

_VARIANT: Final = re.compile(
    "(?<=[^\x00-\u052f"
    + "".join(f"{re.escape(chr(a))}-{re.escape(chr(b))}" for a, b in DEFAULT_IGNORABLE)
    + re.escape(BLANK)
    + "])["
    + VARIATION_SELECTORS
    + "]|(?<=[0-9#*])\ufe0f(?=\u20e3)"
)
"""A variation selector that changes a visible character: right after one beyond the
Latin, Greek and Cyrillic letters (past U+052F: an emoji, a kanji, a Mongolian letter), or
in a keycap ("1\ufe0f\u20e3"). After such a letter, as in "admin\ufe0f", it changes
nothing a screen shows: a second "admin"."""


def invisible(text: str) -> str | None:
    """The first character of ``text`` that shows as nothing (above); None if none does.
    A variation selector that changes the visible character before it (``_VARIANT``)
    shows, in that character."""
    found = _INVISIBLE.search(_VARIANT.sub("", text))
    return None if found is None else found.group()
