"""A hint action keeps the suggestion it gave.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-01

``game_actions.hint_action``, ``hint_card``, ``hint_to`` and ``hint_reason``:
the suggestion of a ``hint`` action ("move" with a card and a column, "deal",
or "none" with a reason). The solver's hint depends on its time budget and
the machine, so recomputing it when a game is rebuilt (after a restart, on
another node) could give a different hint for the same version. Hints stored
before this revision keep NULLs: their rebuild gives the heuristic's hint, as
it always did.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

__all__ = ["branch_labels", "depends_on", "down_revision", "downgrade", "revision", "upgrade"]

revision: str = "0003"
down_revision: str | Sequence[str] | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("game_actions") as actions:
        actions.add_column(sa.Column("hint_action", sa.String(length=8), nullable=True))
        actions.add_column(sa.Column("hint_card", sa.String(length=3), nullable=True))
        actions.add_column(sa.Column("hint_to", sa.Integer(), nullable=True))
        actions.add_column(sa.Column("hint_reason", sa.String(length=16), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("game_actions") as actions:
        for name in ("hint_reason", "hint_to", "hint_card", "hint_action"):
            actions.drop_column(name)
