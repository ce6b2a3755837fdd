"""Paused games and the easy deals found at run time.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-30

- ``games.paused``: whether the player paused the game, so its clock stays
  stopped across a restart (it was kept in memory only).
- ``easy_deals``: deal numbers the solver has won under a level's rules,
  found while the server runs, so the easy level's pool grows beyond the
  list shipped with the engine and keeps what it found across restarts.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

__all__ = ["branch_labels", "depends_on", "down_revision", "downgrade", "revision", "upgrade"]

revision: str = "0002"
down_revision: str | Sequence[str] | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("games") as games:
        games.add_column(
            sa.Column("paused", sa.Boolean(), server_default=sa.false(), nullable=False)
        )
    op.create_table(
        "easy_deals",
        sa.Column("level", sa.String(length=32), nullable=False),
        sa.Column("deal", sa.String(length=21), nullable=False),  # decimal text, as games.deal
        sa.Column("found_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("level", "deal", name=op.f("pk_easy_deals")),
    )


def downgrade() -> None:
    op.drop_table("easy_deals")
    with op.batch_alter_table("games") as games:
        games.drop_column("paused")
