"""row-level security on `tenants`; `memvault_tenant_ids()` lists tenant ids across tenants.

The app now logs in as a role that RLS binds (no `SET ROLE`), so every table with a `tenant_id`
is guarded, `tenants` included: a session sees (and may insert) only its own tenant's row.
Listing all tenants (the reconciler, the operator) goes through one narrow door: a SECURITY
DEFINER function owned by the migrating (owner) role that returns tenant ids and nothing else,
with a SELECT policy on `tenants` for that owner alone (FORCE binds the owner too). `memvault db
upgrade` grants EXECUTE on it to the app role; PUBLIC may not call it.

Revision ID: 0004
Revises: 0003
"""

from __future__ import annotations

from alembic import op

from memvault.store.migrations._ddl import on_postgres, protect, scalar

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

FUNCTION = "memvault_tenant_ids"


def upgrade() -> None:
    if not on_postgres():
        return
    schema, owner = (
        _quote(scalar("SELECT current_schema()")),
        _quote(scalar("SELECT current_user")),
    )
    protect("tenants")
    op.execute(f"CREATE POLICY tenant_ids_definer ON tenants FOR SELECT TO {owner} USING (true)")
    op.execute(
        f"CREATE FUNCTION {schema}.{FUNCTION}() RETURNS TABLE (tenant_id varchar) "
        "LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp "
        f"AS $$ SELECT t.tenant_id FROM {schema}.tenants AS t ORDER BY t.tenant_id $$"
    )
    op.execute(f"REVOKE ALL ON FUNCTION {schema}.{FUNCTION}() FROM PUBLIC")


def downgrade() -> None:
    if not on_postgres():
        return
    op.execute(f"DROP FUNCTION IF EXISTS {FUNCTION}()")
    op.execute("DROP POLICY IF EXISTS tenant_ids_definer ON tenants")
    op.execute("DROP POLICY IF EXISTS tenant_isolation ON tenants")
    op.execute("ALTER TABLE tenants NO FORCE ROW LEVEL SECURITY")
    op.execute("ALTER TABLE tenants DISABLE ROW LEVEL SECURITY")


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'
