"""Shredding on SQLite leaves no wrapped key bytes in the keystore file or its WAL."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from memvault.keyring import Keyring, ScrubFailed, associated_data
from memvault.scope import Scope
from memvault.testing import FakeKms


def _wrapped(db: Path, sql: str, *params: str) -> list[bytes]:
    with closing(sqlite3.connect(db)) as conn:
        return [bytes(row[0]) for row in conn.execute(sql, params)]


def _on_disk(db: Path) -> bytes:
    wal = db.with_name(db.name + "-wal")
    return db.read_bytes() + (wal.read_bytes() if wal.exists() else b"")


def _fill(keyring: Keyring, tenant: str) -> None:
    for user in ("user-1", "user-2"):
        for agent in ("agent-1", "shared"):
            scope = Scope(tenant, user, agent)
            aead = keyring.aead_for(scope)
            aead.encrypt(b"text", associated_data(scope, "n", "text", aead.key_version))
            keyring.rotate_scope(scope)
    keyring.index_key(tenant)


def test_shred_user_sqlite_file_and_wal_hold_no_wrapped_data_key(tmp_path: Path) -> None:
    db = tmp_path / "keystore.db"
    with Keyring.open(f"sqlite:///{db}", FakeKms()) as keyring:
        _fill(keyring, "tenant-a")
        doomed = _wrapped(
            db, "SELECT wrapped_key FROM keyring_data_keys WHERE user_id = ?", "user-1"
        )
        kept = _wrapped(db, "SELECT wrapped_key FROM keyring_data_keys WHERE user_id = ?", "user-2")
        assert len(doomed) == 4 and len(kept) == 4
        disk = _on_disk(db)
        assert all(w in disk for w in doomed + kept)

        assert keyring.shred("tenant-a", "user-1") == 4

        disk = _on_disk(db)
        assert not any(w in disk for w in doomed)
        assert all(w in disk for w in kept)


def test_shred_tenant_sqlite_file_and_wal_hold_no_wrapped_keys(tmp_path: Path) -> None:
    db = tmp_path / "keystore.db"
    with Keyring.open(f"sqlite:///{db}", FakeKms()) as keyring:
        _fill(keyring, "tenant-a")
        _fill(keyring, "tenant-b")
        doomed = (
            _wrapped(db, "SELECT wrapped_key FROM keyring_data_keys WHERE tenant_id = 'tenant-a'")
            + _wrapped(
                db, "SELECT wrapped_key FROM keyring_tenant_keys WHERE tenant_id = 'tenant-a'"
            )
            + _wrapped(
                db, "SELECT wrapped_key FROM keyring_index_keys WHERE tenant_id = 'tenant-a'"
            )
        )
        assert len(doomed) == 10

        assert keyring.shred("tenant-a") == 10

        disk = _on_disk(db)
        assert not any(w in disk for w in doomed)
        assert keyring.has_tenant("tenant-b")


def test_keystore_sqlite_file_created_private(tmp_path: Path) -> None:
    db = tmp_path / "keystore.db"
    with Keyring.open(f"sqlite:///{db}", FakeKms()) as keyring:
        keyring.aead_for(Scope("tenant-a", "user-1", "agent-1"))
        assert db.stat().st_mode & 0o777 == 0o600
        with closing(sqlite3.connect(db)) as conn:
            assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_rotate_master_sqlite_file_holds_no_old_wrappings(tmp_path: Path) -> None:
    db = tmp_path / "keystore.db"
    with Keyring.open(f"sqlite:///{db}", FakeKms()) as keyring:
        _fill(keyring, "tenant-a")
        _fill(keyring, "tenant-b")
        old = _wrapped(db, "SELECT wrapped_key FROM keyring_tenant_keys")
        assert len(old) == 2 and all(w in _on_disk(db) for w in old)

        assert keyring.rotate_master(FakeKms()) == 2

        disk = _on_disk(db)
        assert not any(w in disk for w in old)


def test_shred_raises_when_the_scrub_cannot_checkpoint(tmp_path: Path) -> None:
    """A reader holding an old snapshot blocks the checkpoint: the shred says so, loudly."""
    db = tmp_path / "keystore.db"
    with Keyring.open(f"sqlite:///{db}", FakeKms()) as keyring:
        _fill(keyring, "tenant-a")
        keyring._store.scrub_timeout = 0.3
        with closing(sqlite3.connect(db, isolation_level=None)) as reader:
            reader.execute("BEGIN")
            reader.execute("SELECT count(*) FROM keyring_data_keys").fetchone()

            with pytest.raises(ScrubFailed) as caught:
                keyring.shred("tenant-a", "user-1")
            assert caught.value.code == "keystore_scrub_failed"
            assert str(tmp_path) not in caught.value.message
            reader.execute("COMMIT")

        # The keys are gone; the next shred (of anything) scrubs the WAL clean.
        assert keyring.count_keys("tenant-a", "user-1") == 0
        doomed = _wrapped(
            db, "SELECT wrapped_key FROM keyring_data_keys WHERE user_id = ?", "user-2"
        )
        keyring.shred("tenant-a", "user-2")
        assert not any(w in _on_disk(db) for w in doomed)


def test_keystore_sqlite_sidecars_are_private(tmp_path: Path) -> None:
    db = tmp_path / "keystore.db"
    with Keyring.open(f"sqlite:///{db}", FakeKms()) as keyring:
        _fill(keyring, "tenant-a")
        for suffix in ("", "-wal", "-shm"):
            path = db.with_name(db.name + suffix)
            assert path.exists(), suffix
            assert path.stat().st_mode & 0o777 == 0o600, suffix


def test_keystore_existing_loose_file_is_tightened(tmp_path: Path) -> None:
    db = tmp_path / "keystore.db"
    kms = FakeKms()
    with Keyring.open(f"sqlite:///{db}", kms) as keyring:
        _fill(keyring, "tenant-a")
    db.chmod(0o644)
    with Keyring.open(f"sqlite:///{db}", kms):
        assert db.stat().st_mode & 0o777 == 0o600
