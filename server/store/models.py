"""The tables, as SQLAlchemy 2 declarative models; Alembic's target metadata.

The models describe the schema; the store executes Core statements built from
them on connections (no ``Session``, no identity map) and hands callers frozen
records (``server.store.records``), never these classes.

Decisions worth knowing:

- ``games.deal`` is text (``DealNumber``: canonical decimal, up to 21 digits).
  Deal numbers reach 10**20, beyond a signed 64-bit integer; ``Numeric(21, 0)``
  would be exact on PostgreSQL, but SQLite stores integer-looking text that
  does not fit 64 bits as a REAL and silently rounds it. Text is exact on both
  and needs no ordering: deals are looked up by equality, never by range.
- ``games.id`` is a BIGINT on PostgreSQL (an open server outlives 2**31 games
  sooner than its players table); on SQLite it must stay INTEGER to remain the
  rowid alias that autoincrements.
- A player has at most one active game: the partial unique index
  ``uq_games_active_player`` holds R17 (a new game abandons the unfinished
  one) even when two devices start games at once.
- ``game_actions`` is keyed by (game_id, seq): two writers appending the same
  seq cannot both succeed. On SQLite it is a WITHOUT ROWID table, so a game's
  log is stored in key order and loads from adjacent pages.
- Time stamps are set by the store's clock (aware UTC); ``UTCDateTime`` keeps
  them aware on SQLite too, which has no time zone type.
- CHECK constraints keep a finished game's fields consistent, so a bug in a
  writer cannot record a lost game without a reason or a won one unfinished.
- ``games.paused`` survives a restart, so a paused game's clock stays stopped; an ended
  game's is false.
- A hint action stores the suggestion it gave (``game_actions.hint_*``): the
  solver's answer depends on its time budget and on the machine, so a game
  rebuilt on another node or after a restart must read it back, not
  recompute it. Hint actions stored before revision 0003 have none; a
  rebuild gives the heuristic's hint for those, as before.
- ``easy_deals`` holds, per level, the winnable deal numbers the server found
  while running (beyond the easy list shipped with the engine,
  ``engine.solver.easy``): easy's, and since revision 0005 every level's
  pool for ``new_game`` with ``winnable``. The name stayed from when only
  easy had one.
- ``games.winnable`` marks a game dealt from such a pool on request; its
  statistics are a ``level_stats`` row of their own (``winnable`` is part of
  the key), so a player's winnable streak on hard is not their hard streak.
- ``deal_verdicts`` remembers what the solver proved about a deal number
  under a level's rules (won or lost; an undecided search is not kept): a
  deal's verdict never changes, so each deal is searched once per database,
  by whichever node meets it first.
- ``games.snapshot`` holds an active game as the service wrote it at version
  ``games.snapshot_v`` (revision 0007), so a rebuild after a restart replays
  only the log after it instead of the whole log. The log stays the truth:
  a snapshot is read only while its version is at most the game's, and it is
  dropped (both columns NULL) by the write that ends the game, so finished
  games keep no blobs. Only ``Store.restore_game`` reads it; the game records
  (``games.GAME_COLUMNS``) leave it out, so lists never carry it.
- ``games.time_at`` (revision 0008) is when a save of the play time (a bank
  of a running clock every 5 s, a pause, the last device leaving) stored
  ``games.time_ms``, which changes the game in no other way and so leaves
  ``updated_at`` alone. A node that missed a resume counts a running clock on
  from the later of the two (``GameRecord.clock_since``): an action or a
  resume stores the time of its moment with ``updated_at``. NULL in rows
  stored before it.
- ``issued_tokens`` (revision 0009) holds the hash of every token issued; a
  revoked token's row in ``tokens`` goes, its hash stays there. Clients choose
  their own new tokens (``rotate_token``): without it, anyone who knew a
  leaked token could make it theirs once its owner had rotated it away, and a
  device still holding it signed in as them. ``tokens`` alone is read to sign
  in.
- Every constraint and index has an explicit name (``NAMING_CONVENTION``), so
  later migrations can drop or alter them by name on both databases.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Final, cast

from sqlalchemy import (
    BigInteger,
    Boolean,
    CheckConstraint,
    DateTime,
    Dialect,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    false,
    text,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column
from sqlalchemy.types import TypeDecorator

__all__ = [
    "ACTIONS",
    "DEAL_VERDICTS",
    "EASY_DEALS",
    "GAMES",
    "LEVEL_STATS",
    "NAMING_CONVENTION",
    "ActionRow",
    "Base",
    "DealNumber",
    "DealVerdictRow",
    "EasyDealRow",
    "GameRow",
    "LevelStatsRow",
    "PlayerRow",
    "TokenRow",
    "UTCDateTime",
    "metadata",
]

NAMING_CONVENTION: Final = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_N_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

GAME_ID: Final = BigInteger().with_variant(Integer(), "sqlite")


class DealNumber(TypeDecorator[int]):
    """A deal number (int in Python) stored exactly as decimal text of up to 21 digits."""

    impl = String(21)
    cache_ok = True

    def process_bind_param(self, value: int | None, dialect: Dialect) -> str | None:
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"deal number {value!r} is not a non-negative int")
        return str(value)

    def process_result_value(self, value: Any, dialect: Dialect) -> int | None:
        return None if value is None else int(value)


class UTCDateTime(TypeDecorator[datetime]):
    """An aware UTC datetime on every backend (naive UTC text on SQLite)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError(f"naive datetime {value!r}: the store keeps aware UTC times")
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: Any, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        assert isinstance(value, datetime)
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)


