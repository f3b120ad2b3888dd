"""`console_sessions`: the admin console's sessions, shared by every worker on the database.

Before this revision a console session was sealed under a key drawn at random by each process,
so a session made on one worker did not open on another, and a sign-out reached only the worker
that served it. A row holds the SHA-256 of the session token (never the token), the session
sealed under a key derived from the token, and its expiry. No tenant data (an operator's session
has no tenant), so no `tenant_id` and no row-level security; the app role may read and write it
(granted by `memvault db upgrade` like every table).

Revision ID: 0011
Revises: 0010
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "console_sessions",
        sa.Column("id_digest", sa.String(length=64), nullable=False),
        sa.Column("sealed", sa.LargeBinary(), nullable=False),
        sa.Column("expires_at", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("id_digest"),
    )
    op.create_index("ix_console_sessions_expires", "console_sessions", ["expires_at"])


def downgrade() -> None:
    op.drop_index("ix_console_sessions_expires", table_name="console_sessions")
    op.drop_table("console_sessions")
