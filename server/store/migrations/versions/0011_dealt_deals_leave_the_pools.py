"""Deals already dealt leave the winnable pools, so none is dealt to a second game.

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-07

Builds before each winnable deal was dealt to one game only left a deal in
``easy_deals`` once dealt, and dealt it again and again. A game's number is
shown once it ends (PROTOCOL.md section 7), so whoever collected those numbers
could read every face-down card of a game dealt one of them later; the
upgrade kept them, and the server went on dealing them. This revision removes
from the pools every deal a game of ``games`` was dealt. On any level: a deal
number is one shuffle whatever the level (docs/deals.md), so a number shown on
one level gives the cards of that deal on every other. Nothing comes back on a
downgrade: those deals are dealt, and the pools grow again by themselves.
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

__all__ = ["branch_labels", "depends_on", "down_revision", "downgrade", "revision", "upgrade"]

revision: str = "0011"
down_revision: str | Sequence[str] | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.execute("DELETE FROM easy_deals WHERE deal IN (SELECT deal FROM games)")


def downgrade() -> None:
    pass  # the deals dealt stay out of the pools
