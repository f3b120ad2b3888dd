"""Engine, sessions and migrations for the data store (SQLite WAL or PostgreSQL with RLS).

PostgreSQL runs with two roles:

- the **owner** (`MEMVAULT_DATABASE_ADMIN_URL`) owns the schema and the tables and runs
  `upgrade_database` (`memvault db upgrade`): Alembic, then the app role's grants;
- the **app login role** (`MEMVAULT_DATABASE_URL`, default role `memvault_app`) serves. It is
  neither superuser, nor BYPASSRLS, nor an owner, so row-level security binds it on every
  connection; there is no `SET ROLE` a `RESET ROLE` could undo. `Database.migrate()` refuses to
  serve (`RowSecurityNotEnforced`) when that does not hold.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, Engine, create_engine, event, select, text
from sqlalchemy.exc import ProgrammingError
from sqlalchemy.orm import Session, sessionmaker

from memvault.config import is_postgres_url
from memvault.errors import VaultError
from memvault.observability import instrument_engine
from memvault.store.app_role import ensure_app_role
from memvault.store.app_role import ident as _ident
from memvault.store.driver_sql import DriverConnection
from memvault.store.login_checks import warn_if_passwordless
from memvault.store.models import NoteRow, TenantRow
from memvault.store.operator_tables import operator_table_statements
from memvault.store.row_security import row_security_problems

log = logging.getLogger(__name__)
CHECKPOINT_ATTEMPTS = 50
"""Tries of `Database.checkpoint` while readers block it (about 10 s in all)."""
CHECKPOINT_BUSY_MS = 50
"""How long one checkpoint attempt waits on the busy handler for readers and writers."""
BUSY_TIMEOUT_MS = 30_000
"""How long any other SQLite statement waits for a lock another connection holds."""

MIGRATIONS_DIR = Path(__file__).resolve().parent / "migrations"
APP_ROLE = "memvault_app"
# Lists tenant ids across tenants (SECURITY DEFINER, owned by the owner; migration 0004).
TENANT_IDS_FUNCTION = "memvault_tenant_ids"
MARKED_TENANTS_FUNCTION = "memvault_marked_tenants"
EXPIRED_TENANTS_FUNCTION = "memvault_expired_tenants"
ERASING_TENANTS_FUNCTION = "memvault_erasing_tenants"
REPLAY_EXPIRED_FUNCTION = "memvault_replay_expired_tenants"
_ROLE_NAME = re.compile(r"[a-z_][a-z0-9_]{0,62}")
_UPGRADE_LOCK = 0x6D76_6462  # pg_advisory_xact_lock key: one `db upgrade` at a time per cluster

SQLITE_PLANNER_STATS = (
    # (index, stat): a large tenant's shape. Without statistics SQLite preferred
    # (tenant_id, user_id) over the primary key for `id IN (...)` and scanned a user's notes.
    ("sqlite_autoindex_notes_1", "100000 1000 1"),
    ("ix_notes_scope", "100000 1000 100 20 1"),
    ("ix_notes_dedup", "100000 1000 100 1 1"),
    ("ix_notes_pending", "100 10 1"),
)


class DatabaseNotReady(VaultError):
    """The data store must not be served: its schema is behind or cannot be read."""

    code = "database_not_ready"


class RowSecurityNotEnforced(DatabaseNotReady):
    """On PostgreSQL, the app's connection could read across tenants (RLS would not hold)."""

    code = "row_security_not_enforced"


