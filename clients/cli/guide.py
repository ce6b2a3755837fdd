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
MENU_ROOM = 16  # the least room for the figures beside the levels' names ("best score 43477")


def menu_line(level: str, row: dict[str, Any] | None, width: int | None = None) -> str:
    """One level in the menu: its name and the player's statistics row for it (one of
    winnable deals named so), within ``width`` columns when given: the statistics go
    on more lines under the first, broken between figures, a figure wider than the
    room left broken between words; on a terminal too narrow for a column beside the
    names, under the name."""
    name = level_name(level).ljust(max(len(level_name(other)) for other in LEVEL_ORDER))
    indent = len(name) + 2
    if width is not None and width - indent < MENU_ROOM:
        name, indent = level_name(level), 2
    room = None if width is None else max(MENU_ROOM // 2, width - indent)
    if row is None or not row.get("games"):
        lines = _fitted_words(_("menu.no_games"), room)
    else:
        fastest = row.get("fastest_win_ms")
        stats = _(
            "menu.stats",
            games=row["games"],
            wins=row["wins"],
            rate=percent(float(row["win_rate"])),
            best="-" if row.get("best_score") is None else row["best_score"],
            fastest="-" if fastest is None else time_text(int(fastest)),
        )
        # a line breaks between figures, and a figure too wide for the room between words
        parts = [(" · ", part) for part in stats.split(" · ")]
        if row.get("winnable"):  # "(winnable) games 1 · ..."
            parts[0] = (" ", parts[0][1])
            parts.insert(0, ("", _("stats.winnable")))
        lines = [""]
        for separator, part in parts:
            joined = f"{lines[-1]}{separator}{part}" if lines[-1] else part
            if room is None or len(joined) <= room:
                lines[-1] = joined
            elif len(part) <= room:
                lines.append(part)
            else:  # a figure broken goes on lines of its own: the next starts anew
                lines += [*_fitted_words(part, room), ""]
        lines = [line for line in lines if line]
    if indent == 2:
        return "\n".join([*_fitted_words(name, width), *("  " + line for line in lines)])
    return "\n".join([f"{name}  {lines[0]}", *(" " * indent + line for line in lines[1:])])


def _fitted_words(text: str, room: int | None) -> list[str]:
    """``text`` on lines of ``room`` columns, broken between words only (a word wider
    than the room stands alone on its line)."""
    if room is None or len(text) <= room:
        return [text]
    return textwrap.wrap(text, room, break_long_words=False, break_on_hyphens=False)


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
