"""The client's words in English, Finnish and Russian, from gettext catalogues.

Every string the client shows is looked up by a stable key (``status.moves``)
in ``locale/<lang>.po``. The catalogues are gettext ``.po`` files, read with
Babel's parser when first used: nothing is compiled at build time, so the
package works the same from a wheel (the ``.po`` files are package data) and
from a checkout, and no compiled ``.mo`` file can go stale. A key missing
from a catalogue falls back to English (tests/cli/test_i18n.py fails on it).

A message with a count in it (``2 cards``, ``the last 100 moves``) has one
form for each plural category of its language: ``msgid_plural`` (the key
again) and ``msgstr[0]``, ``msgstr[1]``... in gettext's way, chosen by the
catalogue's ``Plural-Forms`` header, which is Babel's rule for the language
(English and Finnish have two forms, Russian three: 1 and 21 карта, 2 and 22
карты, 5, 11 and 111 карт). tests/cli/test_i18n.py fails on a header that is
not Babel's and on a form that is missing or empty.

``use(lang)`` chooses the language for the process; ``_(key, **fields)``
formats the message with ``str.format``; ``ngettext(key, count, **fields)``
formats the form for ``count``.
"""

from __future__ import annotations

import gettext
import importlib
import os
from collections.abc import Callable
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from babel.messages.catalog import Catalog
    from babel.messages.pofile import PoFileParser

__all__ = ["LANGS", "_", "catalogue", "current", "ngettext", "plural_index", "plurals", "use"]

LANGS = ("en", "fi", "ru")
DIRECTORY = Path(__file__).parent / "locale"
_state = {"lang": "en"}


def _babel() -> tuple[type[Catalog], type[PoFileParser]]:
    """Babel's catalogue and ``.po`` parser, whatever ``TZ`` says.

    Babel reads the local time zone when it is imported and raises on a ``TZ`` it
    cannot load (ValueError for ``TZ=/etc/passwd``, OSError for a directory); nothing
    here needs that zone, so Babel is then imported with ``TZ`` unset for the moment."""
    try:
        importlib.import_module("babel.localtime")
    except (ValueError, OSError):  # OSError: a TZ naming a directory or an unreadable file
        zone = os.environ.pop("TZ", "")
        try:
            importlib.import_module("babel.localtime")
        finally:
            os.environ["TZ"] = zone
    from babel.messages.catalog import Catalog
    from babel.messages.pofile import PoFileParser

    return Catalog, PoFileParser


@cache
def _parsed(lang: str) -> Catalog:
    # Babel's read_po() dates its Catalog in the local time zone, which raises on a TZ
    # Python cannot use (TZ=EST+24, a 24-hour offset): this one is dated in UTC.
    catalog_class, parser_class = _babel()
    catalog = catalog_class(locale=lang, creation_date=datetime.now(UTC))
    with (DIRECTORY / f"{lang}.po").open("rb") as handle:
        parser_class(catalog).parse(handle)
    return catalog


@cache
def catalogue(lang: str) -> dict[str, str]:
    """Key -> message of one language (only the messages that have a text), counts aside."""
    return {
        str(message.id): str(message.string)
        for message in _parsed(lang)
        if message.id and isinstance(message.string, str) and message.string
    }


@cache
def plurals(lang: str) -> dict[str, tuple[str, ...]]:
    """Key -> the forms of a message with a count, as the catalogue has them ("" where it
    has none), in the order of its ``Plural-Forms``."""
    return {
        str(message.id[0]): tuple(str(form or "") for form in message.string)
        for message in _parsed(lang)
        if message.pluralizable and isinstance(message.string, tuple | list)
    }


@cache
def _rule(lang: str) -> Callable[[int], int]:
    return gettext.c2py(_parsed(lang).plural_expr)


def plural_index(lang: str, count: int) -> int:
    """Which of ``lang``'s forms ``count`` takes (its catalogue's ``Plural-Forms``)."""
    return _rule(lang)(abs(count))


def use(lang: str) -> None:
    """Speak ``lang`` from now on (``en`` for a language without a catalogue)."""
    _state["lang"] = lang if lang in LANGS else "en"


def current() -> str:
    return _state["lang"]


def _(key: str, **fields: object) -> str:
    """The message ``key`` in the current language, with ``fields`` filled in."""
    text = catalogue(current()).get(key) or catalogue("en").get(key) or key
    return text.format(**fields) if fields else text


def ngettext(key: str, count: int, /, **fields: object) -> str:
    """The form of the message ``key`` that ``count`` takes in the current language, with
    ``fields`` (the count among them, under its own name: ``count``, ``limit``) filled in.

    A form the catalogue lacks is its language's last one that it has, so a
    Russian count is never said in English; only a key a language lacks
    altogether is English."""
    lang = current()
    forms = [form for form in plurals(lang).get(key, ()) if form]
    if not forms:
        lang, forms = "en", list(plurals("en").get(key, ()))
    if not forms:
        return key
    wanted = plurals(lang)[key]
    index = plural_index(lang, count)
    text = wanted[index] if index < len(wanted) and wanted[index] else forms[-1]
    return text.format(**fields)
