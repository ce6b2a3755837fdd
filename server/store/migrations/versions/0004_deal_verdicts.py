"""What the solver proved about each deal number it searched.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01

``deal_verdicts``: per level and deal number, ``won`` or ``lost`` (a search
that ran out of budget decides nothing and is not kept). The server checks a
game's deal when it starts, to say at once when a deal cannot be won; a
deal's verdict never changes, so it is searched once per database.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

__all__ = ["branch_labels", "depends_on", "down_revision", "downgrade", "revision", "upgrade"]

revision: str = "0004"
down_revision: str | Sequence[str] | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "deal_verdicts",
        sa.Column("level", sa.String(length=32), nullable=False),
        sa.Column("deal", sa.String(length=21), nullable=False),  # decimal text, as games.deal
        sa.Column("verdict", sa.String(length=4), nullable=False),
        sa.Column("decided_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint("verdict IN ('won', 'lost')", name=op.f("ck_deal_verdicts_verdict")),
        sa.PrimaryKeyConstraint("level", "deal", name=op.f("pk_deal_verdicts")),
    )


def downgrade() -> None:
    op.drop_table("deal_verdicts")
