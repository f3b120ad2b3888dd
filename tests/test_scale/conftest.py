"""Fixtures of the scale-path tests."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from bench._harness import ensure_wal_recycle_off

from memvault.config import Settings
from memvault.embed.base import Embedder
from memvault.runtime.factory import Services, open_services
from tests.conftest import PG_ENV, app_role_url, drop_schema, migrated_pg_schema, pg_url_or_skip
from tests.test_scale.pg import scratch_database


@pytest.fixture(scope="session", autouse=True)
def keystore_server_erasable() -> None:
    """A PostgreSQL keystore needs `wal_recycle = off` (docs/keyring.md), and memvault refuses
    one without it; the test server is configured so, as an operator would (ALTER SYSTEM)."""
    url = os.environ.get(PG_ENV)
    if url:
        ensure_wal_recycle_off(url)


@pytest.fixture
def two_workers(tmp_path: Path, embedder: Embedder) -> Iterator[tuple[Services, Services]]:
    """Two workers' services (each with a local index) on one PostgreSQL database and keystore."""
    admin = pg_url_or_skip()
    schema = migrated_pg_schema(admin)
    opened: list[Services] = []
    try:
        with scratch_database(admin) as keystore:
            for name in ("a", "b"):
                settings = Settings(
                    data_dir=tmp_path / name,
                    database_url=app_role_url(admin),
                    db_schema=schema,
                    keystore_url=keystore,
                    master_key_file=tmp_path / "master.key",
                    local_index_per_worker=True,
                )
                opened.append(open_services(settings, embedder=embedder))
            yield opened[0], opened[1]
            for services in opened:
                services.close()
            opened.clear()
    finally:
        for services in opened:
            services.close()
        drop_schema(admin, schema)
