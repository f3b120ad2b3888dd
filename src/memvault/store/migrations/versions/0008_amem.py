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

from memvault.store.migrations import app_role

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("notes", sa.Column("enrichment", sa.String(16), nullable=True))
    op.add_column("links", sa.Column("strength", sa.Float(), nullable=True))
    op.create_table(
        "amem_jobs",
        sa.Column("tenant_id", sa.String(length=128), nullable=False),
        sa.Column("note_id", sa.String(length=36), nullable=False),
        sa.Column("user_id", sa.String(length=128), nullable=False),
        sa.Column("agent_id", sa.String(length=128), nullable=False),
        sa.Column("caller", sa.String(length=128), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("run_after", sa.Float(), nullable=False),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("tenant_id", "note_id"),
    )
    op.create_index("ix_amem_jobs_due", "amem_jobs", ["tenant_id", "run_after"], unique=False)
    op.create_index("ix_amem_jobs_user", "amem_jobs", ["tenant_id", "user_id"], unique=False)
    if op.get_bind().dialect.name == "postgresql":
        op.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON amem_jobs TO {app_role()}")
        op.execute("ALTER TABLE amem_jobs ENABLE ROW LEVEL SECURITY")
        op.execute("ALTER TABLE amem_jobs FORCE ROW LEVEL SECURITY")
        op.execute(
            "CREATE POLICY tenant_isolation ON amem_jobs "
            "USING (tenant_id = current_setting('app.tenant_id', true)) "
            "WITH CHECK (tenant_id = current_setting('app.tenant_id', true))"
        )


def downgrade() -> None:
    op.drop_index("ix_amem_jobs_user", table_name="amem_jobs")
    op.drop_index("ix_amem_jobs_due", table_name="amem_jobs")
    op.drop_table("amem_jobs")
    with op.batch_alter_table("links") as batch:
        batch.drop_column("strength")
    with op.batch_alter_table("notes") as batch:
        batch.drop_column("enrichment")
