"""Every token ever issued is remembered, so that no one can take one up again.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-07

- ``issued_tokens``: the SHA-256 of every token issued, working or not; a
  revoked token's row in ``tokens`` goes as before, its hash stays here. A
  client may choose its new token (``rotate_token``): whoever knew a leaked
  token could take it up once its owner had rotated it away (or signed out
  everywhere), and the owner's other devices, still holding it, then signed
  in as that player. The hashes of the tokens working at the upgrade are
  copied in; those revoked before it are gone.
- ``tokens`` is unchanged: nodes of the version before, still serving their
  connections between the migration and their stop (deploy.md, Schema
  upgrades), sign in, revoke and refuse tokens as the new ones do. They do
  not look here: until they stop, a rotation asked of one of them may still
  take up a revoked token. A token one of them issues is remembered here when
  a new node revokes it (new nodes put every hash they revoke here), not when
  an old node does.
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
    op.create_table(
        "issued_tokens",
        sa.Column("token_hash", sa.String(64), nullable=False),
        sa.PrimaryKeyConstraint("token_hash", name=op.f("pk_issued_tokens")),
    )
    op.execute("INSERT INTO issued_tokens (token_hash) SELECT token_hash FROM tokens")


def downgrade() -> None:
    op.drop_table("issued_tokens")
