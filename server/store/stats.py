"""Per-level statistics: booked in the transaction that ends a game, read for results.

The arithmetic runs in SQL as one ``UPDATE`` whose right-hand sides read the
row as it was, so two games of one player ending at once on two nodes cannot
lose an update (the row lock orders them) and no read-modify-write round trip
is needed. The row is created first when missing (``INSERT ... ON CONFLICT DO
NOTHING``, spelled per backend).

A player has one row per level for random deals and, once they finish a
game asked for as winnable (``games.winnable``), one more for those.

On a win: games+1, wins+1, current_streak+1, best_streak = max(best_streak,
the new current_streak), fastest_win_ms and fewest_moves = min with this win.
On a loss: games+1, losses+1, current_streak = 0. Either way best_score = max
with this game's score (rules.md names "best score" beside "fastest win" and
"fewest moves in a win": a best score is not restricted to wins).
"""

from __future__ import annotations

from typing import Any, Final

from sqlalchemy import ColumnElement, case, or_, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.orm import InstrumentedAttribute

from server.store.models import LEVEL_STATS, LevelStatsRow
from server.store.records import LevelStats, Progress

__all__ = ["STATS_COLUMNS", "fetch_level_stats", "record_game_end"]

S = LevelStatsRow
STATS_COLUMNS: Final = tuple(LEVEL_STATS.c)
_ZEROS: Final = dict.fromkeys(("games", "wins", "losses", "current_streak", "best_streak"), 0)


def _greater(column: InstrumentedAttribute[int | None], value: int) -> ColumnElement[Any]:
    """``max(column, value)``, where a NULL column has no value yet."""
    return case((or_(column.is_(None), column < value), value), else_=column)


def _smaller(column: InstrumentedAttribute[int | None], value: int) -> ColumnElement[Any]:
    """``min(column, value)``, where a NULL column has no value yet."""
    return case((or_(column.is_(None), column > value), value), else_=column)


def _changes(won: bool, progress: Progress) -> dict[str, Any]:
    """The SET clause that books one finished game."""
    changes: dict[str, Any] = {
        "games": S.games + 1,
        "best_score": _greater(S.best_score, progress.score),
    }
    if not won:
        return changes | {"losses": S.losses + 1, "current_streak": 0}
    streak = S.current_streak + 1
    return changes | {
        "wins": S.wins + 1,
        "current_streak": streak,
        "best_streak": case((streak > S.best_streak, streak), else_=S.best_streak),
        "fastest_win_ms": _smaller(S.fastest_win_ms, progress.time_ms),
        "fewest_moves": _smaller(S.fewest_moves, progress.moves),
    }


def _ensure_row(dialect: str, player_id: int, level: str, winnable: bool) -> Any:
    """``INSERT`` a zero row unless the (player, level, winnable) row exists."""
    insert = postgresql.insert if dialect == "postgresql" else sqlite.insert
    statement = insert(LevelStatsRow).values(
        player_id=player_id, level=level, winnable=winnable, **_ZEROS
    )
    return statement.on_conflict_do_nothing(index_elements=[S.player_id, S.level, S.winnable])


async def record_game_end(
    conn: AsyncConnection,
    player_id: int,
    level: str,
    won: bool,
    progress: Progress,
    winnable: bool = False,
) -> None:
    """Book a game of ``level`` (``winnable``: asked for so) that ended with ``progress``."""
    await conn.execute(_ensure_row(conn.dialect.name, player_id, level, winnable))
    statement = (
        update(LevelStatsRow)
        .where(S.player_id == player_id, S.level == level, S.winnable == winnable)
        .values(_changes(won, progress))
    )
    await conn.execute(statement)


def _level_stats(row: Any) -> LevelStats:
    return LevelStats(**row._mapping)


async def fetch_level_stats(
    conn: AsyncConnection, player_id: int, level: str | None, winnable: bool | None = None
) -> list[LevelStats]:
    """The player's rows by level name, random deals' row first.

    For one ``level`` there is always its random deals' row (zeros if new),
    then its winnable row if any; with ``winnable`` too, exactly that row.
    """
    statement = select(*STATS_COLUMNS).where(S.player_id == player_id).order_by(S.level, S.winnable)
    if level is not None:
        statement = statement.where(S.level == level)
    if winnable is not None:
        statement = statement.where(S.winnable == winnable)
    found = [_level_stats(row) for row in await conn.execute(statement)]
    wanted = winnable or False
    if level is not None and not any(row.winnable == wanted for row in found):
        zero = LevelStats(player_id, level, 0, 0, 0, 0, 0, None, None, None, winnable=wanted)
        found.insert(0 if not wanted else len(found), zero)
    return found