class Database:
    """The data store's engine. `session(tenant)` pins PostgreSQL's RLS tenant per transaction.

    On PostgreSQL the URL must log in as the app role (see the module docstring); the engine
    never changes role, so the connection's rights are the login role's and nothing more.
    """

    def __init__(
        self, url: str, *, schema: str | None = None, maintenance_url: str | None = None
    ) -> None:
        self.url = url
        # PostgreSQL: the owner's URL, used only to VACUUM after an erase (see store/vacuum.py).
        self.maintenance_url = maintenance_url
        self.is_postgres = is_postgres_url(url)
        self.schema = schema
        self.engine: Engine = _make_engine(url, schema)
        instrument_engine(self.engine)  # memvault_sql_seconds per statement (no SQL text kept)
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)

    def migrate(self) -> None:
        """Make the store ready to serve, or refuse.

        SQLite (the embedded default): bring the schema to the newest Alembic revision
        (idempotent). PostgreSQL: the app role runs no DDL; check that the schema is at the
        newest revision and that row-level security binds this connection
        (`check_row_security`). Migrations run as the owner: `upgrade_database`.
        """
        if self.is_postgres:
            self.check_schema_current()
            self.check_row_security()
            return
        with self.engine.begin() as conn:
            _run_alembic(conn)
            _seed_sqlite_planner_stats(conn)

    def check_schema_current(self) -> None:
        """Raise `DatabaseNotReady` unless the schema is at the newest Alembic revision."""
        heads = set(_script().get_heads())
        try:
            with self.engine.connect() as conn:
                current = set(
                    conn.execute(text("SELECT version_num FROM alembic_version")).scalars()
                )
        except ProgrammingError:  # no such table, or no grant (a failed login still raises)
            current = set()
        if current != heads:
            raise DatabaseNotReady(
                "the database schema is missing, at another revision, or not granted to this "
                "role: run `memvault db upgrade` as the owner"
            )

    def check_row_security(self) -> None:
        """PostgreSQL: raise `RowSecurityNotEnforced` if this connection could bypass RLS.

        Refused: a login role that is (or may become) a superuser or BYPASSRLS role, owns
        (or may act as the owner of) the schema or any table in it, or may TRUNCATE a tenant
        table; and any table of the schema with a `tenant_id` column (found in the catalog)
        without ENABLE + FORCE row-level security and a policy on `app.tenant_id`.
        """
        if not self.is_postgres:
            return
        with self.engine.connect() as conn:
            problems = row_security_problems(conn)
            warn_if_passwordless(conn)
        if problems:
            raise RowSecurityNotEnforced("refusing to serve: " + "; ".join(problems))

    @contextmanager
    def session(self, tenant: str | None) -> Iterator[Session]:
        """A transaction; on PostgreSQL `app.tenant_id` is set LOCAL to it (RLS)."""
        with self._sessions() as sess, sess.begin():
            if self.is_postgres:
                sess.execute(
                    text("SELECT set_config('app.tenant_id', :t, true)"), {"t": tenant or ""}
                )
            yield sess

    @contextmanager
    def driver_transaction(self, tenant: str | None) -> Iterator[DriverConnection]:
        """A transaction on the driver's own connection, for `DriverStatement`s on the add's
        hot path: no ORM session or SQLAlchemy connection around it (about 0.1 ms less per
        transaction). Commits when the block ends, rolls back if it raises; on PostgreSQL
        `app.tenant_id` is set LOCAL to `tenant` first, exactly as `session` does.
        """
        dbapi = self.engine.raw_connection()
        try:
            if self.is_postgres:
                cursor = dbapi.cursor()
                cursor.execute("SELECT set_config('app.tenant_id', %s, true)", (tenant or "",))
                cursor.close()
            yield DriverConnection(dbapi, self.engine.dialect)
            dbapi.commit()
        except BaseException:
            dbapi.rollback()
            raise
        finally:
            dbapi.close()

    def tenant_ids(self) -> list[str]:
        """Every tenant id, sorted: the one cross-tenant read the app may make.

        On PostgreSQL it calls `memvault_tenant_ids()`, a SECURITY DEFINER function owned by
        the owner that returns tenant ids and nothing else; `tenants` rows stay under RLS.
        """
        with self.session(None) as sess:
            if self.is_postgres:
                query = text(f"SELECT tenant_id FROM {TENANT_IDS_FUNCTION}()")
                ids = sess.execute(query).scalars()
            else:
                ids = sess.execute(select(TenantRow.tenant_id)).scalars()
            return sorted(str(t) for t in ids)

    def expired_tenant_ids(self, now: float) -> list[str]:
        """Tenants with a note whose `expires_at` is at or before `now` (for the retention
        sweep; on PostgreSQL through `memvault_expired_tenants`, like `tenant_ids`)."""
        with self.session(None) as sess:
            if self.is_postgres:
                query = text(f"SELECT tenant_id FROM {EXPIRED_TENANTS_FUNCTION}(:now)")
                ids = sess.execute(query, {"now": now}).scalars()
            else:
                ids = sess.execute(
                    select(NoteRow.tenant_id)
                    .where(NoteRow.expires_at.is_not(None), NoteRow.expires_at <= now)
                    .distinct()
                ).scalars()
            return sorted(str(t) for t in ids)

    def erasing_tenant_ids(self) -> list[str]:
        """Tenants with a `running` erase job (the stalled-erase sweep's candidates; on
        PostgreSQL through `memvault_erasing_tenants`, like `tenant_ids`)."""
        with self.session(None) as sess:
            if self.is_postgres:
                query = text(f"SELECT tenant_id FROM {ERASING_TENANTS_FUNCTION}()")
                return sorted(str(t) for t in sess.execute(query).scalars())
            rows = sess.execute(
                text("SELECT DISTINCT tenant_id FROM erasure_jobs WHERE state = 'running'")
            )
            return sorted(str(t) for t in rows.scalars())

    def checkpoint(self, attempts: int = CHECKPOINT_ATTEMPTS) -> bool:
        """SQLite: checkpoint the WAL into the database file and truncate it; True when done.

        With `secure_delete` on, deleted rows were zeroed in their pages; the checkpoint
        moves those pages into the file and empties the WAL, so no copy of a deleted row stays
        in either. A reader holding an old snapshot blocks it: retried, then False (logged).
        PostgreSQL: nothing to do here (returns True); see docs/erasure.md.
        """
        if self.is_postgres:
            return True
        # A PASSIVE checkpoint first: it copies what it can without waiting for anyone, so the
        # TRUNCATE below has little left to do while it holds the write lock (issue 35).
        with self.engine.connect() as conn:
            conn.exec_driver_sql("PRAGMA wal_checkpoint(PASSIVE)")
        for attempt in range(attempts):
            with self.engine.connect() as conn:
                # A TRUNCATE checkpoint waits on the busy handler while a reader holds an old
                # snapshot: the pool's 30 s `busy_timeout` would make each attempt take 30 s.
                conn.exec_driver_sql(f"PRAGMA busy_timeout={CHECKPOINT_BUSY_MS}")
                try:
                    busy, _, _ = conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)").one()
                finally:
                    conn.exec_driver_sql(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
            if not busy:
                return True
            time.sleep(min(0.01 * (attempt + 1), 0.2))
        log.warning("sqlite WAL checkpoint stayed busy after %d attempts", attempts)
        return False

    def vacuum(self) -> bool:
        """SQLite: rewrite every page of the database from its live rows (`VACUUM`); True
        when done, False (logged) when the write lock stayed busy.

        `secure_delete` zeroes a deleted row's cell, but not a stale copy of it: when SQLite
        rebalances a b-tree it rebuilds pages and leaves the bytes of the cells it moved away in
        the page's unallocated space, so a row deleted later from its new page survived there
        (`test_erase_leaves_nothing` found an erased note's whole cell in a `notes` leaf page,
        in about 1 run in 130). The pages VACUUM writes go through the WAL; a checkpoint then
        moves them into the file. PostgreSQL: nothing to do here (returns True).
        """
        if self.is_postgres:
            return True
        try:
            with self.engine.connect() as conn:
                conn.exec_driver_sql("VACUUM")
        except self.engine.dialect.loaded_dbapi.OperationalError as exc:
            log.warning("sqlite VACUUM did not run: %s", type(exc).__name__)
            return False
        return True

    def dispose(self) -> None:
        self.engine.dispose()


def upgrade_database(
    admin_url: str,
    *,
    schema: str | None = None,
    app_role: str = APP_ROLE,
    app_password: str | None = None,
) -> str:
    """`memvault db upgrade`: migrate to the newest revision; return it.

    SQLite: the same as `Database.migrate()`. PostgreSQL: `admin_url` logs in as the tables'
    owner. Creates the schema if named, creates the login role `app_role` if missing
    (NOSUPERUSER NOBYPASSRLS; an owner without CREATEROLE needs it created once by a superuser:
    `memvault.store.app_role`), runs Alembic (which grants to `app_role`), and grants the
    role what serving needs and no more: USAGE on the schema, SELECT/INSERT/UPDATE/DELETE on
    the tables (SELECT only on `alembic_version`), EXECUTE on `memvault_tenant_ids()`, and the
    same by default on tables created later. `app_password`, if given, becomes the role's
    password (hashed to a SCRAM verifier on this side, so it never appears in SQL) unless it
    already opens the role.
    Idempotent; serialised cluster-wide by an advisory lock.
    """
    head = str(_script().get_current_head())
    if not is_postgres_url(admin_url):
        db = Database(admin_url, schema=schema)
        try:
            db.migrate()
        finally:
            db.dispose()
        return head
    if not _ROLE_NAME.fullmatch(app_role):
        raise DatabaseNotReady("the app role name must match [a-z_][a-z0-9_]* (63 at most)")
    engine = _make_engine(admin_url, schema)
    try:
        with engine.begin() as conn:
            if conn.execute(text("SELECT current_user")).scalar_one() == app_role:
                raise DatabaseNotReady(
                    f"the migration must run as the tables' owner, not as the app role "
                    f"{app_role}: set MEMVAULT_DATABASE_ADMIN_URL"
                )
            if (
                schema
                and not conn.execute(
                    text("SELECT 1 FROM pg_namespace WHERE nspname = :s"), {"s": schema}
                ).first()
            ):  # a schema a DBA made for the owner needs no CREATE on the database
                conn.execute(text(f"CREATE SCHEMA IF NOT EXISTS {_ident(schema)}"))
        with engine.begin() as conn:
            conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _UPGRADE_LOCK})
            ensure_app_role(conn, app_role, app_password)
            _run_alembic(conn, app_role)
            _grant_app_role(conn, app_role)
    finally:
        engine.dispose()
    return head


