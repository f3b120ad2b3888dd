"""sessions and event time: `notes.session_tag`, `notes.occurred_at`, `notes.index_version`, and
`links.kind` (`link` or `sequence`).

`session_tag` is a keyed tag of (user, agent, session id) under the tenant's index key, never the
session id in clear (that travels sealed in `attrs_ct`). `occurred_at` is the event time a client
gave (NULL: the write time). `index_version` records which indexing rules built the note's vector
point; rows written before this revision are version 1, and `memvault reindex` brings them to the
current version.

Revision ID: 0007
Revises: 0006
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("notes", sa.Column("session_tag", sa.String(64), nullable=True))
    op.add_column("notes", sa.Column("occurred_at", sa.Float(), nullable=True))
    op.add_column(
        "notes", sa.Column("index_version", sa.Integer(), nullable=False, server_default="1")
    )
    op.create_index(
        "ix_notes_session",
        "notes",
        ["tenant_id", "user_id", "agent_id", "session_tag"],
        sqlite_where=sa.text("session_tag IS NOT NULL"),
        postgresql_where=sa.text("session_tag IS NOT NULL"),
    )
    op.add_column("links", sa.Column("kind", sa.String(16), nullable=False, server_default="link"))


def downgrade() -> None:
    with op.batch_alter_table("links") as batch:
        batch.drop_column("kind")
    op.drop_index("ix_notes_session", table_name="notes")
    with op.batch_alter_table("notes") as batch:
        batch.drop_column("index_version")
        batch.drop_column("occurred_at")
        batch.drop_column("session_tag")
