"""The client's words in English, Finnish and Russian, from gettext catalogues.

Every string the client shows is looked up by a stable key (``status.moves``)
in ``locale/<lang>.po``. The catalogues are gettext ``.po`` files, read with
Babel's ``read_po`` when first used: nothing is compiled at build time, so the
package works the same from a wheel (the ``.po`` files are package data) and
from a checkout, and no compiled ``.mo`` file can go stale. A key missing
from a catalogue falls back to English (tests/cli/test_i18n.py fails on it).

``use(lang)`` chooses the language for the process; ``_(key, **fields)``
formats the message with ``str.format``.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from babel.messages.pofile import read_po

__all__ = ["LANGS", "_", "catalogue", "current", "use"]

LANGS = ("en", "fi", "ru")
DIRECTORY = Path(__file__).parent / "locale"
_state = {"lang": "en"}


@cache
def catalogue(lang: str) -> dict[str, str]:
    """Key -> message of one language (only the messages that have a text)."""
    with (DIRECTORY / f"{lang}.po").open("rb") as handle:
        parsed = read_po(handle, locale=lang)
    return {
        str(message.id): str(message.string)
        for message in parsed
        if message.id and isinstance(message.string, str) and message.string
    }


def use(lang: str) -> None:
    """Speak ``lang`` from now on (``en`` for a language without a catalogue)."""
    _state["lang"] = lang if lang in LANGS else "en"


def current() -> str:
    return _state["lang"]


def _(key: str, **fields: object) -> str:
    """The message ``key`` in the current language, with ``fields`` filled in."""
    text = catalogue(current()).get(key) or catalogue("en").get(key) or key
    return text.format(**fields) if fields else text
