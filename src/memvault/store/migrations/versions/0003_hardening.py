"""hardening: idempotency keys; tenant ids unique regardless of case; staged note updates.

An update stages the next version of a note in `next_*` columns while its vector is written,
so the live version stays readable until one transaction swaps them (and a crash in between
leaves something the reconciler can finish).

`GLOBEX` and `globex` must not both exist: on a case-insensitive file system they would share
files, and people read them as one tenant. A unique index on `lower(tenant_id)` makes the database
refuse the second one even when two creations race.

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from memvault.store.migrations._ddl import create_scoped_table, on_postgres, protect

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


NEXT_PENDING = sa.text("next_at IS NOT NULL")


def upgrade() -> None:
    # Plain ALTER TABLE ADD COLUMN (no batch copy, which could lose the partial indexes).
    op.add_column("notes", sa.Column("next_text_ct", sa.LargeBinary(), nullable=True))
    op.add_column("notes", sa.Column("next_attrs_ct", sa.LargeBinary(), nullable=True))
    op.add_column("notes", sa.Column("next_state", sa.Text(), nullable=True))
    op.add_column("notes", sa.Column("next_at", sa.Float(), nullable=True))
    op.create_index(
        "ix_notes_next",
        "notes",
        ["tenant_id", "next_at"],
        unique=False,
        sqlite_where=NEXT_PENDING,
        postgresql_where=NEXT_PENDING,
    )
    create_scoped_table(
        "idempotency_keys",
        sa.Column("principal", sa.String(length=64), nullable=False),
        sa.Column("idem_key", sa.String(length=255), nullable=False),
        sa.Column("user_id", sa.String(length=128), nullable=False),
        sa.Column("agent_id", sa.String(length=128), nullable=False),
        sa.Column("request_hash", sa.String(length=64), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("status_code", sa.Integer(), nullable=False),
        sa.Column("response_ct", sa.LargeBinary(), nullable=True),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.Column("lock_owner", sa.String(length=64), nullable=True),
        sa.Column("locked_until", sa.Float(), nullable=True),
        key=("principal", "idem_key"),
    )
    op.create_index(
        "ix_idempotency_created", "idempotency_keys", ["tenant_id", "created_at"], unique=False
    )
    op.create_index("ux_tenants_casefold", "tenants", [sa.text("lower(tenant_id)")], unique=True)
    if on_postgres():
        protect("idempotency_keys", grant=True)


def downgrade() -> None:
    with op.batch_alter_table("notes") as batch:
        batch.drop_index("ix_notes_next")
        for column in ("next_at", "next_state", "next_attrs_ct", "next_text_ct"):
            batch.drop_column(column)
    op.drop_index("ux_tenants_casefold", table_name="tenants")
    op.drop_index("ix_idempotency_created", table_name="idempotency_keys")
    op.drop_table("idempotency_keys")
