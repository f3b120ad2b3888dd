"""Alembic migrations of the data store (run through `memvault.store.database`)."""

from __future__ import annotations

DEFAULT_APP_ROLE = "memvault_app"


def app_role_name() -> str:
    """The app login role the running migration grants to (`MEMVAULT_DB_APP_ROLE`).

    `upgrade_database` passes it in the Alembic config's attributes (`app_role`); a run without
    it (SQLite) falls back to the default name.
    """
    from alembic import context

    return str(context.config.attributes.get("app_role") or DEFAULT_APP_ROLE)


def app_role() -> str:
    """`app_role_name()` quoted as an SQL identifier."""
    return '"' + app_role_name().replace('"', '""') + '"'
