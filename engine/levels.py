"""The six levels (presets) of rules.md's level table, as data.

One ``Rules`` value describes a level completely; the engine consults its
fields instead of subclassing per variant.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

__all__ = ["LEVELS", "LEVEL_NAMES", "Rules", "UnknownLevel", "get_level"]


@dataclass(frozen=True, slots=True)
class Rules:
    """How one level plays.

    - ``layout``: ``"scorpion"`` (R4) or ``"three-blind-mice"`` (R5).
    - ``kings_only``: an empty column takes only a king (R9); else any card.
    - ``any_suit``: build regardless of suit (R8, level relaxed).
    - ``undo_limit``: how many moves and deals undo can reach back (R18); None = all.
    - ``scoring``: ``"points"`` (R23) or ``"timed"`` (R24).
    - ``solver_deals``: only deals the solver has won are offered (level easy).
    - ``stock_only_when_stuck``: the traditional stock rule (R13), off in every preset.
    """

    name: str
    layout: str = "scorpion"
    kings_only: bool = True
    any_suit: bool = False
    undo_limit: int | None = None
    scoring: str = "timed"
    solver_deals: bool = False
    stock_only_when_stuck: bool = False

    def with_options(self, **changes: object) -> Rules:
        """A copy with some fields changed (for rule options and tests)."""
        return replace(self, **changes)  # type: ignore[arg-type]


LEVELS: dict[str, Rules] = {
    rules.name: rules
    for rules in (
        Rules("easy", kings_only=False, solver_deals=True),
        Rules("medium", kings_only=False),
        Rules("hard"),
        Rules("classic", undo_limit=100, scoring="points"),
        Rules("relaxed", any_suit=True, undo_limit=100, scoring="points"),
        Rules("three-blind-mice", layout="three-blind-mice"),
    )
}
LEVEL_NAMES = tuple(LEVELS)


class UnknownLevel(ValueError):
    """A level name that is not in LEVELS."""


def get_level(name: str) -> Rules:
    try:
        return LEVELS[name]
    except (KeyError, TypeError):
        raise UnknownLevel(
            f"unknown level {name!r}; expected one of {', '.join(LEVEL_NAMES)}"
        ) from None
