"""What the client knows about the levels, from rules.md (the engine is not imported).

The protocol names the levels but does not describe them; the client needs
a little of each to draw and explain it: whether it has a stock (not on
three-blind-mice, R5), whether it is scored ``timed`` (R24: the score drops
by 30 points for every full 30 seconds of play time) and the rules the
guide shows. tests/cli/test_clock.py compares this table with
``engine.levels``. How a game is scored comes from its view (``scoring``);
the table only explains it. ``PENALTY_POINTS`` and ``PENALTY_PERIOD_MS`` are
the numbers of PROTOCOL.md section 6's formula.
"""

from __future__ import annotations

from dataclasses import dataclass

from clients.cli.i18n import _, ngettext
from protocol import LEVELS

__all__ = [
    "LEVEL_ORDER",
    "PENALTY_PERIOD_MS",
    "PENALTY_POINTS",
    "LevelInfo",
    "has_stock",
    "info",
    "level_name",
]

PENALTY_POINTS = 30
PENALTY_PERIOD_MS = 30_000


@dataclass(frozen=True)
class LevelInfo:
    """One level as the guide and the board need it."""

    name: str
    kings_only: bool
    any_suit: bool
    undo_limit: int | None
    timed: bool
    reserve: bool = False
    winnable_only: bool = False


_INFO = (
    LevelInfo("easy", False, False, None, True, winnable_only=True),
    LevelInfo("medium", False, False, None, True),
    LevelInfo("hard", True, False, None, True),
    LevelInfo("classic", True, False, 100, False),
    LevelInfo("relaxed", True, True, 100, False),
    LevelInfo("three-blind-mice", True, False, None, True, reserve=True),
)
INFO = {level.name: level for level in _INFO}
LEVEL_ORDER: tuple[str, ...] = tuple(level for level in LEVELS if level in INFO)


def info(level: str) -> LevelInfo | None:
    return INFO.get(level)


def level_name(level: str) -> str:
    """The level's name in the current language (the wire name if unknown)."""
    return _(f"level.{level}") if level in INFO else level


def has_stock(level: str) -> bool:
    found = INFO.get(level)
    return found is None or not found.reserve


def rules_text(level: str) -> list[str]:
    """The guide's lines about one level's rules."""
    found = INFO.get(level)
    if found is None:
        return []
    lines = [_("guide.goal"), _("guide.build_any" if found.any_suit else "guide.build_suit")]
    lines.append(_("guide.move_group"))
    lines.append(_("guide.empty_king" if found.kings_only else "guide.empty_any"))
    lines.append(_("guide.reserve") if found.reserve else _("guide.stock"))
    if found.undo_limit is None:
        lines.append(_("guide.undo_all"))
    else:
        lines.append(ngettext("guide.undo_limit", found.undo_limit, limit=found.undo_limit))
    lines.append(_("guide.timed") if found.timed else _("guide.points"))
    if found.winnable_only:
        lines.append(_("guide.winnable"))
    return lines
