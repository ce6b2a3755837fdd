"""The engine's exception tree and its readable messages (rule R10).

::

    EngineError
    ├── RuleViolation          an action the rules reject; carries a stable ``code``
    │   (one subclass per code: NotFaceUp, BadColumn, SameColumn,
    │    EmptyColumnKingsOnly, NotOneLower, SameSuitRequired, NoDestination,
    │    StockEmpty, StockNotAllowed, NothingToUndo, GameOver)
    └── ReplayFormatError      a document that is not a replay at all (replay.md)

``CardParseError`` (engine.cards) and ``DealNumberError`` (engine.deal) are
``ValueError``s: they reject malformed input before any rule is consulted.

Messages exist in English, Finnish and Russian; ``RuleViolation.message(locale)``
picks one, falling back to English. Codes never change once published; the
wording may.
"""

from __future__ import annotations

from typing import ClassVar

__all__ = [
    "LOCALES",
    "BadColumn",
    "EmptyColumnKingsOnly",
    "EngineError",
    "GameOver",
    "NoDestination",
    "NotFaceUp",
    "NotOneLower",
    "NothingToUndo",
    "ReplayFormatError",
    "RuleViolation",
    "SameColumn",
    "SameSuitRequired",
    "StockEmpty",
    "StockNotAllowed",
    "message_for",
]

LOCALES = ("en", "fi", "ru")

# code -> locale -> template; templates may use {card} and {column}.
_MESSAGES: dict[str, dict[str, str]] = {
    "not_face_up": {
        "en": "{card} is not a face-up card on the table.",
        "fi": "{card} ei ole pöydällä kuvapuoli ylöspäin.",
        "ru": "Карта {card} не лежит открытой на столе.",
    },
    "bad_column": {
        "en": "There is no column {column}.",
        "fi": "Saraketta {column} ei ole.",
        "ru": "Столбца {column} нет.",
    },
    "same_column": {
        "en": "{card} is already in column {column}.",
        "fi": "{card} on jo sarakkeessa {column}.",
        "ru": "Карта {card} уже в столбце {column}.",
    },
    "empty_column_kings_only": {
        "en": "An empty column takes only a king; {card} is not one.",
        "fi": "Tyhjään sarakkeeseen käy vain kuningas, eikä {card} ole kuningas.",
        "ru": "В пустой столбец можно положить только короля, а {card} не король.",
    },
    "not_one_lower": {
        "en": "{card} must go onto a card exactly one rank higher.",
        "fi": "{card} on siirrettävä täsmälleen yhtä arvoa suuremman kortin päälle.",
        "ru": "Карту {card} можно положить только на карту ровно на ранг старше.",
    },
    "same_suit_required": {
        "en": "{card} must go onto a card of its own suit.",
        "fi": "{card} on siirrettävä samaa maata olevan kortin päälle.",
        "ru": "Карту {card} можно положить только на карту той же масти.",
    },
    "no_destination": {
        "en": "{card} has nowhere to go.",
        "fi": "Kortille {card} ei ole paikkaa.",
        "ru": "Карту {card} некуда переложить.",
    },
    "stock_empty": {
        "en": "The stock has already been dealt.",
        "fi": "Varapakka on jo jaettu.",
        "ru": "Колода уже раздана.",
    },
    "stock_empty.none": {
        "en": "This level has no stock to deal.",
        "fi": "Tällä tasolla ei ole varapakkaa jaettavaksi.",
        "ru": "На этом уровне нет колоды, которую можно раздать.",
    },
    "stock_not_allowed": {
        "en": "The stock may be dealt only when no other move is left.",
        "fi": "Varapakan saa jakaa vasta, kun muita siirtoja ei ole.",
        "ru": "Раздать колоду можно, только когда других ходов нет.",
    },
    "nothing_to_undo": {
        "en": "There is nothing left to undo.",
        "fi": "Mitään ei ole enää peruttavana.",
        "ru": "Отменять больше нечего.",
    },
    "game_over": {
        "en": "This game is already won.",
        "fi": "Tämä peli on jo voitettu.",
        "ru": "Эта партия уже выиграна.",
    },
    "game_over.resigned": {
        "en": "This game is over: it was resigned.",
        "fi": "Tämä peli on päättynyt: se luovutettiin.",
        "ru": "Эта партия окончена: вы сдались.",
    },
    "game_over.abandoned": {
        "en": "This game is over: it was abandoned for a new game.",
        "fi": "Tämä peli on päättynyt: se jätettiin kesken uuden pelin vuoksi.",
        "ru": "Эта партия окончена: её бросили ради новой.",
    },
}


def message_for(code: str, locale: str = "en", variant: str = "", **details: object) -> str:
    """The readable reason for ``code`` in ``locale`` (English when unknown).

    ``variant`` words one code for a particular case (``game_over`` of a
    ``resigned`` game, ``stock_empty`` on a level with ``none``); the code
    stays the same, only the message differs.
    """
    templates = _MESSAGES.get(f"{code}.{variant}", _MESSAGES[code])
    template = templates.get(locale, templates["en"])
    return template.format(**details)


class EngineError(Exception):
    """Base of everything the engine raises on purpose."""


class RuleViolation(EngineError):
    """An action the rules reject. ``code`` is stable; see ``message()``."""

    code: ClassVar[str] = "illegal_move"

    def __init__(self, card: str = "", column: int | None = None, *, variant: str = "") -> None:
        self.card = card
        self.column = column
        self.variant = variant
        super().__init__(self.message("en"))

    def message(self, locale: str = "en") -> str:
        return message_for(self.code, locale, self.variant, card=self.card, column=self.column)


class NotFaceUp(RuleViolation):
    code = "not_face_up"


class BadColumn(RuleViolation):
    code = "bad_column"


class SameColumn(RuleViolation):
    code = "same_column"


class EmptyColumnKingsOnly(RuleViolation):
    code = "empty_column_kings_only"


class NotOneLower(RuleViolation):
    code = "not_one_lower"


class SameSuitRequired(RuleViolation):
    code = "same_suit_required"


class NoDestination(RuleViolation):
    code = "no_destination"


class StockEmpty(RuleViolation):
    code = "stock_empty"


class StockNotAllowed(RuleViolation):
    code = "stock_not_allowed"


class NothingToUndo(RuleViolation):
    code = "nothing_to_undo"


class GameOver(RuleViolation):
    code = "game_over"


class ReplayFormatError(EngineError):
    """The document is not a replay (bad JSON shape, unknown level, bad card...)."""
