"""note indexes that keep SQLite's planner on the primary key.

`ix_notes_status (tenant_id, status)` made SQLite scan every active note of a tenant to hydrate a
handful of ids (92 ms at 60k notes), and `ix_notes_hash` lost to `ix_notes_scope` in the
duplicate check. The status index becomes a partial index of pending rows (all the reconciler
needs) and the duplicate index covers every column the check compares.

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

PENDING = sa.text("status = 'pending'")


def upgrade() -> None:
    with op.batch_alter_table("notes") as batch:
        batch.drop_index("ix_notes_status")
        batch.drop_index("ix_notes_hash")
        batch.create_index(
            "ix_notes_dedup", ["tenant_id", "user_id", "agent_id", "content_hash"], unique=False
        )
        batch.create_index(
            "ix_notes_pending",
            ["tenant_id", "updated_at"],
            unique=False,
            sqlite_where=PENDING,
            postgresql_where=PENDING,
        )


def downgrade() -> None:
    with op.batch_alter_table("notes") as batch:
        batch.drop_index("ix_notes_pending")
        batch.drop_index("ix_notes_dedup")
        batch.create_index("ix_notes_hash", ["tenant_id", "user_id", "content_hash"], unique=False)
        batch.create_index("ix_notes_status", ["tenant_id", "status"], unique=False)
