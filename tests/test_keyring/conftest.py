"""Fixtures: keystores on real SQLite files and, when MEMVAULT_TEST_DATABASE_URL is set, PostgreSQL.

Each PostgreSQL test gets its own schema (via the connection's search_path), dropped afterwards,
so tests never see each other's rows or other engineers' tables.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import quote

import pytest
from sqlalchemy import create_engine, text

from memvault.keyring import Keyring
from memvault.scope import Scope
from memvault.testing import FakeKms

PG_URL_ENV = "MEMVAULT_TEST_DATABASE_URL"


def _postgres_schema_url(base_url: str) -> Iterator[str]:
    schema = f"kr_{uuid.uuid4().hex[:12]}"
    admin = create_engine(base_url)
    with admin.begin() as conn:
        conn.execute(text(f'CREATE SCHEMA "{schema}"'))
    separator = "&" if "?" in base_url else "?"
    try:
        yield f"{base_url}{separator}options={quote(f'-csearch_path={schema}')}"
    finally:
        with admin.begin() as conn:
            conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def keystore_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A fresh, empty keystore URL on each backend."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'keystore.db'}"
        return
    base_url = os.environ.get(PG_URL_ENV)
    if not base_url:
        pytest.skip(f"{PG_URL_ENV} is not set: PostgreSQL keystore tests skipped")
    yield from _postgres_schema_url(base_url)


@pytest.fixture
def kms() -> FakeKms:
    return FakeKms()


@pytest.fixture
def keyring(keystore_url: str, kms: FakeKms) -> Iterator[Keyring]:
    kr = Keyring.open(keystore_url, kms)
    yield kr
    kr.close()


@pytest.fixture
def scope() -> Scope:
    return Scope("tenant-a", "user-1", "agent-1")


@pytest.fixture
def sqlite_keyring_factory(tmp_path: Path) -> Iterator[Callable[[], Keyring]]:
    """Opens SQLite keyrings under tmp_path with fresh FakeKms masters; closes them all after."""
    opened: list[Keyring] = []

    def make() -> Keyring:
        kr = Keyring.open(f"sqlite:///{tmp_path / f'ks-{len(opened)}.db'}", FakeKms())
        opened.append(kr)
        return kr

    yield make
    for kr in opened:
        kr.close()