metadata: Final = Base.metadata


class PlayerRow(Base):
    """A player. ``name_key`` (``players.name_key()``) makes names unique ignoring case."""

    __tablename__ = "players"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(32))
    name_key: Mapped[str] = mapped_column(String(128), unique=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())


class TokenRow(Base):
    """A bearer token: only its SHA-256 is stored, so a database leak logs no one in."""

    __tablename__ = "tokens"

    token_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    player_id: Mapped[int] = mapped_column(ForeignKey("players.id", ondelete="CASCADE"), index=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())


class IssuedTokenRow(Base):
    """The SHA-256 of a token ever issued, working or revoked: no one may choose it again."""

    __tablename__ = "issued_tokens"

    token_hash: Mapped[str] = mapped_column(String(64), primary_key=True)


_ACTIVE: Final = text("status = 'active'")


class GameRow(Base):
    """A game: its deal, its status and counters; ``version`` = actions in its log."""

    __tablename__ = "games"
    __table_args__ = (
        Index("ix_games_player_id_status", "player_id", "status"),
        Index(
            "uq_games_active_player",
            "player_id",
            unique=True,
            sqlite_where=_ACTIVE,
            postgresql_where=_ACTIVE,
        ),
        CheckConstraint("status IN ('active', 'won', 'lost')", name="status"),
        CheckConstraint(
            "(status = 'lost' AND lost_reason IN ('resigned', 'abandoned'))"
            " OR (status <> 'lost' AND lost_reason IS NULL)",
            name="lost_reason",
        ),
        CheckConstraint(
            "(status = 'active' AND finished_at IS NULL)"
            " OR (status <> 'active' AND finished_at IS NOT NULL)",
            name="finished_at",
        ),
        CheckConstraint("version >= 0", name="version"),
    )

    id: Mapped[int] = mapped_column(GAME_ID, primary_key=True)
    player_id: Mapped[int] = mapped_column(ForeignKey("players.id", ondelete="CASCADE"))
    level: Mapped[str] = mapped_column(String(32))
    deal: Mapped[int] = mapped_column(DealNumber())
    status: Mapped[str] = mapped_column(String(8))
    version: Mapped[int] = mapped_column(Integer)
    moves: Mapped[int] = mapped_column(Integer)
    score: Mapped[int] = mapped_column(Integer)
    time_ms: Mapped[int] = mapped_column(BigInteger)
    hints: Mapped[int] = mapped_column(Integer)
    undos: Mapped[int] = mapped_column(Integer)
    suits_removed: Mapped[int] = mapped_column(Integer)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime())
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    lost_reason: Mapped[str | None] = mapped_column(String(16))
    paused: Mapped[bool] = mapped_column(Boolean, server_default=false())
    winnable: Mapped[bool] = mapped_column(Boolean, server_default=false())
    deal_chosen: Mapped[bool] = mapped_column(Boolean, server_default=false())
    # When a save of the running clock stored time_ms (``GameRecord.clock_since``): a bank
    # raises time_ms without changing the game, so updated_at is not when it was stored.
    time_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    # An active game as it stood at version snapshot_v (opaque bytes): restored from it,
    # only the log after it is replayed. Outside ``games.GAME_COLUMNS``: no record carries it.
    snapshot: Mapped[bytes | None] = mapped_column(LargeBinary)
    snapshot_v: Mapped[int | None] = mapped_column(Integer)


