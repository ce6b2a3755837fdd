"""Shared builders for engine tests."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from engine.cards import parse_card
from engine.deal import Deal
from engine.game import Game
from engine.levels import LEVELS

# rules.md's example deal (seed 000), face-up cards bottom to top.
SEED_EXAMPLE_UP = (
    "3D JH TH 3S",
    "QH 3C 4H 7S",
    "AS 7D 7H 3H",
    "KD 8H 7C 9S",
    "6H 8C JS 4C 9C 8D 5C",
    "6D QC KH 4D KS 9H JC",
    "AD QD 9D 6S 2H TD 5H",
)
# Its 15 hidden cards, in one of the orders rules.md allows.
SEED_EXAMPLE_HIDDEN = "2S 4S 5S 8S TS QS AH 2D 5D JD AC 2C 6C TC KC".split()


# Hard deal 5's first move turns a card face up; the board ``verify`` then prints.
FLIP_MOVE: dict[str, Any] = {"type": "move", "card": "5H", "to": 3, "t": 1_000}
HARD_5_AFTER_FLIP_MOVE: dict[str, Any] = {
    "columns": [
        col.split()
        for col in (
            "AH 3D 3C",
            "8S 5C 4S 6S JH KS 6D",
            "2D AS 3S 8D JC QD 6H 5H 8H 9D TH",
            "QS 9C 5D TD 7D 4H 6C",
            "4C KH KC 7S 5S AC QC",
            "9H 4D 3H JD QH 2H JS",
            "2S 2C KD 7H 8C TC 9S",
        )
    ],
    "face_down": [2, 3, 3, 3, 0, 0, 0],
    "stock": ["AD", "7C", "TS"],
    "reserve": [],
}


def cards(text: str) -> list[int]:
    return [parse_card(name) for name in text.split()]


def make_deal(
    columns: Sequence[str],
    face_down: Sequence[int] | None = None,
    stock: str = "",
    reserve: str = "",
) -> Deal:
    """A Deal from text columns (bottom to top); face_down defaults to none hidden."""
    return Deal(
        columns=tuple(tuple(cards(col)) for col in columns),
        face_down=tuple(face_down if face_down is not None else [0] * len(columns)),
        stock=tuple(cards(stock)),
        reserve=tuple(cards(reserve)),
    )


def seed_example_deal() -> Deal:
    hidden = SEED_EXAMPLE_HIDDEN
    columns = [
        " ".join(hidden[3 * i : 3 * i + 3]) + " " + up if i < 4 else up
        for i, up in enumerate(SEED_EXAMPLE_UP)
    ]
    return make_deal(columns, (3, 3, 3, 3, 0, 0, 0), stock=" ".join(hidden[12:]))


@pytest.fixture
def seed_game() -> Game:
    """The seed 000 example on the classic level."""
    return Game(LEVELS["classic"], 1, seed_example_deal())


def custom_game(
    level: str,
    columns: Sequence[str],
    face_down: Sequence[int] | None = None,
    stock: str = "",
    reserve: str = "",
    found: str = "",
) -> Game:
    """A game of ``level`` from a hand-made position; ``found`` lists removed suits ("SH")."""
    game = Game(LEVELS[level], 1, make_deal(columns, face_down, stock, reserve))
    game.state.found = ["SHDC".index(suit) for suit in found]
    game.stuck = False
    return game
