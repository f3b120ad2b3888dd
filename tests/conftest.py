"""Fixtures shared by the service-level tests: one real embedder, real SQLite and PostgreSQL."""

from __future__ import annotations

import hashlib
import os
import uuid

# Plain notes unless a test asks for A-MEM (`make_services(..., amem=True)`): A-MEM merges
# near-duplicates written the same day, which tests of the vault's own guarantees do not want.
os.environ.setdefault("MEMVAULT_AMEM", "off")
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager as ContextManager
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.pool import NullPool

from memvault.config import Settings
from memvault.embed.base import Embedder
from memvault.runtime.factory import Services, open_services
from memvault.store.app_role import ensure_app_role
from memvault.store.database import _UPGRADE_LOCK, APP_ROLE
from tests.pg_schemas import new_migrated_schema

PG_ENV = "MEMVAULT_TEST_DATABASE_URL"
SHARED_DATA = Path(
    os.environ.get("MEMVAULT_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data")
)

_THROWAWAY_DATABASE: str | None = None
"""This xdist worker's own PostgreSQL database while the session runs (`pg_worker_database`)."""


@pytest.hookimpl(tryfirst=True)  # before xdist's own, which reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under pytest-xdist (`--dist loadgroup`): the tests sharing a fixture wider than one test,
    a live server or a loaded model, stay on one worker, which builds it once (not once per
    worker): per module for a module's or class's fixture, per package for a package's, and
    per folder for a session fixture a sub-folder's conftest adds (test_embed's models). A test
    already in a group keeps it; the rest are dealt out one by one."""
    for item in items:
        if not item.get_closest_marker("xdist_group"):
            group = _shared_fixture_group(item)
            if group:
                item.add_marker(pytest.mark.xdist_group(group))
        if config.getoption("loadgroup", default=False) and hasattr(item, "_id"):
            _suffix_group(item)


def _shared_fixture_group(item: pytest.Item) -> str | None:
    groups: dict[int, str] = {}
    for defs in item._fixtureinfo.name2fixturedefs.values():  # type: ignore[attr-defined]
        fixture = defs[-1]
        if fixture.scope in ("module", "class"):
            groups[1] = item.nodeid.split("::")[0]
        elif fixture.scope == "package" or (
            fixture.scope == "session"
            and fixture.baseid not in ("", "tests")
            and len(defs) == 1  # an override of a root fixture is built per worker anyway
            and not getattr(fixture, "_autouse", False)
        ):
            groups[0] = fixture.baseid
    return groups[min(groups)] if groups else None


def _suffix_group(item: pytest.Item) -> None:
    """xdist 3.8 tells the scheduler an item's group by a `@group` suffix on its node id, which
    it writes to `item._nodeid`; pytest 9.2 keeps the id in `item._id` (structured), so the
    suffix is lost and every group is dealt out test by test (pytest-xdist issue 1386). Until
    xdist writes it there, this does, as xdist would."""
    names = sorted(
        str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))
        for mark in item.iter_markers("xdist_group")
    )
    if names and "@" not in item.nodeid.rpartition("]")[2]:
        node_id = item._id  # type: ignore[attr-defined]
        item._id = type(node_id).parse(f"{item.nodeid}@{'_'.join(names)}")  # type: ignore[attr-defined]


@pytest.fixture(scope="session", autouse=True)
def pg_worker_database() -> Iterator[None]:
    """Under pytest-xdist, a PostgreSQL database of this worker's own for the whole session.

    Schemas are per test already, but advisory locks (the scope guard's, the erase-job claim,
    the audit appender's) are per *database*: two workers in one database would block each
    other's tenants of the same name. So each worker gets `<db>_<worker>_<run>`, made fresh
    from the server's template and dropped at the end, and `MEMVAULT_TEST_DATABASE_URL` names
    it for every test of the worker. Roles are cluster-wide: the app role is made here once,
    under the upgrade lock in the base database (two workers' `db upgrade`s would race to
    CREATE ROLE it), and the roles tests make carry random names. Serial runs (`-n 0`) use
    the base database as before.
    """
    global _THROWAWAY_DATABASE
    base = os.environ.get(PG_ENV)
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if not base or not worker:
        yield
        return
    run = os.environ.get("PYTEST_XDIST_TESTRUNUID", uuid.uuid4().hex)[:8]
    url = make_url(base)
    name = f"{url.database}_{worker}_{run}"
    engine = create_engine(base, isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
            # A throwaway database need not wait for each commit's WAL flush (2.5 ms here): a
            # commit is as visible and as ordered, only lost if the server itself crashed.
            conn.execute(text(f'ALTER DATABASE "{name}" SET synchronous_commit = off'))
        locking = create_engine(base)
        try:
            with locking.begin() as conn:
                conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _UPGRADE_LOCK})
                ensure_app_role(conn, APP_ROLE, None)
        finally:
            locking.dispose()
        os.environ[PG_ENV] = url.set(database=name).render_as_string(hide_password=False)
        _THROWAWAY_DATABASE = name
        yield
    finally:
        _THROWAWAY_DATABASE = None
        os.environ[PG_ENV] = base
        with engine.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        engine.dispose()


@pytest.fixture(scope="session")
def cluster_turns() -> Iterator[Callable[[bool], ContextManager[None]]]:
    """Turns on the PostgreSQL cluster across xdist workers: a readers-writer lock.

    Every test holds the shared side; a test marked `cluster_exclusive` takes the exclusive one,
    so it runs while no other worker's test is in flight. Such a test reads what the cluster
    shares, e.g. a VACUUM FULL keeps deleted rows any running transaction in *any* database
    might still see (its snapshot's xmin is cluster-wide), so a carve of the keystore's files
    would find an erased key copied into the new heap. The lock is a session advisory lock in
    the base database, keyed by the run (PostgreSQL queues a shared request behind a waiting
    exclusive one: no starvation). Without xdist or PostgreSQL: no lock.
    """
    base = os.environ.get(PG_ENV)
    run = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    if not base or not run or not os.environ.get("PYTEST_XDIST_WORKER"):

        @contextmanager
        def free(exclusive: bool) -> Iterator[None]:
            yield

        yield free
        return
    digest = hashlib.sha256(f"memvault.tests.cluster\0{run}".encode()).digest()
    key = int.from_bytes(digest[:8], "big", signed=True)
    engine = create_engine(base, isolation_level="AUTOCOMMIT", poolclass=NullPool)
    conn = engine.connect()

    @contextmanager
    def turn(exclusive: bool) -> Iterator[None]:
        mode = "" if exclusive else "_shared"
        conn.execute(text(f"SELECT pg_advisory_lock{mode}(:k)"), {"k": key})
        try:
            yield
        finally:
            conn.execute(text(f"SELECT pg_advisory_unlock{mode}(:k)"), {"k": key})

    try:
        yield turn
    finally:
        conn.close()
        engine.dispose()


@pytest.fixture(autouse=True)
def cluster_turn(
    request: pytest.FixtureRequest, cluster_turns: Callable[[bool], ContextManager[None]]
) -> Iterator[None]:
    """This test's turn on the cluster (`cluster_turns`): shared, or exclusive when marked."""
    with cluster_turns(request.node.get_closest_marker("cluster_exclusive") is not None):
        yield


def pg_url_or_skip() -> str:
    url = os.environ.get(PG_ENV)
    if not url:
        pytest.skip(f"{PG_ENV} is not set: PostgreSQL tests need a server")
    return url


@pytest.fixture(scope="session")
def embedder() -> Embedder:
    """The real default embedder (USE multilingual v3), loaded once per test session."""
    from memvault.embed import make_embedder

    model = make_embedder("use-m3", data_dir=Path("/nonexistent-unused"))
    model.embed_query("warm up")
    return model


@pytest.fixture(scope="session")
def screen():  # type: ignore[no-untyped-def]
    from memvault.screening import Screen

    return Screen()


def app_role_url(admin_url: str, role: str = APP_ROLE) -> str:
    """The test server's URL logging in as the app role (trust auth: no password)."""
    url = make_url(admin_url).set(username=role, password=None)
    return url.render_as_string(hide_password=False)


def migrated_pg_schema(admin_url: str) -> str:
    """A fresh schema migrated by the owner (`memvault db upgrade`), granted to the app role.

    The migration runs for real once per process and database, and is replayed after that
    (tests/pg_schemas.py: checked identical, a fraction of the cost)."""
    return new_migrated_schema(admin_url)


def drop_schema(url: str, schema: str) -> None:
    """Drop a test's schema, unless it lies in this xdist worker's own database: that database
    goes whole at the end of the session (`pg_worker_database`), so a DROP SCHEMA ... CASCADE per
    test (some 40 relations each) would only cost time."""
    if _THROWAWAY_DATABASE and make_url(url).database == _THROWAWAY_DATABASE:
        return
    engine = create_engine(url)
    with engine.begin() as conn:
        conn.execute(text(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'))
    engine.dispose()


ServicesFactory = Callable[..., Services]


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest) -> str:
    """Storage backend for tests that must hold on both."""
    if request.param == "postgres":
        pg_url_or_skip()
    return str(request.param)


class OpenedServices:
    """What a fixture opened: services to close and PostgreSQL schemas to drop at teardown."""

    def __init__(self) -> None:
        self.services: list[Services] = []
        self.schemas: list[tuple[str, str]] = []

    def settings(self, backend: str, data_dir: Path, **fields: Any) -> Settings:
        """Settings on SQLite in `data_dir`, or on PostgreSQL in a fresh schema. As deployed:
        the owner (the test server's superuser) migrates the schema, and the app serves as the
        login role `memvault_app`, which RLS binds."""
        if backend != "postgres":
            return Settings(data_dir=data_dir, **fields)
        admin_url = pg_url_or_skip()
        schema = migrated_pg_schema(admin_url)
        self.schemas.append((admin_url, schema))
        return Settings(
            data_dir=data_dir, database_url=app_role_url(admin_url), db_schema=schema, **fields
        )

    def open(self, settings: Settings, **kw: Any) -> Services:
        services = open_services(settings, **kw)
        self.services.append(services)
        return services

    def close(self) -> None:
        for services in self.services:
            services.close()
        for url, schema in self.schemas:
            drop_schema(url, schema)


@pytest.fixture
def make_services(tmp_path: Path, embedder: Embedder, screen: object) -> Iterator[ServicesFactory]:
    """Build real services in a fresh data dir on SQLite or PostgreSQL (a schema per call)."""
    opened = OpenedServices()

    def factory(
        backend: str = "sqlite", *, data_dir: Path | None = None, amem: bool = False, **kw: object
    ) -> Services:
        root = data_dir or tmp_path / f"data{len(opened.services)}"
        settings = opened.settings(backend, root, amem=amem)
        kw.setdefault("screen", screen)
        return opened.open(settings, embedder=embedder, **kw)

    yield factory
    opened.close()
