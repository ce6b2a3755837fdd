"""Whether the player chose the deal: only then is its number shown before the game ends.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-01

- ``games.deal_chosen``: the player named the deal in ``new_game``. A deal the
  server drew (at random, or from a winnable pool) is withheld from views and
  summaries until the game ends: the public deal algorithm turns a deal number
  into every face-down card (PROTOCOL.md section 7). Games stored before this
  revision count as not chosen, so their numbers are withheld too.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

__all__ = ["branch_labels", "depends_on", "down_revision", "downgrade", "revision", "upgrade"]

revision: str = "0006"
down_revision: str | Sequence[str] | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("games") as games:
        games.add_column(
            sa.Column("deal_chosen", sa.Boolean(), server_default=sa.false(), nullable=False)
        )


def downgrade() -> None:
    with op.batch_alter_table("games") as games:
        games.drop_column("deal_chosen")