def _make_engine(url: str, schema: str | None) -> Engine:
    kwargs: dict[str, Any] = {"future": True}
    if is_postgres_url(url):
        kwargs["pool_pre_ping"] = True
        if schema:
            kwargs["connect_args"] = {"options": f"-csearch_path={schema}"}
    else:
        kwargs["connect_args"] = {"check_same_thread": False, "timeout": 30}
    engine = create_engine(url, **kwargs)
    if not is_postgres_url(url):
        event.listen(engine, "connect", _on_sqlite_connect)
    return engine


def _alembic_config() -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    return cfg


def _script() -> ScriptDirectory:
    return ScriptDirectory.from_config(_alembic_config())


def _run_alembic(conn: Connection, app_role: str | None = None) -> None:
    cfg = _alembic_config()
    cfg.attributes["connection"] = conn
    cfg.attributes["app_role"] = app_role  # the migrations grant to it (PostgreSQL)
    command.upgrade(cfg, "head")


def _grant_app_role(conn: Connection, role: str) -> None:
    """What the app role may do in the current schema: DML under RLS, nothing else."""
    schema = conn.execute(text("SELECT current_schema()")).scalar_one()
    s, r = _ident(str(schema)), _ident(role)
    for statement in (
        f"GRANT USAGE ON SCHEMA {s} TO {r}",
        f"REVOKE ALL ON ALL TABLES IN SCHEMA {s} FROM {r}",  # no TRUNCATE/TRIGGER left over
        f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA {s} TO {r}",
        f"REVOKE INSERT, UPDATE, DELETE ON {s}.alembic_version FROM {r}",
        f"GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA {s} TO {r}",
        f"ALTER DEFAULT PRIVILEGES IN SCHEMA {s} "
        f"GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO {r}",
        f"ALTER DEFAULT PRIVILEGES IN SCHEMA {s} GRANT USAGE, SELECT ON SEQUENCES TO {r}",
        f"GRANT EXECUTE ON FUNCTION {s}.{TENANT_IDS_FUNCTION}() TO {r}",
        f"GRANT EXECUTE ON FUNCTION {s}.{MARKED_TENANTS_FUNCTION}() TO {r}",
        f"GRANT EXECUTE ON FUNCTION {s}.{EXPIRED_TENANTS_FUNCTION}(double precision) TO {r}",
        f"GRANT EXECUTE ON FUNCTION {s}.{ERASING_TENANTS_FUNCTION}() TO {r}",
        f"GRANT EXECUTE ON FUNCTION {s}.{REPLAY_EXPIRED_FUNCTION}(double precision) TO {r}",
        *operator_table_statements(s, r),  # tenant_deletions: the least a deletion needs
    ):
        conn.execute(text(statement))


def _on_sqlite_connect(dbapi_conn: Any, _record: Any) -> None:
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
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
