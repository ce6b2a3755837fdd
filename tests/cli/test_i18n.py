"""The catalogues: every key in every language; no English on a Finnish or Russian screen."""

from __future__ import annotations

import argparse
import ast
import gettext
import json
import re
import string
import tomllib
from pathlib import Path

import pytest
from babel.messages.plurals import get_plural

from clients.cli import config
from clients.cli.board import Board
from clients.cli.commands import COMMAND_WORDS, help_text
from clients.cli.connection import decode
from clients.cli.guide import TIPS, guide_text, menu_line
from clients.cli.i18n import LANGS, _, catalogue, ngettext, plural_index, plurals, use
from clients.cli.options import build_parser
from clients.cli.render import Style, describe_event, render_board, render_results, render_stats
from protocol import LEVELS
from protocol.errors import PROTOCOL_CODES
from protocol.events import EVENTS
from tests.cli.test_render import VIEWS, WON

SOURCE = Path(__file__).resolve().parents[2] / "clients" / "cli"
KEY = re.compile(r"^[a-z]+\.[a-z0-9_\-]+$")
FAMILIES = {key.split(".")[0] for key in catalogue("en")}
# Words the player types, the same in every language: commands, subcommands, level ids;
# and names: the Enter key, WebSocket, ANSI, JSON, HTTP, TLS, ws:// and wss://, UTF-8, msgpack,
# the signals SIGHUP, SIGQUIT and SIGTERM.
TYPED = {"scorpion", "play", "register", "stats", "games", "replay", "new", *COMMAND_WORDS}
TYPED |= {"sign", "out", "token"}  # the commands sign-out and new-token
TYPED |= {"enter", "websocket", "ansi", "json", "wss", "http", "tls", "utf", "msgpack", "ipv"}
TYPED |= {"sighup", "sigquit", "sigterm"}
TYPED |= {part for level in LEVELS for part in level.split("-")}
WORD = re.compile(r"[A-Za-z]{3,}")
# `typed text`, {fields}, --options, ENVIRONMENT_VARIABLES and choice|lists
NOT_WORDS = re.compile(r"`[^`]*`|\{[^}]*\}|--[\w-]+|\b[A-Z]+_[A-Z_]+\b|\w+(?:\|\w+)+")


def words(text: str) -> list[str]:
    return WORD.findall(NOT_WORDS.sub(" ", text))


def keys_in_source() -> set[str]:
    """Every string constant of the client that has the shape of a catalogue key."""
    found = set()
    for path in SOURCE.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            value = node.value if isinstance(node, ast.Constant) else None
            if isinstance(value, str) and KEY.match(value) and value.split(".")[0] in FAMILIES:
                found.add(value)
    return found


def dynamic_keys() -> set[str]:
    """The keys the client builds from wire values."""
    keys = {f"level.{level}" for level in LEVELS}
    keys |= {f"lost.{reason}" for reason in ("resigned", "abandoned")}
    keys |= {f"status.{status}" for status in ("active", "won", "lost")}
    keys |= {f"error.{code}" for code in PROTOCOL_CODES}
    return keys | {f"tips.{n}" for n in range(1, TIPS + 1)}


def fields(text: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(text) if name}


def problems(messages: dict[str, str]) -> list[str]:
    """What is wrong with one language's catalogue: missing, extra or mismatched keys."""
    wanted = (keys_in_source() | dynamic_keys()) - set(plurals("en"))
    found = [f"missing {key}" for key in sorted(wanted - set(messages))]
    found += [f"unused {key}" for key in sorted(set(messages) - set(catalogue("en")))]
    found += [
        f"fields of {key}"
        for key, text in catalogue("en").items()
        if key in messages and fields(messages[key]) != fields(text)
    ]
    return found


def plural_problems(lang: str, forms: dict[str, tuple[str, ...]]) -> list[str]:
    """What is wrong with one language's messages with a count: missing, extra, short or
    empty forms, or forms whose fields are not the English ones."""
    wanted = {key for key in keys_in_source() if key in plurals("en")}
    found = [f"missing {key}" for key in sorted(wanted - set(forms))]
    found += [f"unused {key}" for key in sorted(set(forms) - set(plurals("en")))]
    count = get_plural(lang).num_plurals
    for key, texts in sorted(forms.items()):
        if len(texts) != count or not all(texts):
            found.append(f"forms of {key}: {count} wanted, {len([t for t in texts if t])} given")
        english = {name for text in plurals("en").get(key, ()) for name in fields(text)}
        found += [f"fields of {key}" for text in texts if text and fields(text) != english]
    return found


