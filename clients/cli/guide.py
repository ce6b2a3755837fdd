"""The words around playing: the level menu's lines and the in-game guide (rules and tips).

Pure functions of their arguments and of the language (``i18n.use``): the
guide is the rules of one level (``levels.rules_text``, from rules.md) and
the tips, each a list item wrapped to the terminal's width.
"""

from __future__ import annotations

import textwrap
from typing import Any

from clients.cli.i18n import _
from clients.cli.levels import LEVEL_ORDER, has_stock, level_name, rules_text
from clients.cli.render import percent, time_text

__all__ = ["TIPS", "guide_text", "menu_line"]

TIPS = 6  # tips.1 .. tips.6 in the catalogues
STOCK_TIP = 2  # tips.2: keep the stock for when you are stuck


def menu_line(level: str, row: dict[str, Any] | None, width: int | None = None) -> str:
    """One level in the menu: its name and the player's statistics row for it, within
    ``width`` columns when given: the statistics go on more lines, under the first."""
    name = level_name(level).ljust(max(len(level_name(other)) for other in LEVEL_ORDER))
    if row is None or not row.get("games"):
        return f"{name}  {_('menu.no_games')}"
    fastest = row.get("fastest_win_ms")
    stats = _(
        "menu.stats",
        games=row["games"],
        wins=row["wins"],
        rate=percent(float(row["win_rate"])),
        best="-" if row.get("best_score") is None else row["best_score"],
        fastest="-" if fastest is None else time_text(int(fastest)),
    )
    indent = len(name) + 2
    lines = [""]
    for part in stats.split(" · "):  # each figure whole: a line breaks between them
        joined = f"{lines[-1]} · {part}" if lines[-1] else part
        if lines[-1] and width is not None and indent + len(joined) > width:
            lines.append(part)
        else:
            lines[-1] = joined
    return "\n".join([f"{name}  {lines[0]}", *(" " * indent + line for line in lines[1:])])


def guide_text(level: str, width: int = 79) -> str:
    """The rules of ``level``, then the tips, wrapped to ``width`` columns."""
    width = max(20, width)
    # tips.2 is about the stock: not on a level without one (three blind mice's reserve)
    tips = [_(f"tips.{n}") for n in range(1, TIPS + 1) if n != STOCK_TIP or has_stock(level)]
    lines = [_("guide.title", level=level_name(level)), *_items(rules_text(level), width)]
    return "\n".join([*lines, "", _("tips.title"), *_items(tips, width)])


def _items(texts: list[str], width: int) -> list[str]:
    """Each text as a ``  - `` list item wrapped to ``width``."""
    lines: list[str] = []
    for text in texts:
        lines += textwrap.wrap(text, width, initial_indent="  - ", subsequent_indent="    ")
    return lines
