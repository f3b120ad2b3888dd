"""`agent_isolation`: each agent's isolation mode, `shared` (Mode A) or `dedicated` (Mode B).

One row per (tenant, user, agent), written when the first agent key of that agent is issued
(`POST /v1/admin/keys`, `isolation`), never updated: a later key that asks for another mode is
refused (409 `isolation_conflict`). Agents with keys from before this revision have no row and
are Mode A. A dedicated agent's notes are stored with `visibility = 'dedicated'` and indexed
in a partition of their own. On PostgreSQL the table is under row-level security.

Revision ID: 0017
Revises: 0016
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from memvault.store.migrations._ddl import create_scoped_table, on_postgres, protect

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None


def upgrade() -> None:
    create_scoped_table(
        "agent_isolation",
        sa.Column("user_id", sa.String(length=128), nullable=False),
        sa.Column("agent_id", sa.String(length=128), nullable=False),
        sa.Column("isolation", sa.String(length=16), nullable=False),
        sa.Column("created_at", sa.Float(), nullable=False),
        key=("user_id", "agent_id"),
    )
    if on_postgres():
        protect("agent_isolation")  # `memvault db upgrade` grants every table


def downgrade() -> None:
    op.drop_table("agent_isolation")
