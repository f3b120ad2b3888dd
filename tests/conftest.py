"""Fixtures shared by the service-level tests: one real embedder, real SQLite and PostgreSQL."""

from __future__ import annotations

import os
import uuid

# Plain notes unless a test asks for A-MEM (`make_services(..., amem=True)`): A-MEM merges
# near-duplicates written the same day, which tests of the vault's own guarantees do not want.
os.environ.setdefault("MEMVAULT_AMEM", "off")
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from memvault.config import Settings
from memvault.embed.base import Embedder
from memvault.runtime.factory import Services, open_services
from memvault.store.database import APP_ROLE, upgrade_database

PG_ENV = "MEMVAULT_TEST_DATABASE_URL"
SHARED_DATA = Path(
    os.environ.get("MEMVAULT_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data")
)


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
    """A fresh schema migrated by the owner (`memvault db upgrade`), granted to the app role."""
    schema = "mvt_" + uuid.uuid4().hex[:12]
    try:
        upgrade_database(admin_url, schema=schema)
    except BaseException:
        drop_schema(admin_url, schema)
        raise
    return schema


def drop_schema(url: str, schema: str) -> None:
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


@pytest.fixture
def make_services(tmp_path: Path, embedder: Embedder, screen: object) -> Iterator[ServicesFactory]:
    """Build real services in a fresh data dir on SQLite or PostgreSQL (a schema per call)."""
    opened: list[Services] = []
    schemas: list[tuple[str, str]] = []

    def factory(
        backend: str = "sqlite", *, data_dir: Path | None = None, amem: bool = False, **kw: object
    ) -> Services:
        root = data_dir or tmp_path / f"data{len(opened)}"
        settings = Settings(data_dir=root, amem=amem)
        if backend == "postgres":
            # As deployed: the owner (the test server's superuser) migrates a fresh schema,
            # and the app serves as the login role `memvault_app`, which RLS binds.
            admin_url = pg_url_or_skip()
            schema = migrated_pg_schema(admin_url)
            schemas.append((admin_url, schema))
            settings = Settings(
                data_dir=root, database_url=app_role_url(admin_url), db_schema=schema, amem=amem
            )
        kw.setdefault("screen", screen)
        services = open_services(settings, embedder=embedder, **kw)  # type: ignore[arg-type]
        opened.append(services)
        return services

    yield factory
    for services in opened:
        services.close()
    for url, schema in schemas:
        drop_schema(url, schema)
