"""The keystore is bound to its database: a worker started on the shared database with another
(fresh, local) keystore refuses to start with one line, instead of minting new tenant keys and
forking the key hierarchy; a keystore already bound to another database is refused too."""

from __future__ import annotations

from pathlib import Path

import pytest

from memvault.config import Settings
from memvault.embed.base import Embedder
from memvault.errors import VaultError
from memvault.runtime.factory import open_services
from memvault.scope import Scope
from tests.conftest import ServicesFactory


def test_a_fresh_keystore_beside_a_database_with_tenants_is_refused(
    make_services: ServicesFactory, backend: str, tmp_path: Path, embedder: Embedder
) -> None:
    first = make_services(backend, data_dir=tmp_path / "first")
    first.tenants.create("t1")
    first.vault.scoped(Scope("t1", "u1", "a1")).add("The user parks on level three")
    forked = Settings(
        data_dir=tmp_path / "second",  # its own keystore.db and master key
        database_url=first.settings.resolved_database_url(),
        db_schema=first.settings.db_schema,
        local_index_per_worker=True,
    )
    with pytest.raises(VaultError) as refused:
        open_services(forked, embedder=embedder)
    message = str(refused.value)
    assert "MEMVAULT_KEYSTORE_URL" in message and "\n" not in message


def test_a_keystore_bound_to_another_database_is_refused(
    make_services: ServicesFactory, backend: str, tmp_path: Path, embedder: Embedder
) -> None:
    first = make_services(backend, data_dir=tmp_path / "first")
    other = make_services(backend, data_dir=tmp_path / "other")
    moved = Settings(
        data_dir=tmp_path / "third",
        database_url=other.settings.resolved_database_url(),
        db_schema=other.settings.db_schema,
        keystore_url=first.settings.resolved_keystore_url(),
        master_key_file=first.settings.resolved_master_key_file(),
        local_index_per_worker=True,
    )
    first.close()
    with pytest.raises(VaultError, match="belongs to another database"):
        open_services(moved, embedder=embedder)
