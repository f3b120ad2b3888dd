"""`Reindexer` and `memvault reindex`: stale notes are rebuilt under the current rules, none is
lost, a concurrent update is never overwritten, and a killed run resumes."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sqlalchemy import update

from memvault.config import Settings
from memvault.index.base import PointFilter
from memvault.runtime.factory import Services, open_services
from memvault.scope import Scope
from memvault.store.models import NoteRow
from memvault.vault.drafts import NoteDraft
from memvault.vault.reindex import Reindexer
from memvault.vault.sessions import INDEX_VERSION
from tests.conftest import ServicesFactory
from tests.serving import clean_env

A = Scope("t1", "u1", "a1")


def _turns(n: int, session: str = "s1") -> list[NoteDraft]:
    return [
        NoteDraft(f"then the heron nests near mill {chr(97 + i % 26)}{i}", session_id=session)
        for i in range(n)
    ]


def _age(services: Services, tenant: str = "t1") -> None:
    """Make every note of `tenant` stale, as after an upgrade of the indexing rules."""
    with services.db.session(tenant) as sess:
        sess.execute(update(NoteRow).where(NoteRow.tenant_id == tenant).values(index_version=1))


def _stale_data_dir(tmp_path: Path, turns: int) -> tuple[Path, dict[str, str]]:
    """A closed data directory whose `turns` notes of A are all stale, and the environment of a
    `memvault` command run on it."""
    data = tmp_path / "data"
    services = open_services(Settings(data_dir=data), screen=None)
    services.vault.scoped(A).add_many(_turns(turns))
    _age(services)
    services.close()
    return data, clean_env() | {"MEMVAULT_DATA_DIR": str(data)}


def _versions(services: Services, tenant: str = "t1") -> list[int]:
    with services.db.session(tenant) as sess:
        return [r.index_version for r in sess.query(NoteRow).filter_by(tenant_id=tenant)]


def test_reindex_rebuilds_every_stale_note_and_loses_none(
    make_services: ServicesFactory, backend: str
) -> None:
    services = make_services(backend)
    v = services.vault.scoped(A)
    notes = v.add_many(_turns(20))
    _age(services)
    reindexer = Reindexer(services.vault, batch=6)
    assert reindexer.status().stale == {"t1": 20}
    seen: list[int] = []
    assert reindexer.run(progress=seen.append) == 20
    assert sum(seen) == 20 and len(seen) == 4
    assert set(_versions(services)) == {INDEX_VERSION}
    assert reindexer.status().total_stale == 0
    assert v.list_notes()[1] == 20
    assert services.index.count("t1", PointFilter()) == 20
    hits = v.search("heron mill t19", limit=3, mode="sparse")
    assert notes[19].id in [h.note.id for h in hits]
    # The successor still carries its predecessor's words after the rebuild.
    point = services.index.retrieve("t1", [notes[5].id])[0]
    assert point.payload["prev"] == notes[4].id


def test_reindex_never_leaves_an_older_point_behind_an_update(
    make_services: ServicesFactory, backend: str
) -> None:
    services = make_services(backend)
    v = services.vault.scoped(A)
    note = v.add("The heron nests near the old mill")
    with services.db.session("t1") as sess:
        stale_copy = sess.get(NoteRow, ("t1", note.id))
        assert stale_copy is not None
        sess.expunge(stale_copy)
    v.update(note.id, text="The kingfisher nests under the stone bridge")
    from memvault.vault.session_index import SessionIndexer

    SessionIndexer(services.vault).rebuild([stale_copy])  # a reindex that read the old row
    assert [h.note.id for h in v.search("kingfisher bridge", limit=3, mode="dense")][:1] == [
        note.id
    ]
    assert v.search("heron mill", limit=3, mode="sparse") == []


def test_killed_reindex_resumes(tmp_path: Path) -> None:
    data, env = _stale_data_dir(tmp_path, 160)
    cmd = [sys.executable, "-m", "memvault.cli", "reindex", "--batch", "4"]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    db = sqlite3.connect(f"file:{data / 'memvault.db'}?mode=ro", uri=True, timeout=10)
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            done = db.execute(
                f"SELECT count(*) FROM notes WHERE index_version = {INDEX_VERSION}"
            ).fetchone()[0]
            if done >= 8:
                os.kill(proc.pid, signal.SIGKILL)
                break
            time.sleep(0.01)
        proc.wait(30)
        partial = db.execute(
            f"SELECT count(*) FROM notes WHERE index_version = {INDEX_VERSION}"
        ).fetchone()[0]
    finally:
        db.close()
    assert proc.returncode == -signal.SIGKILL, "the run finished before it could be killed"
    assert 8 <= partial < 160
    again = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr[-2000:]
    assert "0 still stale" in again.stdout
    services = open_services(Settings(data_dir=data), screen=None)
    try:
        assert set(_versions(services)) == {INDEX_VERSION}
        v = services.vault.scoped(A)
        assert v.list_notes()[1] == 160
        assert services.index.count("t1", PointFilter()) == 160
        assert v.search("heron mill t159", limit=3, mode="sparse")
    finally:
        services.close()


@pytest.mark.parametrize("flag", ["--status"])
def test_status_reports_without_changing(tmp_path: Path, flag: str) -> None:
    data, env = _stale_data_dir(tmp_path, 3)
    out = subprocess.run(
        [sys.executable, "-m", "memvault.cli", "reindex", flag],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert f"index version {INDEX_VERSION}" in out.stdout and "3 stale notes" in out.stdout
    db = sqlite3.connect(data / "memvault.db")
    try:
        assert db.execute("SELECT count(*) FROM notes WHERE index_version = 1").fetchone()[0] == 3
    finally:
        db.close()
