"""A database that another revision numbered 0009 made is brought to this line's 0009.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-07

For a few commits before the release that brought ``issued_tokens``, the
revision numbered 0009 was another design of the same change: a
``tokens.revoked_at`` mark on revoked rows, and no ``issued_tokens``. A
database that a build of those commits migrated is at "0009" too, so the
release took it as current: ``--migrate`` did nothing, and every registration
and token rotation failed (``issued_tokens`` missing). On such a database this
revision does what 0009 would have done: ``issued_tokens`` holds the hash of
every token in ``tokens`` (the revoked ones included: they were issued), then
the revoked rows and the mark go, as in 0009's ``tokens``. On any other
database it changes nothing.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

__all__ = ["branch_labels", "depends_on", "down_revision", "downgrade", "revision", "upgrade"]

revision: str = "0010"
down_revision: str | Sequence[str] | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    found = sa.inspect(op.get_bind())
    if "issued_tokens" not in found.get_table_names():
        op.create_table(
            "issued_tokens",
            sa.Column("token_hash", sa.String(64), nullable=False),
            sa.PrimaryKeyConstraint("token_hash", name=op.f("pk_issued_tokens")),
        )
        op.execute("INSERT INTO issued_tokens (token_hash) SELECT token_hash FROM tokens")
    if "revoked_at" in {column["name"] for column in found.get_columns("tokens")}:
        op.execute("DELETE FROM tokens WHERE revoked_at IS NOT NULL")
        with op.batch_alter_table("tokens") as tokens:
            tokens.drop_column("revoked_at")


def downgrade() -> None:
    pass  # the schema is 0009's on both sides
