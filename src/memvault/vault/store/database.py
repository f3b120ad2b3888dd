"""Engine, sessions and migrations for the data store (SQLite WAL or PostgreSQL with RLS)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from sqlalchemy import Engine, create_engine, event, text
from sqlalchemy.orm import Session, sessionmaker

MIGRATIONS_DIR = Path(__file__).resolve().parent.parent / "migrations"
APP_ROLE = "memvault_app"

SQLITE_PLANNER_STATS = (
    # (index, stat): a large tenant's shape. Without statistics SQLite preferred
    # (tenant_id, user_id) over the primary key for `id IN (...)` and scanned a user's notes.
    ("sqlite_autoindex_notes_1", "100000 1000 1"),
    ("ix_notes_scope", "100000 1000 100 20 1"),
    ("ix_notes_dedup", "100000 1000 100 1 1"),
    ("ix_notes_pending", "100 10 1"),
)


class Database:
    """The data store's engine. `session(tenant)` pins PostgreSQL's RLS tenant per transaction.

    On PostgreSQL every connection switches to the non-owner role `memvault_app` (created by the
    migration) so row-level security applies even when the URL names a superuser.
    """

    def __init__(self, url: str, *, schema: str | None = None, use_app_role: bool = True) -> None:
        self.url = url
        self.is_postgres = url.startswith("postgresql")
        self.schema = schema
        self.use_app_role = use_app_role and self.is_postgres
        kwargs: dict[str, Any] = {"future": True}
        if self.is_postgres:
            kwargs["pool_pre_ping"] = True
            if schema:
                kwargs["connect_args"] = {"options": f"-csearch_path={schema}"}
        else:
            kwargs["connect_args"] = {"check_same_thread": False, "timeout": 30}
        self.engine: Engine = create_engine(url, **kwargs)
        if self.is_postgres:
            event.listen(self.engine, "connect", self._on_pg_connect)
        else:
            event.listen(self.engine, "connect", _on_sqlite_connect)
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)

    def _on_pg_connect(self, dbapi_conn: Any, _record: Any) -> None:
        if not self.use_app_role:
            return
        cur = dbapi_conn.cursor()
        cur.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (APP_ROLE,))
        if cur.fetchone() is not None:
            cur.execute(f"SET ROLE {APP_ROLE}")
        cur.close()
        dbapi_conn.commit()

    def migrate(self) -> None:
        """Bring the schema to the newest Alembic revision (idempotent)."""
        if self.is_postgres and self.schema:
            with self.engine.begin() as conn:
                conn.execute(text("RESET ROLE"))
                conn.execute(text(f'CREATE SCHEMA IF NOT EXISTS "{self.schema}"'))
        cfg = Config()
        cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
        with self.engine.begin() as conn:
            if self.is_postgres:
                conn.execute(text("RESET ROLE"))  # DDL runs as the connecting (owner) role
            cfg.attributes["connection"] = conn
            command.upgrade(cfg, "head")
            if not self.is_postgres:
                _seed_sqlite_planner_stats(conn)
        self.engine.dispose()  # new connections take the app role created by the migration

    @contextmanager
    def session(self, tenant: str | None) -> Iterator[Session]:
        """A transaction; on PostgreSQL `app.tenant_id` is set LOCAL to it (RLS)."""
        with self._sessions() as sess, sess.begin():
            if self.is_postgres:
                sess.execute(
                    text("SELECT set_config('app.tenant_id', :t, true)"), {"t": tenant or ""}
                )
            yield sess

    def dispose(self) -> None:
        self.engine.dispose()


def _on_sqlite_connect(dbapi_conn: Any, _record: Any) -> None:
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.execute("PRAGMA busy_timeout=30000")
    cur.execute("PRAGMA case_sensitive_like=ON")
    cur.execute("PRAGMA secure_delete=ON")
    cur.close()


def _seed_sqlite_planner_stats(conn: Any) -> None:
    """Give SQLite's planner the statistics of a grown tenant until ANALYZE writes real ones.

    SQLite documents `sqlite_stat1` as writable for this purpose; real statistics (from
    `ANALYZE` or `PRAGMA optimize`) replace these rows.
    """
    conn.execute(text("ANALYZE sqlite_schema"))  # creates sqlite_stat1 when missing
    seeded = conn.execute(text("SELECT count(*) FROM sqlite_stat1 WHERE tbl = 'notes'")).scalar()
    if seeded:
        return
    for index, stat in SQLITE_PLANNER_STATS:
        conn.execute(
            text("INSERT INTO sqlite_stat1 (tbl, idx, stat) VALUES ('notes', :i, :s)"),
            {"i": index, "s": stat},
        )
    conn.execute(text("ANALYZE sqlite_schema"))