class ActionRow(Base):
    """One action of a game's log, at 1-based position ``seq``."""

    __tablename__ = "game_actions"
    __table_args__ = (
        CheckConstraint("seq >= 1", name="seq"),
        {"sqlite_with_rowid": False},
    )

    game_id: Mapped[int] = mapped_column(
        GAME_ID, ForeignKey("games.id", ondelete="CASCADE"), primary_key=True
    )
    seq: Mapped[int] = mapped_column(Integer, primary_key=True)
    type: Mapped[str] = mapped_column(String(8))
    card: Mapped[str | None] = mapped_column(String(3))
    to_col: Mapped[int | None] = mapped_column(Integer)
    t: Mapped[int] = mapped_column(BigInteger)
    request_id: Mapped[str | None] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    # A hint action's suggestion (R20), so every rebuild gives the hint that was given.
    hint_action: Mapped[str | None] = mapped_column(String(8))
    hint_card: Mapped[str | None] = mapped_column(String(3))
    hint_to: Mapped[int | None] = mapped_column(Integer)
    hint_reason: Mapped[str | None] = mapped_column(String(16))


class LevelStatsRow(Base):
    """A player's statistics on one level; changed in the transaction that ends a game."""

    __tablename__ = "level_stats"
    __table_args__ = (CheckConstraint("games = wins + losses", name="games"),)

    player_id: Mapped[int] = mapped_column(
        ForeignKey("players.id", ondelete="CASCADE"), primary_key=True
    )
    level: Mapped[str] = mapped_column(String(32), primary_key=True)
    winnable: Mapped[bool] = mapped_column(Boolean, primary_key=True, server_default=false())
    games: Mapped[int] = mapped_column(Integer)
    wins: Mapped[int] = mapped_column(Integer)
    losses: Mapped[int] = mapped_column(Integer)
    current_streak: Mapped[int] = mapped_column(Integer)
    best_streak: Mapped[int] = mapped_column(Integer)
    best_score: Mapped[int | None] = mapped_column(Integer)
    fastest_win_ms: Mapped[int | None] = mapped_column(BigInteger)
    fewest_moves: Mapped[int | None] = mapped_column(Integer)


class EasyDealRow(Base):
    """A deal number the solver has won under the rules of ``level`` (found at run time)."""

    __tablename__ = "easy_deals"

    level: Mapped[str] = mapped_column(String(32), primary_key=True)
    deal: Mapped[int] = mapped_column(DealNumber(), primary_key=True)
    found_at: Mapped[datetime] = mapped_column(UTCDateTime())


class DealVerdictRow(Base):
    """The solver's proof about deal ``deal`` under ``level``'s rules: won or lost, for good."""

    __tablename__ = "deal_verdicts"
    __table_args__ = (CheckConstraint("verdict IN ('won', 'lost')", name="verdict"),)

    level: Mapped[str] = mapped_column(String(32), primary_key=True)
    deal: Mapped[int] = mapped_column(DealNumber(), primary_key=True)
    verdict: Mapped[str] = mapped_column(String(4))
    decided_at: Mapped[datetime] = mapped_column(UTCDateTime())


# The Core tables, for statements built once and executed many times: cheaper
# than statements on the ORM classes, which go through the ORM's plugins.
GAMES: Final = cast(Table, GameRow.__table__)
ACTIONS: Final = cast(Table, ActionRow.__table__)
LEVEL_STATS: Final = cast(Table, LevelStatsRow.__table__)
EASY_DEALS: Final = cast(Table, EasyDealRow.__table__)
DEAL_VERDICTS: Final = cast(Table, DealVerdictRow.__table__)
