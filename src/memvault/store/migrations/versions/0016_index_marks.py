"""`index_marks`: the durable dirty set of the reconciler (one row per touched partition).

A write that could leave something to repair (an add's vector before its row, an update's staged
version) first commits a mark `(tenant_id, user_key, touched_at)`; the reconciler visits only
marked partitions, so a pass costs what changed, not how many users exist. Existing tenants get a
`*` mark (check the whole tenant once), since their writes before this revision left no marks.
On PostgreSQL the table is under row-level security like every tenant table, and
`memvault_marked_tenants()` (SECURITY DEFINER, owned by the migrating role) lists the tenants
with a mark and nothing else. The retention sweep likewise asks `memvault_expired_tenants(now)`
which tenants have a note past its expiry (index `ix_notes_expiry`), instead of every tenant.

Revision ID: 0016
Revises: 0011
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from memvault.store.migrations._ddl import create_scoped_table, on_postgres, protect, scalar

revision = "0016"
down_revision = "0013"
branch_labels = None
depends_on = None

FUNCTION = "memvault_marked_tenants"
EXPIRED_FUNCTION = "memvault_expired_tenants"
ERASING_FUNCTION = "memvault_erasing_tenants"
REPLAYS_FUNCTION = "memvault_replay_expired_tenants"


def upgrade() -> None:
    create_scoped_table(
        "index_marks",
        sa.Column("user_key", sa.String(length=128), nullable=False),
        sa.Column("touched_at", sa.Float(), nullable=False),
        key=("user_key",),
    )
    op.create_index(  # the retention sweep asks which tenants have an expired note
        "ix_notes_expiry",
        "notes",
        ["expires_at"],
        sqlite_where=sa.text("expires_at IS NOT NULL"),
        postgresql_where=sa.text("expires_at IS NOT NULL"),
    )
    op.create_index("ix_idempotency_expiry", "idempotency_keys", ["created_at"])
    op.execute(  # writes before this revision left no marks: check each tenant once
        "INSERT INTO index_marks (tenant_id, user_key, touched_at) "
        "SELECT tenant_id, '*', 0 FROM tenants"
    )
    if not on_postgres():
        return
    schema = _quote(scalar("SELECT current_schema()"))
    owner = _quote(scalar("SELECT current_user"))
    protect("index_marks")
    op.execute(
        f"CREATE POLICY marked_tenants_definer ON index_marks FOR SELECT TO {owner} USING (true)"
    )
    op.execute(
        f"CREATE FUNCTION {schema}.{FUNCTION}() RETURNS TABLE (tenant_id varchar) "
        "LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp "
        f"AS $$ SELECT DISTINCT m.tenant_id FROM {schema}.index_marks AS m "
        "ORDER BY m.tenant_id $$"
    )
    op.execute(f"REVOKE ALL ON FUNCTION {schema}.{FUNCTION}() FROM PUBLIC")
    op.execute(
        f"CREATE FUNCTION {schema}.{EXPIRED_FUNCTION}(now double precision) "
        "RETURNS TABLE (tenant_id varchar) "
        "LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp "
        f"AS $$ SELECT DISTINCT n.tenant_id FROM {schema}.notes AS n "
        "WHERE n.expires_at IS NOT NULL AND n.expires_at <= now ORDER BY n.tenant_id $$"
    )
    op.execute(f"REVOKE ALL ON FUNCTION {schema}.{EXPIRED_FUNCTION}(double precision) FROM PUBLIC")
    op.execute(
        f"CREATE FUNCTION {schema}.{ERASING_FUNCTION}() RETURNS TABLE (tenant_id varchar) "
        "LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp "
        f"AS $$ SELECT DISTINCT j.tenant_id FROM {schema}.erasure_jobs AS j "
        "WHERE j.state = 'running' ORDER BY j.tenant_id $$"
    )
    op.execute(f"REVOKE ALL ON FUNCTION {schema}.{ERASING_FUNCTION}() FROM PUBLIC")
    op.execute(
        f"CREATE FUNCTION {schema}.{REPLAYS_FUNCTION}(cutoff double precision) "
        "RETURNS TABLE (tenant_id varchar) "
        "LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp "
        f"AS $$ SELECT DISTINCT k.tenant_id FROM {schema}.idempotency_keys AS k "
        "WHERE k.created_at <= cutoff ORDER BY k.tenant_id $$"
    )
    op.execute(f"REVOKE ALL ON FUNCTION {schema}.{REPLAYS_FUNCTION}(double precision) FROM PUBLIC")


def downgrade() -> None:
    if on_postgres():
        op.execute(f"DROP FUNCTION IF EXISTS {FUNCTION}()")
        op.execute(f"DROP FUNCTION IF EXISTS {EXPIRED_FUNCTION}(double precision)")
        op.execute(f"DROP FUNCTION IF EXISTS {ERASING_FUNCTION}()")
        op.execute(f"DROP FUNCTION IF EXISTS {REPLAYS_FUNCTION}(double precision)")
    op.drop_index("ix_idempotency_expiry", table_name="idempotency_keys")
    op.drop_index("ix_notes_expiry", table_name="notes")
    op.drop_table("index_marks")


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'
