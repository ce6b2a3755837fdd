"""When a game's stored play time was its play time, for a clock that runs on since.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-06

- ``games.time_at``: the moment a save of the play time alone (a running
  clock's bank, every 5 s) stored ``games.time_ms``; a change of the game
  stores it with ``updated_at``. A node that missed a resume counts the
  game's clock on from the later of the two: from ``updated_at`` alone, the
  time between the last change and a bank was counted twice. NULL in rows
  stored before this revision.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

__all__ = ["branch_labels", "depends_on", "down_revision", "downgrade", "revision", "upgrade"]

revision: str = "0008"
down_revision: str | Sequence[str] | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("games") as games:
        games.add_column(sa.Column("time_at", sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("games") as games:
        games.drop_column("time_at")
