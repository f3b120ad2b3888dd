"""Crypto-shredding on a PostgreSQL keystore: after an erase no file of the keystore database
and no WAL segment of the cluster holds the erased user's wrapped data keys (before: dead tuples
kept them, and the master key every worker holds decrypted the erased notes); the receipt signs
what no server reaches. And a data backup taken before the erase, restored after it into a fresh
database beside the current keystore, decrypts nobody's notes but the erased user's... none of
them, and every other user's."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from memvault.compliance.wiring import install
from memvault.config import Settings
from memvault.embed.base import Embedder
from memvault.errors import VaultError
from memvault.runtime.factory import Services, open_services
from memvault.scope import Scope
from tests.conftest import app_role_url, drop_schema, migrated_pg_schema, pg_url_or_skip
from tests.test_scale.pg import carve, database_files, scratch_database, wrapped_keys

GONE, STAYS = "usrqzcarved", "usrqzkept"


@pytest.fixture
def keystore_url() -> Iterator[str]:
    admin = pg_url_or_skip()
    with scratch_database(admin) as url:
        yield url


@pytest.fixture
def data_schema() -> Iterator[str]:
    admin = pg_url_or_skip()
    schema = migrated_pg_schema(admin)
    yield schema
    drop_schema(admin, schema)


def _open(root: Path, url: str, schema: str, ks: str, embedder: Embedder) -> Services:
    settings = Settings(
        data_dir=root,
        database_url=app_role_url(url),
        db_schema=schema,
        keystore_url=ks,
        master_key_file=root.parent / "master.key",
        local_index_per_worker=True,
    )
    return open_services(settings, embedder=embedder)


def _seed(services: Services) -> dict[str, list[str]]:
    services.tenants.create("t1")
    ids: dict[str, list[str]] = {GONE: [], STAYS: []}
    for user in (GONE, STAYS):
        for agent in ("a1", "a2"):
            view = services.vault.scoped(Scope("t1", user, agent))
            for n in range(3):
                ids[user].append(
                    view.add(f"{user} note {n}: the ferry leaves at nine ({agent})").id
                )
    return ids


# Alone on the cluster: a transaction running meanwhile in any database (another xdist worker's)
# holds back the xmin horizon, and VACUUM FULL then copies the erased keys into the new heap.
@pytest.mark.cluster_exclusive
def test_no_file_or_wal_segment_holds_an_erased_key(
    tmp_path: Path, keystore_url: str, data_schema: str, embedder: Embedder
) -> None:
    admin = pg_url_or_skip()
    services = _open(tmp_path / "w", admin, data_schema, keystore_url, embedder)
    try:
        _seed(services)
        keys = wrapped_keys(keystore_url, GONE)
        assert len(keys) == 2
        assert carve(database_files(admin, keystore_url), keys) == 2  # the carve finds them
        jobs = install(services).erasures
        receipt = jobs.run("t1", jobs.start("t1", GONE, None, "admin"))
        body = receipt["receipt"]
        assert body["verified"] is True
        facts = {f["store"]: f for f in body["beyond_reach"]}
        assert facts["keystore_wal_archive"]["present"] is False
        assert facts["keystore_backups"]["ages_out_after_days"] == 7
        assert carve(database_files(admin, keystore_url), keys) == 0
        assert wrapped_keys(keystore_url, STAYS)  # the other user's keys stay
    finally:
        services.close()


def test_a_pre_erase_backup_restored_decrypts_only_the_other_users(
    tmp_path: Path, keystore_url: str, data_schema: str, embedder: Embedder
) -> None:
    admin = pg_url_or_skip()
    services = _open(tmp_path / "w", admin, data_schema, keystore_url, embedder)
    dump = tmp_path / "data.dump"
    database = str(make_url(admin).database)  # the test run's (a worker's own under xdist)
    pg_env = ["-h", "127.0.0.1", "-U", "postgres"]
    try:
        ids = _seed(services)
        subprocess.run(
            ["pg_dump", *pg_env, "-Fc", f"--schema={data_schema}", "-f", str(dump), database],
            check=True,
        )
        jobs = install(services).erasures
        assert jobs.run("t1", jobs.start("t1", GONE, None, "admin"))["receipt"]["verified"]
    finally:
        services.close()
    with scratch_database(admin, "mvrs") as restored:
        name = restored.rsplit("/", 1)[1]
        subprocess.run(["pg_restore", *pg_env, "-d", name, str(dump)], check=True)
        engine = create_engine(restored, isolation_level="AUTOCOMMIT")
        with engine.connect() as conn:  # as `memvault db upgrade` grants it
            conn.execute(text(f'GRANT USAGE ON SCHEMA "{data_schema}" TO memvault_app'))
            conn.execute(
                text(
                    f'GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA "{data_schema}"'
                    " TO memvault_app"
                )
            )
            conn.execute(
                text(f'GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA "{data_schema}" TO memvault_app')
            )
        engine.dispose()
        back = _open(tmp_path / "r", restored, data_schema, keystore_url, embedder)
        try:
            for agent in ("a1", "a2"):
                kept = back.vault.scoped(Scope("t1", STAYS, agent))
                gone = back.vault.scoped(Scope("t1", GONE, agent))
                for note_id in ids[STAYS][:3] if agent == "a1" else ids[STAYS][3:]:
                    assert "ferry" in kept.get(note_id).text
                for note_id in ids[GONE][:3] if agent == "a1" else ids[GONE][3:]:
                    with pytest.raises(VaultError):
                        gone.get(note_id)
        finally:
            back.close()
