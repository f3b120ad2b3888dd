"""erasure jobs: durable, resumable erase jobs per tenant, and operator tenant deletions.

An erase runs as a job whose state survives a crash: the next start resumes it at the step it
reached and ends in a signed receipt. The job's subject (user and agent ids) and its receipt are
sealed under the tenant key (`Keyring.seal_record`), so no erased user id stays in clear under
the data directory; `subject_tag` is a keyed tag of the subject for lookups.

A tenant deletion removes the tenant's rows, keys and this table's rows with them, so its job and
receipt live in `tenant_deletions`, an operator table without a `tenant_id` column (RLS binds
tables by that column) that holds the deleted tenant's id, counts and the signed receipt.

Revision ID: 0005
Revises: 0004
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from memvault.store.migrations._ddl import create_scoped_table, on_postgres, protect

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    create_scoped_table(
        "erasure_jobs",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("subject_tag", sa.String(length=64), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("step", sa.String(length=32), nullable=False),
        sa.Column("sealed", sa.LargeBinary(), nullable=False),
        sa.Column("receipt_ct", sa.LargeBinary(), nullable=True),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.Column("updated_at", sa.Float(), nullable=False),
        key=("id",),
    )
    op.create_index("ix_erasure_jobs_state", "erasure_jobs", ["tenant_id", "state"], unique=False)
    op.create_table(
        "tenant_deletions",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("subject_tenant", sa.String(length=128), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("step", sa.String(length=32), nullable=False),
        sa.Column("progress", sa.Text(), nullable=False),
        sa.Column("receipt", sa.Text(), nullable=True),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.Column("updated_at", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    if on_postgres():
        protect("erasure_jobs")  # no grant here: `memvault db upgrade` grants every table


def downgrade() -> None:
    op.drop_table("tenant_deletions")
    op.drop_index("ix_erasure_jobs_state", table_name="erasure_jobs")
    op.drop_table("erasure_jobs")
