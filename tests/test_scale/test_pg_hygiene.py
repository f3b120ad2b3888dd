"""PostgreSQL hygiene (issue 36, item 6), on the machine's real PostgreSQL.

- `MEMVAULT_DB_APP_ROLE` is honoured by every migration: a custom role gets the grants, and
  `memvault_app` none;
- a least-privilege owner (no CREATEROLE) runs `db upgrade` once a superuser created the app
  role, on every release, also when the app URL carries a password;
- the server refuses to start while its role has per-role settings (which the role may set on
  itself), with one line;
- `tenant_deletions` is the operator's: the app may start and advance a deletion, never delete
  the record or change a finished one;
- a login without a password (`trust`) is warned about at start-up.
"""

from __future__ import annotations

import logging
import secrets
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError

from memvault.compliance.tenant_deletion import TenantDeletions
from memvault.errors import VaultError
from memvault.store.database import Database, RowSecurityNotEnforced, upgrade_database
from tests._helpers import run_sql
from tests.conftest import ServicesFactory, app_role_url, pg_url_or_skip


@dataclass
class Cluster:
    """Roles and schemas made for one test, dropped afterwards (as the superuser)."""

    admin_url: str
    roles: list[str] = field(default_factory=list)
    schemas: list[str] = field(default_factory=list)

    def run(self, url: str, *statements: str, schema: str | None = None) -> None:
        run_sql(url, *statements, schema=schema)

    def role(self, attributes: str) -> str:
        name = "mvt_h_" + uuid.uuid4().hex[:10]
        self.roles.append(name)
        self.run(self.admin_url, f"CREATE ROLE {name} {attributes}")
        return name

    def schema(self, owner: str | None = None) -> str:
        name = "mvt_" + uuid.uuid4().hex[:12]
        self.schemas.append(name)
        if owner:
            self.run(self.admin_url, f'CREATE SCHEMA "{name}" AUTHORIZATION {owner}')
        return name

    def url(self, role: str, password: str | None = None) -> str:
        url = make_url(self.admin_url).set(username=role, password=password)
        return url.render_as_string(hide_password=False)


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    made = Cluster(pg_url_or_skip())
    yield made
    engine = create_engine(made.admin_url)
    try:
        with engine.begin() as conn:
            for schema in made.schemas:
                conn.execute(text(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'))
            for role in reversed(made.roles):
                conn.execute(text(f"DROP OWNED BY {role}"))
                conn.execute(text(f"DROP ROLE {role}"))
    finally:
        engine.dispose()


def _privileges(cluster: Cluster, role: str, schema: str) -> dict[str, bool]:
    """Per table of `schema`: whether `role` holds any DML privilege on it."""
    engine = create_engine(cluster.admin_url)
    try:
        with engine.connect() as conn:
            rows = conn.execute(
                text(
                    "SELECT c.relname, has_table_privilege(:r, c.oid, "
                    "'SELECT, INSERT, UPDATE, DELETE') FROM pg_class c "
                    "WHERE c.relnamespace = CAST(:s AS regnamespace) AND c.relkind = 'r'"
                ),
                {"r": role, "s": schema},
            ).all()
    finally:
        engine.dispose()
    return {str(name): bool(held) for name, held in rows}


def test_a_custom_app_role_gets_every_grant_and_memvault_app_none(cluster: Cluster) -> None:
    app = cluster.role("LOGIN")
    schema = cluster.schema()
    upgrade_database(cluster.admin_url, schema=schema, app_role=app)
    mine = _privileges(cluster, app, schema)
    assert mine and all(held for table, held in mine.items() if table != "alembic_version")
    stray = [table for table, held in _privileges(cluster, "memvault_app", schema).items() if held]
    assert stray == []  # 0001, 0003 and 0008 used to grant memvault_app
    db = Database(cluster.url(app), schema=schema)
    try:
        db.migrate()  # the start-up checks pass for the configured role
    finally:
        db.dispose()


def test_a_least_privilege_owner_upgrades_without_createrole(cluster: Cluster) -> None:
    """The superuser creates the app role once (with its password); an owner with no
    CREATEROLE runs `db upgrade` release after release with the app URL's password."""
    owner = cluster.role("LOGIN NOCREATEROLE NOCREATEDB")
    password = secrets.token_urlsafe(18)
    app = cluster.role(f"LOGIN PASSWORD '{password}'")
    schema = cluster.schema(owner=owner)
    for _release in range(2):
        upgrade_database(cluster.url(owner), schema=schema, app_role=app, app_password=password)
    db = Database(cluster.url(app, password), schema=schema)
    try:
        db.migrate()
    finally:
        db.dispose()


def test_without_createrole_a_missing_app_role_is_refused_with_one_line(
    cluster: Cluster,
) -> None:
    owner = cluster.role("LOGIN NOCREATEROLE")
    schema = cluster.schema(owner=owner)
    missing = "mvt_h_missing_" + uuid.uuid4().hex[:8]
    with pytest.raises(VaultError) as refused:
        upgrade_database(cluster.url(owner), schema=schema, app_role=missing)
    message = str(refused.value)
    assert missing in message and "Least-privilege owner" in message and "\n" not in message


@pytest.mark.parametrize(
    "setting",
    ["SET row_security = off", "IN DATABASE {db} SET search_path = public"],
)
def test_the_server_refuses_an_app_role_with_its_own_settings(
    cluster: Cluster, setting: str
) -> None:
    app = cluster.role("LOGIN")
    schema = cluster.schema()
    db_name = make_url(cluster.admin_url).database  # the test run's (a worker's own under xdist)
    setting = setting.format(db=f'"{db_name}"')
    upgrade_database(cluster.admin_url, schema=schema, app_role=app)
    # The app role needs no privilege to set its own defaults: SQL injected as it can.
    cluster.run(cluster.url(app), f"ALTER ROLE {app} {setting}")
    db = Database(cluster.url(app), schema=schema)
    try:
        with pytest.raises(RowSecurityNotEnforced) as refused:
            db.migrate()
        message = str(refused.value)
        name = setting.split("SET ")[1].split(" =")[0]
        assert f"role {app} has per-role settings ({name}" in message
        assert "\n" not in message and "off" not in message.replace("RESET", "")
        cluster.run(cluster.admin_url, f"ALTER ROLE {app} RESET ALL")
        cluster.run(cluster.admin_url, f'ALTER ROLE {app} IN DATABASE "{db_name}" RESET ALL')
        db.migrate()  # serves again once the settings are gone
    finally:
        db.dispose()


def test_tenant_deletions_is_the_operators_table(make_services: ServicesFactory) -> None:
    services = make_services("postgres")
    services.tenants.create("doomed")
    receipt = TenantDeletions(services).delete("doomed")
    assert receipt["receipt"]["verified"] is True
    done_id = receipt["receipt"]["id"]
    with services.db.engine.connect() as conn:  # the app role's own login
        assert conn.execute(text("SELECT current_user")).scalar_one() == "memvault_app"
        conn.rollback()
        with pytest.raises(DBAPIError, match="permission denied"), conn.begin():
            conn.execute(text("DELETE FROM tenant_deletions"))
        with pytest.raises(DBAPIError, match="permission denied"), conn.begin():
            conn.execute(text("UPDATE tenant_deletions SET subject_tenant = 'acme'"))
        with conn.begin():
            changed = conn.execute(
                text("UPDATE tenant_deletions SET receipt = '{}', state = 'running'")
            )
            assert changed.rowcount == 0  # a finished deletion and its receipt stay as signed
        with pytest.raises(DBAPIError, match="row-level security"), conn.begin():
            conn.execute(
                text(
                    "INSERT INTO tenant_deletions (id, subject_tenant, state, step, progress, "
                    "receipt, created_at, updated_at) VALUES ('forged', 'acme', 'running', "
                    "'shred', '{}', NULL, 0, 0)"
                )
            )
    assert TenantDeletions(services).receipt(done_id) == receipt


def test_a_login_without_a_password_is_warned_about(
    cluster: Cluster, caplog: pytest.LogCaptureFixture
) -> None:
    app = cluster.role("LOGIN")
    schema = cluster.schema()
    upgrade_database(cluster.admin_url, schema=schema, app_role=app)
    db = Database(app_role_url(cluster.admin_url, app), schema=schema)
    try:
        with caplog.at_level(logging.WARNING):
            db.migrate()
    finally:
        db.dispose()
    warned = [r.getMessage() for r in caplog.records if "without a password" in r.getMessage()]
    assert len(warned) == 1
    assert app in warned[0] and "trust" in warned[0] and "postgresql" not in warned[0]


def test_a_deletion_job_inserted_through_sql_never_runs(make_services: ServicesFactory) -> None:
    """The app role may insert a `running` job (the server runs deletions as it), so SQL
    injected as it could too: such a job, without the seal the operator's request makes under
    the tenant's key, is refused at resume, and the tenant keeps its keys and rows."""
    services = make_services("postgres")
    services.tenants.create("acme")
    with services.db.session(None) as sess:
        sess.execute(
            text(
                "INSERT INTO tenant_deletions (id, subject_tenant, state, step, progress, "
                "receipt, created_at, updated_at) VALUES ('forged', 'acme', 'running', "
                "'created', :p, NULL, 0, 0)"
            ),
            {"p": '{"requested_by": "operator", "requested_at": 0, "deleted": {}}'},
        )
    deletions = TenantDeletions(services)
    assert deletions.resume() == 0
    assert services.keyring.has_tenant("acme")
    assert services.tenants.exists("acme")
    # The operator's own request still runs to a verified receipt.
    assert deletions.delete("acme")["receipt"]["verified"] is True
