"""Backups and restore: separate destinations, and a restore an erase reaches.

The must-show: a backup of the data store taken BEFORE erasing user U, restored AFTER the erase
with the keystore as it is after the erase, brings back nothing of U (rows, vectors, links, keys)
and everything of everyone else; and a raw copy of the SQL file and its WAL holds no text of U.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import stat
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from memvault.cli import app
from memvault.compliance.backup import BackupRefused, backup, restore
from memvault.config import Settings
from memvault.errors import AuthenticationError
from memvault.index.base import PointFilter
from memvault.runtime.factory import Services
from memvault.scope import Scope
from memvault.vault.drafts import namespace_for
from tests.conftest import ServicesFactory

# Marker words appear only in U's notes; each is searched for in every file afterwards.
U_NOTES = {
    "travel": [
        "Ursula booked the zanzibarine ferry for the lighthouse trip",
        "Ursula packs quokkafern tea for every journey",
    ],
    "health": ["Ursula sees the physiotherapist about her marmaloop knee"],
}
U_SHARED = "Ursula shares the vindelbrook cabin address with the family"
MARKERS = [b"zanzibarine", b"quokkafern", b"marmaloop", b"vindelbrook"]
V_NOTES = {
    "travel": [
        "Victor collects old railway timetables",
        "Victor prefers the night train to Vienna",
    ],
}


def populate(services: Services) -> dict[str, Any]:
    services.tenants.create("acme")
    u_keys = [services.keys.issue("acme", "ursula", agent, "agent").api_key for agent in U_NOTES]
    u_ids, v_ids = [], []
    for agent, texts in U_NOTES.items():
        view = services.vault.scoped(Scope("acme", "ursula", agent))
        u_ids += [view.add(t).id for t in texts]
    travel = services.vault.scoped(Scope("acme", "ursula", "travel"))
    u_ids.append(travel.add(U_SHARED, visibility="shared").id)
    travel.link(u_ids[0], u_ids[1])
    for agent, texts in V_NOTES.items():
        view = services.vault.scoped(Scope("acme", "victor", agent))
        v_ids += [view.add(t).id for t in texts]
    victor = services.vault.scoped(Scope("acme", "victor", "travel"))
    victor.link(v_ids[0], v_ids[1])
    return {"u_ids": u_ids, "v_ids": v_ids, "u_keys": u_keys}


def files_under(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file()]


def assert_no_markers(paths: list[Path]) -> None:
    for path in paths:
        blob = path.read_bytes()
        for marker in MARKERS:
            assert marker not in blob and marker.lower() not in blob, (path.name, marker)


def sql_count(path: Path, query: str) -> int:
    conn = sqlite3.connect(path)
    try:
        return int(conn.execute(query).fetchone()[0])
    finally:
        conn.close()


def test_backup_before_erase_restored_after_brings_back_nothing_of_the_user(
    make_services: ServicesFactory, tmp_path: Path, embedder: Any
) -> None:
    live = make_services(data_dir=tmp_path / "live")
    ids = populate(live)
    root = live.settings.data_dir
    assert (root / "memvault.db-wal").exists()  # the live store is mid-WAL: the copy needs both
    raw = tmp_path / "raw-copy"
    raw.mkdir()
    for name in ("memvault.db", "memvault.db-wal"):
        shutil.copy(root / name, raw / name)
    (tmp_path / "data-backups").mkdir()
    (tmp_path / "key-backups").mkdir()
    before = backup(live.settings, tmp_path / "data-backups", tmp_path / "key-backups")

    report = live.eraser.erase("acme", "ursula")
    assert report.verified
    (tmp_path / "keys-after").mkdir()
    after = backup(live.settings, tmp_path / "data-backups" / "after.db", tmp_path / "keys-after")
    live.close()

    # The raw copies and the data snapshot taken before the erase hold no plaintext of U.
    assert_no_markers([raw / "memvault.db", raw / "memvault.db-wal", before.data_file])
    assert sql_count(before.data_file, "SELECT count(*) FROM notes WHERE user_id='ursula'") == 4

    restored_dir = tmp_path / "restored"
    restored_dir.mkdir(mode=0o700)
    shutil.copy(root / "master.key", restored_dir / "master.key")  # installed before a restore
    progress: list[tuple[int, int]] = []
    result = restore(
        Settings(data_dir=restored_dir),
        before.data_file,
        after.keystore_file,
        embedder=embedder,
        progress=lambda n, m: progress.append((n, m)),
    )
    assert (result.restored, result.dropped, result.api_keys_revoked) == (2, 4, 2)
    assert progress[-1] == (6, 6)

    db_file = restored_dir / "memvault.db"
    assert sql_count(db_file, "SELECT count(*) FROM notes WHERE user_id='ursula'") == 0
    assert sql_count(db_file, "SELECT count(*) FROM links WHERE user_id='ursula'") == 0
    assert sql_count(db_file, "SELECT count(*) FROM notes WHERE user_id='victor'") == 2
    assert sql_count(db_file, "SELECT count(*) FROM links WHERE user_id='victor'") == 1
    assert sql_count(db_file, "SELECT sum(doc_count) FROM corpus_stats") == 2

    services = make_services(data_dir=restored_dir)
    assert services.index.count(namespace_for("acme"), PointFilter()) == 2  # V's vectors only
    assert services.eraser.remaining("acme", "ursula")["index_points"] == 0
    assert services.eraser.remaining("acme", "ursula")["sql_rows"] == 0
    for agent in U_NOTES:
        view = services.vault.scoped(Scope("acme", "ursula", agent))
        for query in ("ferry lighthouse trip", "tea journey", "physiotherapist knee", "cabin"):
            assert view.search(query, mode="hybrid") == []
        assert view.list_notes()[1] == 0
    for key in ids["u_keys"]:
        with pytest.raises(AuthenticationError):
            services.keys.authenticate(key)
    victor = services.vault.scoped(Scope("acme", "victor", "travel"))
    assert {n.id for n in victor.list_notes()[0]} == set(ids["v_ids"])
    hits = victor.search("railway timetables", mode="hybrid")
    assert hits and hits[0].note.id == ids["v_ids"][0]
    hits = victor.search("night train to Vienna", mode="hybrid")
    assert hits and hits[0].note.id == ids["v_ids"][1]
    assert_no_markers(files_under(restored_dir))


def test_restore_refuses_a_non_empty_dir_and_a_missing_master_key(
    make_services: ServicesFactory, tmp_path: Path, embedder: Any
) -> None:
    live = make_services(data_dir=tmp_path / "live")
    populate(live)
    (tmp_path / "d").mkdir()
    (tmp_path / "k").mkdir()
    snap = backup(live.settings, tmp_path / "d", tmp_path / "k")
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "memvault.db").write_bytes(b"")
    with pytest.raises(BackupRefused, match="empty data directory"):
        restore(Settings(data_dir=busy), snap.data_file, snap.keystore_file, embedder=embedder)
    with pytest.raises(BackupRefused, match="master key"):
        restore(Settings(data_dir=tmp_path / "new"), snap.data_file, snap.keystore_file)
    with pytest.raises(BackupRefused, match="not a memvault keystore"):
        restore(Settings(data_dir=tmp_path / "new"), snap.data_file, snap.data_file)
    assert not (tmp_path / "new").exists() or os.listdir(tmp_path / "new") == []


def invoke(*args: str, env: dict[str, str] | None = None) -> Any:
    return CliRunner().invoke(app, list(args), env=env)


def test_cli_backup_separates_data_and_keys(make_services: ServicesFactory, tmp_path: Path) -> None:
    live = make_services(data_dir=tmp_path / "live")  # the server's services stay open: online
    populate(live)
    root = str(live.settings.data_dir)
    (tmp_path / "d").mkdir()
    (tmp_path / "k").mkdir()
    nested = tmp_path / "d" / "inner"
    nested.mkdir()
    refused = [
        (str(tmp_path / "same.db"), str(tmp_path / "same.db")),  # the same file
        (str(tmp_path / "d"), str(tmp_path / "d")),  # the same directory
        (str(tmp_path / "d" / "a.db"), str(tmp_path / "d" / "b.db")),  # side by side
        (str(tmp_path / "d"), str(nested)),  # keystore inside the data destination
        (str(nested / "data.db"), str(tmp_path / "d")),  # data inside the keystore destination
    ]
    for dest, keys in refused:
        result = invoke("backup", dest, "--keystore-dest", keys, "--data-dir", root)
        assert result.exit_code == 1, (dest, keys, result.output)
        assert "must not share a directory" in result.output or "different places" in result.output
    assert files_under(tmp_path / "d") == []

    result = invoke(
        "backup", str(tmp_path / "d"), "--keystore-dest", str(tmp_path / "k"), "--data-dir", root
    )
    assert result.exit_code == 0, result.output
    data_file, key_file = (
        tmp_path / "d" / "memvault-data.db",
        tmp_path / "k" / "memvault-keystore.db",
    )
    for path in (data_file, key_file):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert files_under(tmp_path / "d") == [data_file]  # one self-contained file, no -wal
    assert sql_count(data_file, "SELECT count(*) FROM notes") == 6
    assert (
        sql_count(data_file, "SELECT count(*) FROM sqlite_master WHERE name LIKE 'keyring%'") == 0
    )
    assert sql_count(key_file, "SELECT count(*) FROM keyring_data_keys") == 4
    assert sql_count(key_file, "SELECT count(*) FROM sqlite_master WHERE name='notes'") == 0
    again = invoke(
        "backup", str(tmp_path / "d"), "--keystore-dest", str(tmp_path / "k"), "--data-dir", root
    )
    assert again.exit_code == 1 and "exists already" in again.output


def test_cli_backup_on_postgresql_gives_pg_dump_guidance(tmp_path: Path) -> None:
    env = {"MEMVAULT_DATABASE_URL": "postgresql+psycopg://memvault_app@127.0.0.1:5432/test"}
    (tmp_path / "d").mkdir()
    (tmp_path / "k").mkdir()
    result = invoke(
        "backup",
        str(tmp_path / "d"),
        "--keystore-dest",
        str(tmp_path / "k"),
        "--data-dir",
        str(tmp_path / "data"),
        env=env,
    )
    assert result.exit_code == 1
    assert "pg_dump" in result.output and "keystore" in result.output
    assert "127.0.0.1" not in result.output  # names settings, never the URL
