"""PostgreSQL row-level security, as the real app login role (issue 7, item 9).

The app logs in as `memvault_app` (no `SET ROLE`), so nothing the app's own connection can say
(`RESET ROLE`, `SET ROLE`, `row_security = off`, no tenant set) reads across tenants, and start-up
refuses a connection or a schema under which that would not hold.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest
from sqlalchemy import Connection, Table, create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError
from typer.testing import CliRunner

from memvault.cli.db import db_app
from memvault.keyring import Keyring
from memvault.keyring._master import LocalMasterKey
from memvault.store.database import (
    APP_ROLE,
    Database,
    DatabaseNotReady,
    RowSecurityNotEnforced,
    upgrade_database,
)
from memvault.store.models import Base, TenantRow
from memvault.tenancy.principals import ApiKeys
from memvault.tenancy.tenants import Tenants
from tests._helpers import run_sql
from tests.conftest import app_role_url, drop_schema, migrated_pg_schema, pg_url_or_skip

# The tables the issue names; the tests themselves walk every table the catalog lists.
NAMED = {"tenants", "api_keys", "audit_events", "refusals", "idempotency_keys", "notes"}


@dataclass
class Pg:
    admin_url: str
    schema: str

    @property
    def app_url(self) -> str:
        return app_role_url(self.admin_url)

    def admin(self, *statements: str) -> None:
        """Run statements as the owner (the test server's superuser) in the schema."""
        run_sql(self.admin_url, *statements, schema=self.schema)

    def database(self, url: str | None = None) -> Database:
        return Database(url or self.app_url, schema=self.schema)


@pytest.fixture
def pg() -> Iterator[Pg]:
    admin_url = pg_url_or_skip()
    schema = migrated_pg_schema(admin_url)
    try:
        yield Pg(admin_url, schema)
    finally:
        drop_schema(admin_url, schema)


@pytest.fixture
def app_db(pg: Pg) -> Iterator[Database]:
    db = pg.database()
    db.migrate()  # the start-up checks pass for the real app role
    yield db
    db.dispose()


@pytest.fixture
def throwaway_role(pg: Pg) -> Iterator[Callable[[str], str]]:
    """Creates cluster-wide roles (`mvt_r_…`) and drops them, and what they own, afterwards."""
    made: list[str] = []

    def make(attributes: str) -> str:
        name = "mvt_r_" + uuid.uuid4().hex[:10]
        made.append(name)
        pg.admin(f"CREATE ROLE {name} {attributes}")
        return name

    yield make
    engine = create_engine(pg.admin_url)
    try:
        with engine.begin() as conn:
            conn.execute(text(f'DROP SCHEMA IF EXISTS "{pg.schema}" CASCADE'))
            for name in reversed(made):
                conn.execute(text(f"DROP OWNED BY {name}"))
                conn.execute(text(f"DROP ROLE {name}"))
    finally:
        engine.dispose()


def _api_keys(db: Database) -> ApiKeys:
    """Key issuing with a real keyring (in-memory keystore, a random master key)."""
    import os

    return ApiKeys(db, lambda: 0.0, Keyring.open("sqlite://", LocalMasterKey(os.urandom(32))))


def tenant_tables(conn: Connection) -> set[str]:
    """Every table of the current schema with a `tenant_id` column, from the catalog."""
    return set(
        conn.execute(
            text(
                "SELECT table_name FROM information_schema.columns "
                "WHERE table_schema = current_schema() AND column_name = 'tenant_id'"
            )
        ).scalars()
    )


def a_row(table: Table, tenant: str) -> dict[str, object]:
    fill = {int: 0, float: 0.0, bytes: b"\x00", str: "x"}
    return {
        c.name: tenant if c.name == "tenant_id" else fill[c.type.python_type] for c in table.columns
    }


def seed_every_tenant_table(db: Database, tenants: tuple[str, ...] = ("t1", "t2")) -> set[str]:
    """One row per tenant in every table with a tenant_id, written by the app under RLS."""
    with db.engine.connect() as conn:
        tables = tenant_tables(conn)
    models = {t.name: t for t in Base.metadata.sorted_tables if "tenant_id" in t.columns}
    assert set(models) == tables, "the models and the migrated schema disagree"
    assert tables >= NAMED
    for tenant in tenants:
        with db.session(tenant) as sess:
            for name in sorted(tables):
                sess.execute(models[name].insert().values(**a_row(models[name], tenant)))
    return tables


def count(conn: Connection, table: str, where: str = "") -> int:
    return int(conn.execute(text(f"SELECT count(*) FROM {table} {where}")).scalar_one())


# --- the app's own connection cannot switch RLS off --------------------------------------------


def test_reset_role_on_the_apps_connection_reads_nothing_across_tenants(app_db: Database) -> None:
    tables = seed_every_tenant_table(app_db)
    with app_db.engine.connect() as conn:
        conn.execute(text("RESET ROLE"))
        conn.execute(text("RESET ALL"))
        who = conn.execute(text("SELECT current_user, session_user")).one()
        assert tuple(who) == (APP_ROLE, APP_ROLE)
        for table in sorted(tables):  # no tenant set at all: nothing
            assert count(conn, table) == 0, table
        conn.execute(text("SELECT set_config('app.tenant_id', 't2', false)"))
        conn.execute(text("RESET ROLE"))
        for table in sorted(tables):  # tenant t2: its own row, never t1's
            assert count(conn, table, "WHERE tenant_id = 't1'") == 0, table
            assert count(conn, table) == 1, table
        conn.execute(text("SELECT set_config('app.tenant_id', 't1', false)"))
        for table in sorted(tables):  # the control: t1's row is there to be hidden
            assert count(conn, table, "WHERE tenant_id = 't1'") == 1, table


@pytest.mark.parametrize("setting", [None, "", "*", "%", "t1%", "T1"])
def test_a_missing_or_wild_tenant_setting_reads_nothing(
    app_db: Database, setting: str | None
) -> None:
    tables = seed_every_tenant_table(app_db)
    with app_db.engine.connect() as conn:
        if setting is not None:
            conn.execute(text("SELECT set_config('app.tenant_id', :t, false)"), {"t": setting})
        for table in sorted(tables):
            assert count(conn, table) == 0, table
    with app_db.session(setting) as sess:
        for table in sorted(tables):
            assert sess.execute(text(f"SELECT count(*) FROM {table}")).scalar_one() == 0, table


def test_a_driver_transaction_reads_and_writes_only_its_tenant(app_db: Database) -> None:
    """The add's transaction on the driver's connection (`Database.driver_transaction`) is
    bound by row-level security like a session: its tenant's rows only, in and out, and the
    setting ends with the transaction (the pooled connection carries no tenant after it)."""
    tables = seed_every_tenant_table(app_db)
    with app_db.driver_transaction("t2") as conn:
        cursor = conn.dbapi.cursor()
        for table in sorted(tables):
            cursor.execute(f"SELECT tenant_id FROM {table}")
            assert [row[0] for row in cursor.fetchall()] == ["t2"], table
    refused = pytest.raises(psycopg.errors.InsufficientPrivilege)
    with refused, app_db.driver_transaction("t2") as conn:  # another tenant's row
        conn.dbapi.cursor().execute(
            "INSERT INTO corpus_stats (tenant_id, namespace, doc_count, token_total) "
            "VALUES ('t1', 'elsewhere', 0, 0)"
        )
    with app_db.driver_transaction("t1") as conn:  # the control: t1 may write its own
        conn.dbapi.cursor().execute(
            "INSERT INTO corpus_stats (tenant_id, namespace, doc_count, token_total) "
            "VALUES ('t1', 'elsewhere', 0, 0)"
        )
    with app_db.engine.connect() as plain:
        for table in sorted(tables):
            assert count(plain, table) == 0, table


@pytest.mark.parametrize(
    "statement",
    [
        "SET ROLE postgres",
        "SET SESSION AUTHORIZATION postgres",
        "ALTER TABLE notes DISABLE ROW LEVEL SECURITY",
        "ALTER TABLE tenants NO FORCE ROW LEVEL SECURITY",
        "DROP POLICY tenant_isolation ON api_keys",
        "TRUNCATE refusals",
        "ALTER ROLE memvault_app BYPASSRLS",
        "CREATE POLICY everyone ON audit_events USING (true)",
    ],
)
def test_the_app_role_cannot_lift_row_level_security(app_db: Database, statement: str) -> None:
    with app_db.engine.connect() as conn, pytest.raises(DBAPIError):
        conn.execute(text(statement))


def test_row_security_off_errors_instead_of_reading(app_db: Database) -> None:
    seed_every_tenant_table(app_db)
    with app_db.engine.connect() as conn:
        conn.execute(text("SET row_security = off"))
        with pytest.raises(DBAPIError, match="row-level security"):
            conn.execute(text("SELECT count(*) FROM notes"))


# --- tenants: RLS, creation under WITH CHECK, and the one narrow listing ----------------------


def test_tenants_rows_are_per_tenant_and_ids_list_through_the_function(app_db: Database) -> None:
    tenants = Tenants(app_db, _api_keys(app_db), lambda: 0.0)
    tenants.create("t1")
    tenants.create("t2")
    assert app_db.tenant_ids() == ["t1", "t2"]
    assert tenants.exists("t1") and tenants.exists("t2")
    with app_db.session(None) as sess:
        assert sess.execute(text("SELECT count(*) FROM tenants")).scalar_one() == 0
    with app_db.session("t1") as sess:
        assert list(sess.execute(text("SELECT tenant_id FROM tenants")).scalars()) == ["t1"]
    with pytest.raises(DBAPIError, match="row-level security"), app_db.session("t1") as sess:
        sess.add(TenantRow(tenant_id="t3", created_at=0.0, policy_json="{}"))
    assert app_db.tenant_ids() == ["t1", "t2"]


def test_the_tenant_id_function_is_not_public(pg: Pg, app_db: Database) -> None:
    with app_db.engine.connect() as conn:
        public = conn.execute(
            text(
                "SELECT count(*) FROM pg_proc p, aclexplode(p.proacl) a "
                "WHERE p.proname = 'memvault_tenant_ids' "
                "AND p.pronamespace = current_schema()::regnamespace AND a.grantee = 0"
            )
        ).scalar_one()
        definer = conn.execute(
            text(
                "SELECT prosecdef FROM pg_proc WHERE proname = 'memvault_tenant_ids' "
                "AND pronamespace = current_schema()::regnamespace"
            )
        ).scalar_one()
    assert public == 0 and definer


def test_sqlite_tenant_ids(tmp_path: Path) -> None:
    db = Database(f"sqlite:///{tmp_path / 'm.db'}")
    try:
        db.migrate()
        Tenants(db, _api_keys(db), lambda: 0.0).create("beta")
        Tenants(db, _api_keys(db), lambda: 0.0).create("alpha")
        assert db.tenant_ids() == ["alpha", "beta"]
    finally:
        db.dispose()


# --- start-up refuses what would let RLS lapse -------------------------------------------------


def refused(db: Database) -> str:
    try:
        with pytest.raises(RowSecurityNotEnforced) as caught:
            db.migrate()
    finally:
        db.dispose()
    message = str(caught.value)
    assert "\n" not in message and "@" not in message  # one line, no URL
    return message


def as_role(pg: Pg, role: str) -> Database:
    return pg.database(app_role_url(pg.admin_url, role))


def test_startup_refuses_a_superuser(pg: Pg) -> None:
    assert "is a superuser" in refused(pg.database(pg.admin_url))


def test_startup_refuses_a_bypassrls_role(pg: Pg, throwaway_role: Callable[[str], str]) -> None:
    role = throwaway_role("LOGIN BYPASSRLS")
    pg.admin(f"GRANT USAGE ON SCHEMA {pg.schema} TO {role}")
    pg.admin(f"GRANT SELECT ON ALL TABLES IN SCHEMA {pg.schema} TO {role}")
    assert f"{role} is a BYPASSRLS role" in refused(as_role(pg, role))


def test_startup_refuses_a_member_of_a_bypassrls_role(
    pg: Pg, throwaway_role: Callable[[str], str]
) -> None:
    bypass = throwaway_role("NOLOGIN BYPASSRLS")
    role = throwaway_role("LOGIN")
    pg.admin(f"GRANT {bypass} TO {role}", f"GRANT USAGE ON SCHEMA {pg.schema} TO {role}")
    pg.admin(f"GRANT SELECT ON ALL TABLES IN SCHEMA {pg.schema} TO {role}")
    assert f"may act as {bypass}" in refused(as_role(pg, role))


def test_startup_refuses_a_table_owner(pg: Pg, throwaway_role: Callable[[str], str]) -> None:
    role = throwaway_role("LOGIN")
    pg.admin(f"GRANT USAGE ON SCHEMA {pg.schema} TO {role}")
    pg.admin(f"GRANT SELECT ON ALL TABLES IN SCHEMA {pg.schema} TO {role}")
    pg.admin(f"ALTER TABLE refusals OWNER TO {role}")
    assert "owns tables (refusals)" in refused(as_role(pg, role))


def test_startup_refuses_a_member_of_the_owner_role(
    pg: Pg, throwaway_role: Callable[[str], str]
) -> None:
    owner = throwaway_role("NOLOGIN")
    pg.admin(f"ALTER TABLE audit_events OWNER TO {owner}", f"GRANT {owner} TO {APP_ROLE}")
    try:
        assert "owns tables (audit_events)" in refused(pg.database())
    finally:
        pg.admin(f"REVOKE {owner} FROM {APP_ROLE}")


def test_startup_refuses_a_schema_owner(pg: Pg, throwaway_role: Callable[[str], str]) -> None:
    role = throwaway_role("LOGIN")
    pg.admin(f"GRANT SELECT ON ALL TABLES IN SCHEMA {pg.schema} TO {role}")
    pg.admin(f"ALTER SCHEMA {pg.schema} OWNER TO {role}")
    assert f"owns the schema {pg.schema}" in refused(as_role(pg, role))


@pytest.mark.parametrize(
    ("statements", "named"),
    [
        (["ALTER TABLE audit_events DISABLE ROW LEVEL SECURITY"], "audit_events"),
        (["ALTER TABLE tenants NO FORCE ROW LEVEL SECURITY"], "tenants"),
        (["ALTER TABLE idempotency_keys NO FORCE ROW LEVEL SECURITY"], "idempotency_keys"),
        (["DROP POLICY tenant_isolation ON api_keys"], "api_keys"),
        (["CREATE POLICY leak ON notes FOR SELECT USING (true)"], "notes"),
        (
            [
                "CREATE TABLE extra_things (tenant_id varchar(128), body text)",
                f"GRANT SELECT ON extra_things TO {APP_ROLE}",
            ],
            "extra_things",
        ),
        (
            [
                "CREATE TABLE forced_no_policy (tenant_id varchar(128))",
                "ALTER TABLE forced_no_policy ENABLE ROW LEVEL SECURITY",
                "ALTER TABLE forced_no_policy FORCE ROW LEVEL SECURITY",
            ],
            "forced_no_policy",
        ),
    ],
)
def test_startup_refuses_a_tenant_table_without_forced_rls(
    pg: Pg, statements: list[str], named: str
) -> None:
    pg.admin(*statements)
    message = refused(pg.database())
    assert re.search(
        f"not enabled, forced and bound to app.tenant_id by a policy on {named}(;|$)", message
    ), message


def test_startup_refuses_truncate(pg: Pg) -> None:
    pg.admin(f"GRANT TRUNCATE ON refusals TO {APP_ROLE}")
    assert "may TRUNCATE (which ignores RLS) refusals" in refused(pg.database())


def test_startup_refuses_an_unmigrated_schema(pg: Pg) -> None:
    pg.admin(f'DROP SCHEMA "{pg.schema}" CASCADE', f'CREATE SCHEMA "{pg.schema}"')
    db = pg.database()
    try:
        with pytest.raises(DatabaseNotReady, match="memvault db upgrade"):
            db.migrate()
    finally:
        db.dispose()


# --- `memvault db upgrade` ----------------------------------------------------------------------


def test_db_upgrade_from_scratch_via_the_cli(tmp_path: Path) -> None:
    admin_url = pg_url_or_skip()
    schema = "mvt_" + uuid.uuid4().hex[:12]
    role = "mvt_app_" + uuid.uuid4().hex[:10]
    app_url = (
        make_url(admin_url)
        .set(username=role, password="s3cret-app-pw")
        .render_as_string(hide_password=False)
    )
    env = {
        "MEMVAULT_DATA_DIR": str(tmp_path),
        "MEMVAULT_DATABASE_ADMIN_URL": admin_url,
        "MEMVAULT_DATABASE_URL": app_url,
        "MEMVAULT_DB_APP_ROLE": role,
        "MEMVAULT_DB_SCHEMA": schema,
    }
    runner = CliRunner()
    engine = create_engine(admin_url)
    try:
        for _ in range(2):  # from scratch, then idempotent
            result = runner.invoke(db_app, ["upgrade"], env=env)
            assert result.exit_code == 0, result.output
            assert "passes the start-up checks" in result.output
            assert "s3cret" not in result.output
        with engine.connect() as conn:
            attrs = conn.execute(
                text(
                    "SELECT rolcanlogin, rolsuper, rolbypassrls, rolpassword "
                    "FROM pg_authid WHERE rolname = :r"
                ),
                {"r": role},
            ).one()
        assert attrs[:3] == (True, False, False)
        assert attrs[3].startswith("SCRAM-SHA-256$")
        db = Database(app_url, schema=schema)
        try:
            db.migrate()
            Tenants(db, _api_keys(db), lambda: 0.0).create("acme")
            assert db.tenant_ids() == ["acme"]
            with db.engine.connect() as conn:
                assert conn.execute(text("SELECT current_user")).scalar_one() == role
                assert count(conn, "tenants") == 0
        finally:
            db.dispose()
    finally:
        with engine.begin() as conn:
            conn.execute(text(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'))
            if conn.execute(text("SELECT 1 FROM pg_roles WHERE rolname = :r"), {"r": role}).first():
                conn.execute(text(f"DROP OWNED BY {role}"))
                conn.execute(text(f"DROP ROLE {role}"))
        engine.dispose()


def test_db_upgrade_by_a_non_superuser_owner(throwaway_role: Callable[[str], str]) -> None:
    """The production shape: the owner is no superuser, so FORCE binds it too."""
    admin_url = pg_url_or_skip()
    owner = throwaway_role("LOGIN CREATEROLE")
    app = throwaway_role("LOGIN")
    schema = "mvt_" + uuid.uuid4().hex[:12]
    Pg(admin_url, "public").admin(f'CREATE SCHEMA "{schema}" AUTHORIZATION {owner}')
    try:
        upgrade_database(app_role_url(admin_url, owner), schema=schema, app_role=app)
        db = Database(app_role_url(admin_url, app), schema=schema)
        try:
            db.migrate()
            Tenants(db, _api_keys(db), lambda: 0.0).create("acme")
            Tenants(db, _api_keys(db), lambda: 0.0).create("beta")
            assert db.tenant_ids() == ["acme", "beta"]  # the definer reads as the owner
            with db.session("acme") as sess:
                assert sess.execute(text("SELECT count(*) FROM tenants")).scalar_one() == 1
        finally:
            db.dispose()
    finally:
        drop_schema(admin_url, schema)


def test_db_upgrade_refuses_to_migrate_as_the_app_role(pg: Pg) -> None:
    env = {
        "MEMVAULT_DATABASE_URL": pg.app_url,
        "MEMVAULT_DATABASE_ADMIN_URL": None,
        "MEMVAULT_DB_SCHEMA": pg.schema,
    }
    result = CliRunner().invoke(db_app, ["upgrade"], env=env)
    assert result.exit_code == 1
    assert "not as the app role memvault_app" in result.output
    assert "Traceback" not in result.output


def test_db_upgrade_on_sqlite(tmp_path: Path) -> None:
    result = CliRunner().invoke(db_app, ["upgrade", "--data-dir", str(tmp_path / "d")])
    assert result.exit_code == 0, result.output
    assert "schema at revision" in result.output
    assert (tmp_path / "d" / "memvault.db").stat().st_mode & 0o777 == 0o600
