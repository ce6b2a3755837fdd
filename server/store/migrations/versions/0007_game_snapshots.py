"""A snapshot of an active game in its row, so a rebuild replays only the log after it.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-05

- ``games.snapshot``: the game as the service wrote it (opaque bytes) at
  version ``games.snapshot_v``. Both NULL when there is none: games stored
  before this revision have none and are rebuilt from their whole log, as
  before. The write that ends a game sets both back to NULL.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

__all__ = ["branch_labels", "depends_on", "down_revision", "downgrade", "revision", "upgrade"]

revision: str = "0007"
down_revision: str | Sequence[str] | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("games") as games:
        games.add_column(sa.Column("snapshot", sa.LargeBinary(), nullable=True))
        games.add_column(sa.Column("snapshot_v", sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("games") as games:
        games.drop_column("snapshot_v")
        games.drop_column("snapshot")
