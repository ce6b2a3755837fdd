"""Revoked tokens are kept, so that no one can take one up again.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-07

- ``tokens.revoked_at``: when the token was rotated away or revoked; NULL
  while it works. A revoked token's row was deleted, and a client may choose
  its new token (``rotate_token``): whoever knew a leaked token could take it
  up once its owner had rotated it away, and the owner's other devices, still
  holding it, then signed in as that player. Rows deleted before this
  revision are gone; from it on, none is. Nodes of the version before, still
  serving their connections between the migration and their stop (deploy.md,
  Schema upgrades), delete the rows of the tokens they revoke, as before.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

__all__ = ["branch_labels", "depends_on", "down_revision", "downgrade", "revision", "upgrade"]

revision: str = "0009"
down_revision: str | Sequence[str] | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("tokens") as tokens:
        tokens.add_column(sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    # the revoked tokens' rows go, as they did before this revision
    op.execute("DELETE FROM tokens WHERE revoked_at IS NOT NULL")
    with op.batch_alter_table("tokens") as tokens:
        tokens.drop_column("revoked_at")
