"""initial schema: notes, links, keys, audit, refusals, corpus stats; RLS on PostgreSQL.

Revision ID: 0001
Revises:
Create Date: 2026-11-29 14:28:16.752191
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from memvault.store.migrations import app_role, app_role_name
from memvault.store.migrations._ddl import create_scoped_table, on_postgres, protect, scalar

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

# Frozen: the tables this revision creates. Later revisions protect the tables they add.
TENANT_TABLES = ("notes", "links", "api_keys", "audit_events", "refusals", "corpus_stats")


def upgrade() -> None:
    create_scoped_table(
        "api_keys",
        sa.Column("key_id", sa.String(length=32), nullable=False),
        sa.Column("secret_sha256", sa.String(length=64), nullable=False),
        sa.Column("user_id", sa.String(length=128), nullable=False),
        sa.Column("agent_id", sa.String(length=128), nullable=False),
        sa.Column("role", sa.String(length=32), nullable=False),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.Column("revoked_at", sa.Float(), nullable=True),
        key=("key_id",),
    )
    create_scoped_table(
        "audit_events",
        sa.Column("seq", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("ts", sa.Float(), nullable=False),
        sa.Column("actor", sa.String(length=64), nullable=False),
        sa.Column("action", sa.String(length=64), nullable=False),
        sa.Column("detail", sa.Text(), nullable=False),
        sa.Column("prev_hash", sa.String(length=64), nullable=False),
        sa.Column("hash", sa.String(length=64), nullable=False),
        key=("seq",),
    )
    create_scoped_table(
        "corpus_stats",
        sa.Column("namespace", sa.String(length=256), nullable=False),
        sa.Column("doc_count", sa.Integer(), nullable=False),
        sa.Column("token_total", sa.Integer(), nullable=False),
        key=("namespace",),
    )
    create_scoped_table(
        "links",
        sa.Column("src_id", sa.String(length=36), nullable=False),
        sa.Column("dst_id", sa.String(length=36), nullable=False),
        sa.Column("user_id", sa.String(length=128), nullable=False),
        sa.Column("created_at", sa.Float(), nullable=False),
        key=("src_id", "dst_id"),
    )
    with op.batch_alter_table("links", schema=None) as batch_op:
        batch_op.create_index("ix_links_dst", ["tenant_id", "dst_id"], unique=False)
        batch_op.create_index("ix_links_user", ["tenant_id", "user_id"], unique=False)

    create_scoped_table(
        "notes",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("user_id", sa.String(length=128), nullable=False),
        sa.Column("agent_id", sa.String(length=128), nullable=False),
        sa.Column("owner", sa.String(length=128), nullable=False),
        sa.Column("readers", sa.Text(), nullable=False),
        sa.Column("writers", sa.Text(), nullable=False),
        sa.Column("visibility", sa.String(length=16), nullable=False),
        sa.Column("note_type", sa.String(length=16), nullable=False),
        sa.Column("category", sa.String(length=64), nullable=True),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("is_active", sa.Integer(), nullable=False),
        sa.Column("conflict", sa.Integer(), nullable=False),
        sa.Column("ephemeral", sa.Integer(), nullable=False),
        sa.Column("low_quality", sa.Integer(), nullable=False),
        sa.Column("suspicious", sa.Integer(), nullable=False),
        sa.Column("redacted_types", sa.String(length=128), nullable=False),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.Column("updated_at", sa.Float(), nullable=False),
        sa.Column("retrieval_count", sa.Integer(), nullable=False),
        sa.Column("last_accessed", sa.Float(), nullable=False),
        sa.Column("expires_at", sa.Float(), nullable=True),
        sa.Column("content_hash", sa.String(length=64), nullable=False),
        sa.Column("token_count", sa.Integer(), nullable=False),
        sa.Column("key_version", sa.Integer(), nullable=False),
        sa.Column("model_id", sa.String(length=64), nullable=False),
        sa.Column("text_ct", sa.LargeBinary(), nullable=False),
        sa.Column("attrs_ct", sa.LargeBinary(), nullable=False),
        key=("id",),
    )
    with op.batch_alter_table("notes", schema=None) as batch_op:
        batch_op.create_index(
            "ix_notes_hash", ["tenant_id", "user_id", "content_hash"], unique=False
        )
        batch_op.create_index(
            "ix_notes_scope", ["tenant_id", "user_id", "agent_id", "created_at"], unique=False
        )
        batch_op.create_index("ix_notes_status", ["tenant_id", "status"], unique=False)

    create_scoped_table(
        "refusals",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("ts", sa.Float(), nullable=False),
        sa.Column("principal", sa.String(length=64), nullable=False),
        sa.Column("code", sa.String(length=32), nullable=False),
        sa.Column("detector", sa.String(length=64), nullable=False),
        key=("id",),
    )
    with op.batch_alter_table("refusals", schema=None) as batch_op:
        batch_op.create_index("ix_refusals_ts", ["tenant_id", "ts"], unique=False)

    create_scoped_table(
        "tenants",
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.Column("policy_json", sa.Text(), nullable=False),
        key=(),
    )
    if on_postgres():
        _enable_row_level_security()


def _enable_row_level_security() -> None:
    """Defense in depth: rows are visible only when `app.tenant_id` names their tenant.

    FORCE makes the policy apply to the table owner too; the app connects through the non-owner
    app role (`MEMVAULT_DB_APP_ROLE`, default `memvault_app`), because superusers bypass RLS
    whatever the table says.
    """
    role, name = app_role(), app_role_name().replace("'", "''")
    # `db upgrade` creates (or finds) the configured role before it migrates; this creates a
    # NOLOGIN stand-in only for a run that did not (it needs CREATEROLE then).
    op.execute(
        f"DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{name}') "
        f"THEN CREATE ROLE {role} NOLOGIN; END IF; END $$"
    )
    op.execute("GRANT USAGE ON SCHEMA " + _schema() + f" TO {role}")
    op.execute(
        "GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA " + _schema() + f" TO {role}"
    )
    for table in TENANT_TABLES:
        protect(table)


def _schema() -> str:
    return scalar("SELECT current_schema()")


def downgrade() -> None:
    op.drop_table("tenants")
    with op.batch_alter_table("refusals", schema=None) as batch_op:
        batch_op.drop_index("ix_refusals_ts")

    op.drop_table("refusals")
    with op.batch_alter_table("notes", schema=None) as batch_op:
        batch_op.drop_index("ix_notes_status")
        batch_op.drop_index("ix_notes_scope")
        batch_op.drop_index("ix_notes_hash")

    op.drop_table("notes")
    with op.batch_alter_table("links", schema=None) as batch_op:
        batch_op.drop_index("ix_links_user")
        batch_op.drop_index("ix_links_dst")

    op.drop_table("links")
    op.drop_table("corpus_stats")
    op.drop_table("audit_events")
    op.drop_table("api_keys")
