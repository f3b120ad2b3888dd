"""`untrusted_sessions`: sessions an agent's runtime marked untrusted, seen by every worker.

A row holds a keyed tag of (user, agent, session id) under the tenant's index key, when it was
marked and when the mark runs out; never the session id, the ids or the mark's reason. Tenant
scoped with row-level security on PostgreSQL, like every tenant table.

Revision ID: 0012
Revises: 0011
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from memvault.store.migrations._ddl import create_scoped_table, on_postgres, protect

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    create_scoped_table(
        "untrusted_sessions",
        sa.Column("mark_tag", sa.String(length=64), nullable=False),
        sa.Column("marked_at", sa.Float(), nullable=False),
        sa.Column("expires_at", sa.Float(), nullable=False),
        key=("mark_tag",),
    )
    op.create_index(
        "ix_untrusted_sessions_expires", "untrusted_sessions", ["tenant_id", "expires_at"]
    )
    if on_postgres():
        protect("untrusted_sessions", grant=True)


def downgrade() -> None:
    op.drop_index("ix_untrusted_sessions_expires", table_name="untrusted_sessions")
    op.drop_table("untrusted_sessions")
