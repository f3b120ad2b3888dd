"""DDL the revisions share: tenant-scoped tables and their row-level security (PostgreSQL).

Frozen like the revisions that call it: what each function emits is part of their history (a
database migrated before and after a change here must end up the same). A revision that needs
other DDL writes it itself, or adds a new function here; it does not change an existing one.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import sqlalchemy as sa
from alembic import op

from memvault.store.migrations import app_role

TENANT_ISOLATION = (
    "USING (tenant_id = current_setting('app.tenant_id', true)) "
    "WITH CHECK (tenant_id = current_setting('app.tenant_id', true))"
)


def on_postgres() -> bool:
    """Whether the migration runs on PostgreSQL (row-level security, grants, functions)."""
    return op.get_bind().dialect.name == "postgresql"


def scalar(sql: str) -> str:
    """The first value of the first row of `sql`, as text."""
    return str(op.get_bind().exec_driver_sql(sql).scalar())


def create_scoped_table(name: str, *columns: Any, key: tuple[str, ...]) -> None:
    """Create a tenant's table: `tenant_id` first, then `columns`; primary key (tenant_id, *key).

    Row-level security is separate (`protect`): it applies on PostgreSQL only.
    """
    op.create_table(
        name,
        sa.Column("tenant_id", sa.String(length=128), nullable=False),
        *columns,
        sa.PrimaryKeyConstraint("tenant_id", *key),
    )


def protect(table: str, *, grant: bool = False) -> None:
    """PostgreSQL: bind `table` to the session's tenant (`app.tenant_id`), its owner included.

    ENABLE + FORCE row-level security and the `tenant_isolation` policy; with `grant`, also the
    app role's SELECT/INSERT/UPDATE/DELETE on the table (first, as the revisions did).
    """
    if grant:
        op.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON {table} TO {app_role()}")
    op.execute(f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY")
    op.execute(f"ALTER TABLE {table} FORCE ROW LEVEL SECURITY")
    op.execute(f"CREATE POLICY tenant_isolation ON {table} {TENANT_ISOLATION}")


@contextmanager
def force_lifted(table: str) -> Iterator[None]:
    """PostgreSQL: lift FORCE row-level security on `table` for the block, set it again after.

    The migrating owner then reads and rewrites every tenant's rows; both statements run in the
    revision's transaction, so no other session ever sees the table without FORCE. (A block that
    raises leaves it to the rollback.)
    """
    postgres = on_postgres()
    if postgres:
        op.execute(f"ALTER TABLE {table} NO FORCE ROW LEVEL SECURITY")
    yield
    if postgres:
        op.execute(f"ALTER TABLE {table} FORCE ROW LEVEL SECURITY")
