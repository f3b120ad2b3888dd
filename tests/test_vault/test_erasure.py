"""Erasure: keys first, then vectors and rows; every store counts zero; old copies stay sealed."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from memvault.errors import DecryptionError
from memvault.index.base import PointFilter
from memvault.keyring import FileMasterKey, Keyring
from memvault.scope import Scope
from memvault.store.codec import NoteCodec
from memvault.store.database import Database
from memvault.store.models import NoteRow
from memvault.vault.drafts import user_tag
from tests.conftest import ServicesFactory


def _tag(services, user: str) -> str:  # type: ignore[no-untyped-def]
    """The blind tag the index stores for a user id."""
    return str(user_tag(services.keyring.index_key("t1").tag, user))


def _seed(services, user: str) -> list[str]:  # type: ignore[no-untyped-def]
    ids = []
    for agent in ("a1", "a2"):
        v = services.vault.scoped(Scope("t1", user, agent))
        ids.append(v.add(f"{user} keeps the spare key under the blue flowerpot ({agent})").id)
        ids.append(
            v.add(f"{user} shares the wifi name with guests ({agent})", visibility="shared").id
        )
    first = services.vault.scoped(Scope("t1", user, "a1"))
    first.link(ids[0], ids[1])
    return ids


def test_erase_user_leaves_nothing_in_any_store(
    make_services: ServicesFactory, backend: str
) -> None:
    services = make_services(backend)
    _seed(services, "alice")
    _seed(services, "bob")
    report = services.eraser.erase("t1", "alice")
    assert report.rows_deleted == 4 and report.vectors_deleted == 4 and report.links_deleted == 1
    assert report.keys_destroyed >= 3  # a1, a2 and shared
    assert report.remaining == {
        "sql_rows": 0,
        "links": 0,
        "index_points": 0,
        "data_keys": 0,
        "embedding_cache": 0,
        "idempotency_records": 0,
        "refusals": 0,
        "api_keys": 0,
        "amem_jobs": 0,
        "agent_isolation": 0,
    }
    assert report.verified
    for agent in ("a1", "a2"):
        v = services.vault.scoped(Scope("t1", "alice", agent))
        assert v.search("where is the spare key?", limit=10) == []
        assert v.list_notes() == ([], 0)
    assert services.index.count("t1", PointFilter(user_id=_tag(services, "alice"))) == 0
    bob = services.vault.scoped(Scope("t1", "bob", "a1"))
    assert len(bob.search("where is the spare key?", limit=10)) >= 1
    assert services.index.count("t1", PointFilter(user_id=_tag(services, "bob"))) == 4


def test_erase_one_agent_keeps_the_users_other_scopes(make_services: ServicesFactory) -> None:
    services = make_services("sqlite")
    _seed(services, "alice")
    report = services.eraser.erase("t1", "alice", "a1")
    assert report.rows_deleted == 1 and report.verified
    a2 = services.vault.scoped(Scope("t1", "alice", "a2"))
    assert a2.list_notes()[1] == 3  # its own private note and both shared notes


def test_copy_taken_before_erase_cannot_be_decrypted_after(
    make_services: ServicesFactory, tmp_path: Path
) -> None:
    root = tmp_path / "live"
    services = make_services("sqlite", data_dir=root)
    _seed(services, "alice")
    services.db.dispose()
    backup = tmp_path / "backup.db"
    shutil.copy(root / "memvault.db", backup)
    for suffix in ("-wal", "-shm"):
        if (root / f"memvault.db{suffix}").exists():
            shutil.copy(root / f"memvault.db{suffix}", tmp_path / f"backup.db{suffix}")
    services.eraser.erase("t1", "alice")
    services.close()

    old = Database(f"sqlite:///{backup}")
    with old.session("t1") as sess:
        rows = list(sess.query(NoteRow).filter(NoteRow.user_id == "alice"))
    assert len(rows) == 4
    keyring = Keyring.open(f"sqlite:///{root / 'keystore.db'}", FileMasterKey(root / "master.key"))
    codec = NoteCodec(keyring)
    for row in rows:
        with pytest.raises(DecryptionError):
            codec.open(
                Scope(row.tenant_id, row.user_id, row.agent_id),
                row.id,
                row.key_version,
                row.text_ct,
                row.attrs_ct,
            )
    keyring.close()
    old.dispose()


def test_an_erase_on_postgres_vacuums_the_touched_tables_as_the_owner(
    make_services: ServicesFactory,
) -> None:
    from sqlalchemy import create_engine, text

    from tests.conftest import pg_url_or_skip

    admin_url = pg_url_or_skip()
    services = make_services("postgres")
    services.db.maintenance_url = admin_url
    _seed(services, "alice")
    assert services.eraser.erase("t1", "alice").verified
    engine = create_engine(admin_url)
    with engine.connect() as conn:
        vacuumed = conn.execute(
            text(
                "SELECT relname FROM pg_stat_user_tables "
                "WHERE schemaname = :s AND last_vacuum IS NOT NULL"
            ),
            {"s": services.db.schema},
        ).scalars()
        names = set(vacuumed)
    engine.dispose()
    assert {"notes", "links", "api_keys"} <= names
