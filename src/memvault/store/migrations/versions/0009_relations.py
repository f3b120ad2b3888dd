"""A-MEM relations and validity: `notes.invalidated_at`, the transaction time at which a note
stopped being current without a successor (the dialogue gate's DELETE). The typed relations
(`supersedes`, `duplicate_of`, `expands`, `conflicts_with`, `derived_from`) live in `links.kind`,
one row per pair of notes, so the table keeps its shape.

Revision ID: 0009
Revises: 0008
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("notes", sa.Column("invalidated_at", sa.Float(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("notes") as batch:
        batch.drop_column("invalidated_at")