@pytest.mark.parametrize("lang", LANGS)
def test_every_key_is_in_every_catalogue(lang: str) -> None:
    assert len(keys_in_source() | dynamic_keys()) > 150
    assert problems(catalogue(lang)) == []
    assert len(plurals("en")) >= 6
    assert plural_problems(lang, plurals(lang)) == []


@pytest.mark.parametrize("lang", LANGS)
def test_every_catalogue_has_babels_plural_rule(lang: str) -> None:
    """The catalogue's ``Plural-Forms`` chooses as Babel's rule for the language does (the
    text of the rule differs between Babel's versions; what it chooses does not)."""
    text = (SOURCE / "locale" / f"{lang}.po").read_text("utf-8")
    header = re.search(r'"Plural-Forms: nplurals=(\d+); plural=(.+?);?\\n"', text)
    assert header is not None, "no Plural-Forms header"
    rule = get_plural(lang)
    assert int(header[1]) == rule.num_plurals
    ours, babels = gettext.c2py(header[2]), gettext.c2py(rule.plural_expr)
    assert [ours(n) for n in range(1000)] == [babels(n) for n in range(1000)]


def test_the_check_sees_a_short_or_empty_form() -> None:
    forms = dict(plurals("ru"))
    forms["event.moved_group"] = forms["event.moved_group"][:2]
    forms["app.name_long"] = (*forms["app.name_long"][:2], "")
    forms["guide.undo_limit"] = ("{limit}", "{limit}", "{count}")
    del forms["app.undo_limit"]
    assert plural_problems("ru", forms) == [
        "missing app.undo_limit",
        "forms of app.name_long: 3 wanted, 2 given",
        "forms of event.moved_group: 3 wanted, 2 given",
        "fields of guide.undo_limit",
    ]


RU_CARDS = {1: "карта", 2: "карты", 5: "карт", 11: "карт", 21: "карта", 22: "карты"}
RU_CARDS |= {25: "карт", 111: "карт", 12: "карт", 104: "карты", 1001: "карта"}


@pytest.mark.parametrize("count", sorted(RU_CARDS))
def test_a_russian_count_takes_its_form(count: int) -> None:
    use("ru")
    event = {"type": "moved", "card": "7C", "count": count, "from": 7, "to": 5}
    said = f"7♣ ({count} {RU_CARDS[count]}): столбец 7 → столбец 5"
    assert describe_event(event) == said or count == 1  # a single card: no count
    fields = {"card": "7♣", "count": count, "source": "столбец 7", "target": "столбец 5"}
    assert ngettext("event.moved_group", count, **fields) == said
    # "не более" takes the genitive: its singular after 1 and 21 ("последние 21 ход" was wrong)
    moves = {0: "хода", 1: "ходов", 2: "ходов"}[plural_index("ru", count)]
    assert ngettext("guide.undo_limit", count, limit=count).endswith(f" {count} {moves} подряд.")
    characters = "символа" if plural_index("ru", count) == 0 else "символов"
    assert ngettext("app.name_long", count, limit=count).endswith(f" {count} {characters}")


@pytest.mark.parametrize(("count", "cards"), [(1, "kortti"), (2, "korttia"), (21, "korttia")])
def test_a_finnish_count_takes_its_form(count: int, cards: str) -> None:
    use("fi")
    event = {"type": "moved", "card": "7C", "count": count, "from": 7, "to": 5}
    said = f"7♣ ({count} {cards}): sarake 7 → sarake 5"
    assert describe_event(event) == said or count == 1  # a single card: no count
    fields = {"card": "7♣", "count": count, "source": "sarake 7", "target": "sarake 5"}
    assert ngettext("event.moved_group", count, **fields) == said
    assert ngettext("app.name_long", 1, limit=1) == "nimessä voi olla enintään 1 merkki"
    assert ngettext("app.name_long", 2, limit=2) == "nimessä voi olla enintään 2 merkkiä"
    assert ngettext("guide.undo_limit", 1, limit=1) == "Perua voi viimeisen 1 siirron."
    assert ngettext("guide.undo_limit", 2, limit=2) == "Perua voi viimeiset 2 siirtoa."


