"""Webhooks, their durable deliveries, read alerts, and suspended API keys (issue 32).

- `webhooks`: a tenant's endpoints (HTTPS URL, subscribed event types) and each one's signing
  secret sealed under the tenant key (`Keyring.seal_record`), never in clear.
- `webhook_deliveries`: the outbox. One row per (event, endpoint); the body holds ids, scope
  pseudonyms and event types, never text. Workers claim due rows with
  `FOR UPDATE SKIP LOCKED`, so no two deliver one row at once.
- `read_alerts`: read alerts that fired (key id, rule, counts, note ids; never text).
- `api_keys.suspended_at`: a key suspended by a read alert answers 401 `key_suspended`.

Every new table is tenant-scoped under row-level security on PostgreSQL.

Revision ID: 0013
Revises: 0011
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from memvault.store.migrations._ddl import create_scoped_table, on_postgres, protect

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None

_TABLES = ("webhooks", "webhook_deliveries", "read_alerts")


def upgrade() -> None:
    op.add_column("api_keys", sa.Column("suspended_at", sa.Float(), nullable=True))
    create_scoped_table(
        "webhooks",
        sa.Column("webhook_id", sa.String(length=32), nullable=False),
        sa.Column("url", sa.String(length=2048), nullable=False),
        sa.Column("events", sa.Text(), nullable=False),
        sa.Column("secret_ct", sa.LargeBinary(), nullable=False),
        sa.Column("created_at", sa.Float(), nullable=False),
        key=("webhook_id",),
    )
    create_scoped_table(
        "webhook_deliveries",
        sa.Column("delivery_id", sa.String(length=36), nullable=False),
        sa.Column("webhook_id", sa.String(length=32), nullable=False),
        sa.Column("event_type", sa.String(length=64), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("next_at", sa.Float(), nullable=False),
        sa.Column("last_status", sa.Integer(), nullable=True),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.Column("delivered_at", sa.Float(), nullable=True),
        key=("delivery_id",),
    )
    op.create_index(
        "ix_webhook_deliveries_due", "webhook_deliveries", ["tenant_id", "status", "next_at"]
    )
    create_scoped_table(
        "read_alerts",
        sa.Column("alert_id", sa.String(length=36), nullable=False),
        sa.Column("at", sa.Float(), nullable=False),
        sa.Column("key_id", sa.String(length=32), nullable=False),
        sa.Column("rule", sa.String(length=64), nullable=False),
        sa.Column("details", sa.Text(), nullable=False),
        key=("alert_id",),
    )
    if on_postgres():
        for table in _TABLES:
            protect(table)  # `memvault db upgrade` grants every table


def downgrade() -> None:
    op.drop_table("read_alerts")
    op.drop_index("ix_webhook_deliveries_due", table_name="webhook_deliveries")
    op.drop_table("webhook_deliveries")
    op.drop_table("webhooks")
    op.drop_column("api_keys", "suspended_at")
