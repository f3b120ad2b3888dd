"""Alembic environment: runs on the connection the Database hands in (no ini URL needed)."""

from __future__ import annotations

from alembic import context

from memvault.store.models import Base

target_metadata = Base.metadata
connection = context.config.attributes.get("connection")
if connection is None:  # pragma: no cover - only reached by the alembic CLI
    raise RuntimeError("run migrations through memvault.store.Database.migrate()")

context.configure(connection=connection, target_metadata=target_metadata, render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()