def test_an_english_count_takes_its_form() -> None:
    use("en")
    assert ngettext("app.name_long", 1, limit=1) == "a name has at most 1 character"
    assert ngettext("app.name_long", 32, limit=32) == "a name has at most 32 characters"


def test_the_check_sees_a_missing_key_and_a_wrong_field() -> None:
    partial = dict(catalogue("fi"))
    del partial["status.moves"]
    partial["status.time"] = "aika {aika}"
    assert problems(partial) == ["missing status.moves", "fields of status.time"]


def english_words() -> set[str]:
    found: set[str] = set()
    for text in catalogue("en").values():
        found |= {word.lower() for word in words(text)}
    return found - TYPED


def screens() -> list[str]:
    """Everything the client shows in the current language, rendered from real data."""
    out = [help_text(), render_results(WON), render_stats([WON["stats"]]), render_stats([])]
    for view in VIEWS.values():
        board = Board.from_view(view)
        out.append(render_board(board, Style(width=80, height=24), game=1, paused=True))
    for level in LEVELS:
        out += [guide_text(level), menu_line(level, None), menu_line(level, WON["stats"])]
    for spec in EVENTS.values():
        for example in spec.examples:
            out.append(describe_event(dict(example)) or "")
    parser = build_parser()
    out.append(parser.format_help())
    subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    out += [sub.format_help() for sub in subparsers.choices.values()]
    out += list(catalogue("en").keys())  # every message, by key
    return out


@pytest.mark.parametrize("lang", LANGS)
def test_every_argument_has_help_in_every_language(lang: str) -> None:
    """``NAME`` and ``GAME`` showed an empty line in ``--help``, and ``games --status`` had
    no text at all: nothing said that ``playing`` (the table's word) is taken too."""
    use(lang)
    parser = build_parser()
    subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for name, sub in subparsers.choices.items():
        for action in sub._actions:
            assert action.help, (name, action.dest)
    status = subparsers.choices["games"].format_help()
    assert all(_(f"status.{each}") in status for each in ("active", "won", "lost")), status


@pytest.mark.parametrize("lang", ["fi", "ru"])
def test_no_english_word_on_a_finnish_or_russian_screen(lang: str) -> None:
    english = english_words()
    use(lang)
    texts = [*screens()[: -len(catalogue("en"))], *(catalogue(lang)[k] for k in catalogue("en"))]
    texts += [form for key in plurals("en") for form in plurals(lang)[key]]
    leaks = {(word, text) for text in texts for word in words(text) if word.lower() in english}
    assert sorted(leaks) == []


def test_the_english_check_would_see_a_leak() -> None:
    assert "moves" in english_words() and "dead" in english_words()


def test_the_catalogues_ship_in_the_wheel() -> None:
    """The .po files are read at run time, so they must be package data (pyproject.toml)."""
    pyproject = tomllib.loads((SOURCE.parents[1] / "pyproject.toml").read_text("utf-8"))
    patterns = pyproject["tool"]["setuptools"]["package-data"]["clients.cli"]
    for lang in LANGS:
        assert any((SOURCE / "locale" / f"{lang}.po").match(p) for p in patterns)
        assert (SOURCE / "locale" / f"{lang}.po").exists()


@pytest.mark.parametrize("lang", ["fi", "ru"])
def test_why_a_credentials_file_or_a_frame_is_refused_is_in_the_language(
    lang: str, tmp_path: Path
) -> None:
    """The reasons were English inside a Finnish or Russian line ("... не JSON" read
    "not JSON (Expecting ',' delimiter ...)"), and so were those of an unreadable frame."""
    english = english_words()
    use(lang)
    reasons = []
    for text in (
        '{"servers": [}',
        "[]",
        '{"servers": 3}',
        json.dumps({"servers": {config._key("ws://h/"): {"token": 5}}}),
    ):
        (tmp_path / "scorpion").mkdir(exist_ok=True)
        (tmp_path / "scorpion" / "credentials.json").write_text(text, encoding="utf-8")
        with pytest.raises(config.CredentialsError) as caught:
            config.load("ws://h/", tmp_path / "scorpion")
        reasons.append(caught.value.reason.split("(")[0])  # JSON's own words in brackets
    for frame in ("text", b"\xc1", b"\x01"):
        with pytest.raises(ValueError) as unread:
            decode(frame)
        reasons.append(str(unread.value))
    leaks = {(word, text) for text in reasons for word in words(text) if word.lower() in english}
    assert sorted(leaks) == []
    use("en")
