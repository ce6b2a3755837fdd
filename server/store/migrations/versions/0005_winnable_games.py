"""Winnable games on every level, kept apart in the statistics.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-01

- ``games.winnable``: the game was asked for as winnable (``new_game`` with
  ``winnable: true``) and dealt from the level's pool of deals the solver
  has won (kept in ``easy_deals``, by level, which now holds every level's).
- ``level_stats.winnable``: a player's statistics of such games are a row of
  their own, beside the level's row of random deals; the primary key becomes
  (player_id, level, winnable). Existing rows are random deals' rows.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

__all__ = ["branch_labels", "depends_on", "down_revision", "downgrade", "revision", "upgrade"]

revision: str = "0005"
down_revision: str | Sequence[str] | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _winnable() -> sa.Column[bool]:
    return sa.Column("winnable", sa.Boolean(), server_default=sa.false(), nullable=False)


def upgrade() -> None:
    with op.batch_alter_table("games") as games:
        games.add_column(_winnable())
    with op.batch_alter_table("level_stats", recreate="always") as stats:
        stats.add_column(_winnable())
        stats.drop_constraint("pk_level_stats", type_="primary")
        stats.create_primary_key("pk_level_stats", ["player_id", "level", "winnable"])


def downgrade() -> None:
    op.execute(sa.text("DELETE FROM level_stats WHERE winnable"))
    with op.batch_alter_table("level_stats", recreate="always") as stats:
        stats.drop_constraint("pk_level_stats", type_="primary")
        stats.create_primary_key("pk_level_stats", ["player_id", "level"])
        stats.drop_column("winnable")
    with op.batch_alter_table("games") as games:
        games.drop_column("winnable")
