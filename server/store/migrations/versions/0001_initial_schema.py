"""Initial schema: players, tokens, games, game_actions, level_stats.

Revision ID: 0001
Revises:
Create Date: 2026-11-29

Every constraint and index is named explicitly (server.store.models'
naming convention) so later revisions can address them on both backends.
Column types are spelled as plain SQLAlchemy types, not the models' Python
adapters, so this file keeps meaning what it says when the models change.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

__all__ = ["branch_labels", "depends_on", "down_revision", "downgrade", "revision", "upgrade"]

revision: str = "0001"
down_revision: str | Sequence[str] | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

GAME_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")  # the rowid alias on SQLite
ACTIVE = sa.text("status = 'active'")


def _timestamp(name: str, nullable: bool = False) -> sa.Column[object]:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


def _counter(name: str, kind: type[sa.Integer] = sa.Integer) -> sa.Column[object]:
    return sa.Column(name, kind(), nullable=False)


def _player_fk(table: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        ["player_id"],
        ["players.id"],
        name=op.f(f"fk_{table}_player_id_players"),
        ondelete="CASCADE",
    )


def _create_players() -> None:
    op.create_table(
        "players",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=32), nullable=False),
        sa.Column("name_key", sa.String(length=128), nullable=False),
        _timestamp("created_at"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_players")),
        sa.UniqueConstraint("name_key", name=op.f("uq_players_name_key")),
    )


def _create_tokens() -> None:
    op.create_table(
        "tokens",
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("player_id", sa.Integer(), nullable=False),
        _timestamp("created_at"),
        _player_fk("tokens"),
        sa.PrimaryKeyConstraint("token_hash", name=op.f("pk_tokens")),
    )
    op.create_index(op.f("ix_tokens_player_id"), "tokens", ["player_id"])


def _create_games() -> None:
    op.create_table(
        "games",
        sa.Column("id", GAME_ID, nullable=False),
        sa.Column("player_id", sa.Integer(), nullable=False),
        sa.Column("level", sa.String(length=32), nullable=False),
        sa.Column("deal", sa.String(length=21), nullable=False),  # decimal text: up to 10**20
        sa.Column("status", sa.String(length=8), nullable=False),
        *(_counter(name) for name in ("version", "moves", "score")),
        _counter("time_ms", sa.BigInteger),
        *(_counter(name) for name in ("hints", "undos", "suits_removed")),
        _timestamp("created_at"),
        _timestamp("updated_at"),
        _timestamp("finished_at", nullable=True),
        sa.Column("lost_reason", sa.String(length=16), nullable=True),
        sa.CheckConstraint(
            "(status = 'active' AND finished_at IS NULL)"
            " OR (status <> 'active' AND finished_at IS NOT NULL)",
            name=op.f("ck_games_finished_at"),
        ),
        sa.CheckConstraint(
            "(status = 'lost' AND lost_reason IN ('resigned', 'abandoned'))"
            " OR (status <> 'lost' AND lost_reason IS NULL)",
            name=op.f("ck_games_lost_reason"),
        ),
        sa.CheckConstraint("status IN ('active', 'won', 'lost')", name=op.f("ck_games_status")),
        sa.CheckConstraint("version >= 0", name=op.f("ck_games_version")),
        _player_fk("games"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_games")),
    )
    op.create_index(op.f("ix_games_player_id_status"), "games", ["player_id", "status"])
    op.create_index(
        op.f("uq_games_active_player"),
        "games",
        ["player_id"],
        unique=True,
        sqlite_where=ACTIVE,
        postgresql_where=ACTIVE,
    )


def _create_game_actions() -> None:
    op.create_table(
        "game_actions",
        sa.Column("game_id", GAME_ID, nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("type", sa.String(length=8), nullable=False),
        sa.Column("card", sa.String(length=3), nullable=True),
        sa.Column("to_col", sa.Integer(), nullable=True),
        sa.Column("t", sa.BigInteger(), nullable=False),
        sa.Column("request_id", sa.String(length=64), nullable=True),
        _timestamp("created_at"),
        sa.CheckConstraint("seq >= 1", name=op.f("ck_game_actions_seq")),
        sa.ForeignKeyConstraint(
            ["game_id"],
            ["games.id"],
            name=op.f("fk_game_actions_game_id_games"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("game_id", "seq", name=op.f("pk_game_actions")),
        sqlite_with_rowid=False,
    )


def _create_level_stats() -> None:
    op.create_table(
        "level_stats",
        sa.Column("player_id", sa.Integer(), nullable=False),
        sa.Column("level", sa.String(length=32), nullable=False),
        *(_counter(name) for name in ("games", "wins", "losses", "current_streak", "best_streak")),
        sa.Column("best_score", sa.Integer(), nullable=True),
        sa.Column("fastest_win_ms", sa.BigInteger(), nullable=True),
        sa.Column("fewest_moves", sa.Integer(), nullable=True),
        sa.CheckConstraint("games = wins + losses", name=op.f("ck_level_stats_games")),
        _player_fk("level_stats"),
        sa.PrimaryKeyConstraint("player_id", "level", name=op.f("pk_level_stats")),
    )


def upgrade() -> None:
    _create_players()
    _create_tokens()
    _create_games()
    _create_game_actions()
    _create_level_stats()


def downgrade() -> None:
    op.drop_table("level_stats")
    op.drop_table("game_actions")
    op.drop_index(op.f("uq_games_active_player"), table_name="games")
    op.drop_index(op.f("ix_games_player_id_status"), table_name="games")
    op.drop_table("games")
    op.drop_index(op.f("ix_tokens_player_id"), table_name="tokens")
    op.drop_table("tokens")
    op.drop_table("players")
