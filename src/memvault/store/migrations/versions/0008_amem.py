"""A-MEM: `notes.enrichment` (pending | done | failed), `links.strength`, and `amem_jobs`, the
durable per-scope queue of note enrichment (construction, linking, evolution) still to run.

A job row names a note and its storage scope, and holds only ids, counters and times. Erasing a
scope deletes its jobs with its notes.

Revision ID: 0008
Revises: 0007
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from memvault.store.migrations._ddl import create_scoped_table, on_postgres, protect

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("notes", sa.Column("enrichment", sa.String(16), nullable=True))
    op.add_column("links", sa.Column("strength", sa.Float(), nullable=True))
    create_scoped_table(
        "amem_jobs",
        sa.Column("note_id", sa.String(length=36), nullable=False),
        sa.Column("user_id", sa.String(length=128), nullable=False),
        sa.Column("agent_id", sa.String(length=128), nullable=False),
        sa.Column("caller", sa.String(length=128), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("run_after", sa.Float(), nullable=False),
        sa.Column("created_at", sa.Float(), nullable=False),
        key=("note_id",),
    )
    op.create_index("ix_amem_jobs_due", "amem_jobs", ["tenant_id", "run_after"], unique=False)
    op.create_index("ix_amem_jobs_user", "amem_jobs", ["tenant_id", "user_id"], unique=False)
    if on_postgres():
        protect("amem_jobs", grant=True)


def downgrade() -> None:
    op.drop_index("ix_amem_jobs_user", table_name="amem_jobs")
    op.drop_index("ix_amem_jobs_due", table_name="amem_jobs")
    op.drop_table("amem_jobs")
    with op.batch_alter_table("links") as batch:
        batch.drop_column("strength")
    with op.batch_alter_table("notes") as batch:
        batch.drop_column("enrichment")
