"""Key rotation: the master key (rewrap, crash-safe install) and data keys (re-encrypt, destroy)."""

from __future__ import annotations

import base64
import json
import os
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select
from typer.testing import CliRunner

from memvault.cli import app
from memvault.compliance import rotation
from memvault.config import Settings
from memvault.errors import KeyNotFound
from memvault.keyring import EnvMasterKey, FileMasterKey, Keyring
from memvault.runtime.factory import Services, open_services
from memvault.scope import Scope
from memvault.store.models import NoteRow
from tests.apiclient import OPERATOR_KEY, Api
from tests.conftest import ServicesFactory
from tests.faults import Crash, crash_at

TEXTS = {
    ("alice", "planner"): ["Alice prefers window seats on long flights", "Alice is learning Welsh"],
    ("alice", "coach"): ["Alice runs along the canal every Sunday morning"],
    ("bob", "planner"): ["Bob keeps his bicycle in the garden shed", "Bob dislikes coriander"],
}


def fill(services: Services, tenant: str = "acme") -> dict[str, tuple[Scope, str]]:
    """Add the notes of TEXTS (plus a shared one of alice); returns id -> (scope, text)."""
    if not services.tenants.exists(tenant):
        services.tenants.create(tenant)
    notes: dict[str, tuple[Scope, str]] = {}
    for (user, agent), texts in TEXTS.items():
        view = services.vault.scoped(Scope(tenant, user, agent))
        for text in texts:
            notes[view.add(text).id] = (Scope(tenant, user, agent), text)
    shared = services.vault.scoped(Scope(tenant, "alice", "planner"))
    note = shared.add("Alice shares the family holiday plans", visibility="shared")
    notes[note.id] = (Scope(tenant, "alice", "planner"), note.text)
    return notes


def assert_readable(services: Services, notes: dict[str, tuple[Scope, str]]) -> None:
    for note_id, (scope, text) in notes.items():
        assert services.vault.scoped(scope).get(note_id).text == text


def keystore_path(services: Services) -> Path:
    return services.settings.data_dir / "keystore.db"


def opens(services: Services, material: bytes, tmp_path: Path) -> bool:
    path = tmp_path / f"probe-{os.urandom(4).hex()}.key"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.write(fd, material)
    os.close(fd)
    try:
        Keyring.open(services.settings.resolved_keystore_url(), FileMasterKey(path)).close()
    except KeyNotFound:
        return False
    return True


def wrapped_tenant_keys(path: Path) -> list[bytes]:
    conn = sqlite3.connect(path)
    try:
        rows = conn.execute("SELECT wrapped_key FROM keyring_tenant_keys").fetchall()
    finally:
        conn.close()
    return [bytes(r[0]) for r in rows]


def audit_actions(services: Services, tenant: str) -> list[str]:
    return [e["action"] for e in services.audit.events(tenant)]


# -- master key ------------------------------------------------------------------------------


def test_master_rotation_rewraps_and_only_the_new_key_opens(
    make_services: ServicesFactory, backend: str, tmp_path: Path
) -> None:
    services = make_services(backend)
    notes = fill(services)
    fill(services, "globex")
    key_file = services.settings.resolved_master_key_file()
    old = key_file.read_bytes()
    old_wrappings = wrapped_tenant_keys(keystore_path(services))
    signer, _ = services.keyring.signing_keys().sign(b"before the rotation")
    result = rotation.rotate_master_file(services, "operator")
    # The receipt signing key was rewrapped too: it still signs, under the same key id.
    assert services.keyring.signing_keys().sign(b"after the rotation")[0] == signer
    assert result.tenant_keys == 2 and result.old_key_id != result.new_key_id
    new = key_file.read_bytes()
    assert new != old and len(new) == 32
    assert oct(key_file.stat().st_mode & 0o777) == "0o600"
    assert not rotation.pending_master_file(services.settings).exists()
    assert_readable(services, notes)  # note ciphertext untouched, still decrypts
    assert opens(services, new, tmp_path)
    assert not opens(services, old, tmp_path)
    blob = keystore_path(services).read_bytes()
    assert len(old_wrappings) == 2 and all(w not in blob for w in old_wrappings)
    for tenant in ("acme", "globex"):
        assert audit_actions(services, tenant)[-1] == "master.rotated"
    if backend == "sqlite":
        services.close()
        assert_readable(make_services(data_dir=services.settings.data_dir), notes)


class FailingMaster:
    """A real master key that dies (like the process) at its second wrap: mid-transaction."""

    def __init__(self, inner: FileMasterKey) -> None:
        self.inner, self.wraps = inner, 0

    @property
    def key_id(self) -> str:
        return self.inner.key_id

    def wrap(self, key: bytes, associated_data: bytes) -> bytes:
        self.wraps += 1
        if self.wraps == 2:
            raise Crash("mid-rewrap")
        return self.inner.wrap(key, associated_data)

    def unwrap(self, wrapped: bytes, associated_data: bytes) -> bytes:
        return self.inner.unwrap(wrapped, associated_data)


@pytest.mark.parametrize("step", ["mid-rewrap", "new_key_written", "rewrapped", "installed"])
def test_master_rotation_crash_leaves_a_keystore_one_key_opens(
    make_services: ServicesFactory, step: str, tmp_path: Path
) -> None:
    services = make_services()
    notes = fill(services)
    fill(services, "globex")
    settings = services.settings
    old = settings.resolved_master_key_file().read_bytes()
    pending = rotation.pending_master_file(settings)
    with pytest.raises(Crash):
        if step == "mid-rewrap":
            services.keyring.rotate_master(FailingMaster(FileMasterKey(pending)))
        else:
            rotation.rotate_master_file(services, "operator", fault=crash_at(step))
    new = (
        pending.read_bytes()
        if pending.exists()
        else settings.resolved_master_key_file().read_bytes()
    )
    services.close()
    opened = [name for name, key in (("old", old), ("new", new)) if opens(services, key, tmp_path)]
    expected = {
        "mid-rewrap": "old",
        "new_key_written": "old",
        "rewrapped": "new",
        "installed": "new",
    }
    assert opened == [expected[step]]
    status = rotation.master_status(settings)
    if step == "rewrapped":
        assert "pending new key file" in status and "MEMVAULT_MASTER_KEY_FILE" not in status
    else:
        assert "MEMVAULT_MASTER_KEY_FILE" in status and "pending" not in status
    note = rotation.finish_master_rotation(settings)
    if step in ("mid-rewrap", "new_key_written"):
        assert note is not None and "had not committed" in note
    elif step == "rewrapped":
        assert note is not None and "installed" in note
    assert not pending.exists()
    assert settings.resolved_master_key_file().read_bytes() == (old if opened == ["old"] else new)
    reopened = make_services(data_dir=settings.data_dir)
    assert_readable(reopened, notes)
    again = rotation.rotate_master_file(reopened, "operator")  # and a later rotation works
    assert again.tenant_keys == 2


def test_master_rotation_env_provider(
    make_services: ServicesFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, embedder: Any
) -> None:
    monkeypatch.setenv("MV_TEST_OLD_MASTER", base64.b64encode(os.urandom(32)).decode())
    monkeypatch.setenv("MV_TEST_NEW_MASTER", base64.b64encode(os.urandom(32)).decode())
    settings = Settings(data_dir=tmp_path / "env", master_key_env="MV_TEST_OLD_MASTER")
    services = open_services(settings, embedder=embedder)
    try:
        notes = fill(services)
        with pytest.raises(Exception, match="MV_TEST_UNSET"):
            rotation.rotate_master_env(services, "MV_TEST_UNSET", "operator")
        result = rotation.rotate_master_env(services, "MV_TEST_NEW_MASTER", "operator")
        assert "MEMVAULT_MASTER_KEY_ENV=MV_TEST_NEW_MASTER" in result.message
        assert_readable(services, notes)
        status = rotation.master_status(settings, "MV_TEST_NEW_MASTER")
        assert "MV_TEST_NEW_MASTER" in status and "MV_TEST_OLD_MASTER" not in status
    finally:
        services.close()
    url = settings.resolved_keystore_url()
    with pytest.raises(KeyNotFound):
        Keyring.open(url, EnvMasterKey("MV_TEST_OLD_MASTER"))
    Keyring.open(url, EnvMasterKey("MV_TEST_NEW_MASTER")).close()


def test_operator_route_rotates_master(make_services: ServicesFactory) -> None:
    services = make_services()
    api = Api(services)
    admin = api.tenant("acme")
    agent = api.agent_key("acme", "alice", "planner")
    note = api.add(agent, "Alice keeps the spare key under the blue flowerpot")
    old_id = services.keyring.master_key_id
    assert api.call("POST", "/v1/operator/rotate-master", admin, json={}).status_code == 403
    r = api.call("POST", "/v1/operator/rotate-master", OPERATOR_KEY, json={})
    assert r.status_code == 200, r.text
    assert r.json()["old_key_id"] == old_id and r.json()["tenant_keys"] == 1
    assert services.keyring.master_key_id == r.json()["new_key_id"] != old_id
    got = api.call("GET", f"/v1/memories/{note['id']}", agent)
    assert got.status_code == 200 and got.json()["text"] == note["text"]
    bad = api.call(
        "POST", "/v1/operator/rotate-master", OPERATOR_KEY, json={"new_master_key_env": "NOPE_X"}
    )
    assert bad.status_code == 422 and "NOPE_X" in bad.text
    assert audit_actions(services, "acme")[-1] == "master.rotated"


def test_cli_rotate_master(make_services: ServicesFactory, tmp_path: Path) -> None:
    services = make_services()
    notes = fill(services)
    root = services.settings.data_dir
    old = services.settings.resolved_master_key_file().read_bytes()
    services.close()
    result = CliRunner().invoke(app, ["keys", "rotate-master", "--data-dir", str(root)])
    assert result.exit_code == 0, result.output
    assert "1 tenant keys rewrapped" in result.output
    assert (root / "master.key").read_bytes() != old
    status = CliRunner().invoke(app, ["keys", "master-status", "--data-dir", str(root)])
    assert "MEMVAULT_MASTER_KEY_FILE" in status.output
    assert_readable(make_services(data_dir=root), notes)


# -- data keys -------------------------------------------------------------------------------


def wrapped_data_keys(path: Path, version: int) -> list[bytes]:
    conn = sqlite3.connect(path)
    try:
        rows = conn.execute(
            "SELECT wrapped_key FROM keyring_data_keys WHERE version = ?", (version,)
        ).fetchall()
    finally:
        conn.close()
    return [bytes(r[0]) for r in rows]


def versions(services: Services, tenant: str = "acme") -> dict[str, tuple[int, int | None]]:
    """note id -> (live key version, staged key version or None)."""
    with services.db.session(tenant) as sess:
        rows = sess.execute(select(NoteRow).where(NoteRow.tenant_id == tenant)).scalars()
        return {
            r.id: (r.key_version, json.loads(r.next_state)["key_version"] if r.next_state else None)
            for r in rows
        }


def test_data_key_rotation_reencrypts_and_destroys_old_versions(
    make_services: ServicesFactory, backend: str
) -> None:
    services = make_services(backend)
    notes = fill(services)
    # A staged update a crash left between its steps: it must be re-encrypted too.
    staged_id = next(i for i, (s, _) in notes.items() if s.user == "bob")
    services.vault.fault = crash_at("after_stage")
    with pytest.raises(Crash):
        services.vault.scoped(notes[staged_id][0]).update(staged_id, text="Bob now likes coriander")
    services.vault.fault = lambda _step: None
    old_wrapped = wrapped_data_keys(keystore_path(services), 1)
    assert len(old_wrapped) == 4  # alice/planner, alice/coach, alice/shared, bob/planner
    hits_before = services.vault.scoped(Scope("acme", "alice", "planner")).search("window seat")

    record = rotation.start_rotation(services, "acme", None, None, "admin-key")
    assert record.total == len(notes) and len(record.scopes) == 4
    assert all(v == 2 for _, _, v in record.scopes)
    assert_readable(services, notes)  # old versions still decrypt before the job runs
    lines: list[str] = []
    done = rotation.run_rotation(
        services,
        "acme",
        record.id,
        "admin-key",
        batch=2,
        progress=lambda r: lines.append(r.progress_line()),
    )
    assert done.state == "done" and done.remaining == 0 and done.versions_destroyed == 4
    assert any("re-encrypted" in line for line in lines)
    assert set(versions(services).values()) <= {(2, None), (2, 2)}
    assert versions(services)[staged_id] == (2, 2)
    for user, agent, _ in record.scopes:
        assert services.keyring.key_versions(Scope("acme", user, agent)) == [2]
    assert_readable(services, notes)
    hits_after = services.vault.scoped(Scope("acme", "alice", "planner")).search("window seat")
    assert [h.note.id for h in hits_after][:1] == [h.note.id for h in hits_before][:1]
    blob = keystore_path(services).read_bytes()
    wal = Path(str(keystore_path(services)) + "-wal")
    blob += wal.read_bytes() if wal.exists() else b""
    assert all(w not in blob for w in old_wrapped)
    # The staged update finishes under the new key.
    services.reconciler.run(grace_seconds=0.0)
    assert (
        services.vault.scoped(notes[staged_id][0]).get(staged_id).text == "Bob now likes coriander"
    )
    actions = audit_actions(services, "acme")
    assert "keys.rotated" in actions and actions[-1] == "keys.reencrypted"


def test_reencryption_resumes_after_a_crash(make_services: ServicesFactory) -> None:
    services = make_services()
    notes = fill(services)
    record = rotation.start_rotation(services, "acme", "alice", None, "admin-key")
    assert len(record.scopes) == 3  # alice's two agents and her shared scope
    with pytest.raises(Crash):
        rotation.run_rotation(
            services, "acme", record.id, "admin-key", batch=1, fault=crash_at("batch_committed")
        )
    mid = rotation.load_rotation(services, "acme", record.id)
    assert mid.state == "reencrypting" and 0 < mid.remaining < mid.total
    assert_readable(services, notes)  # half-moved: both versions still decrypt
    assert rotation.unfinished_rotations(services, "acme") == [record.id]
    done = rotation.run_rotation(services, "acme", record.id, "admin-key")
    assert done.state == "done" and done.remaining == 0 and done.versions_destroyed == 3
    by_id = versions(services)
    for note_id, (scope, _) in notes.items():
        assert by_id[note_id][0] == (2 if scope.user == "alice" else 1)
    assert_readable(services, notes)
    assert rotation.unfinished_rotations(services, "acme") == []


def test_rotation_api_and_cli_progress(make_services: ServicesFactory) -> None:
    services = make_services()
    api = Api(services)
    admin = api.tenant("acme")
    other_admin = api.tenant("globex")
    agent = api.agent_key("acme", "alice", "planner")
    added = [api.add(agent, t) for t in TEXTS[("alice", "planner")]]
    r = api.call("POST", "/v1/admin/keys/rotate", admin, json={"user_id": "alice"})
    assert r.status_code == 202, r.text
    rotation_id = r.json()["id"]
    assert (
        api.call("POST", "/v1/admin/keys/rotate", admin, json={"agent_id": "x"}).status_code == 422
    )
    assert (
        api.call("POST", "/v1/admin/keys/rotate", admin, json={"tenant_id": "globex"}).status_code
        == 422
    )
    deadline = time.monotonic() + 30
    while True:
        got = api.call("GET", f"/v1/admin/keys/rotations/{rotation_id}", admin)
        assert got.status_code == 200
        if got.json()["state"] == "done" or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    body = got.json()
    assert body["state"] == "done" and body["done"] == 2 and body["versions_destroyed"] == 1
    assert (
        api.call("GET", f"/v1/admin/keys/rotations/{rotation_id}", other_admin).status_code == 404
    )
    assert api.call("GET", f"/v1/admin/keys/rotations/{rotation_id}", agent).status_code == 403
    for note in added:
        assert api.call("GET", f"/v1/memories/{note['id']}", agent).json()["text"] == note["text"]
    # The CLI resumes an unfinished job with progress lines.
    record = rotation.start_rotation(services, "acme", None, None, "admin-key")
    root = services.settings.data_dir
    services.close()
    result = CliRunner().invoke(
        app, ["keys", "reencrypt", "--tenant", "acme", "--data-dir", str(root)]
    )
    assert result.exit_code == 0, result.output
    assert f"rotation {record.id}: re-encrypted 2/2 notes" in result.output
    assert "done" in result.output


def test_rotation_never_destroys_the_keys_of_a_scope_erased_and_written_again(
    make_services: ServicesFactory,
) -> None:
    services = make_services()
    fill(services)
    record = rotation.start_rotation(services, "acme", "bob", None, "admin-key")
    assert record.scopes == [("bob", "planner", 2)]
    assert services.eraser.erase("acme", "bob").verified
    view = services.vault.scoped(Scope("acme", "bob", "planner"))
    note = view.add("Bob starts again with a fresh notebook")  # a new key, version 1
    done = rotation.run_rotation(services, "acme", record.id, "admin-key")
    assert done.state == "done" and done.versions_destroyed == 0
    assert view.get(note.id).text == "Bob starts again with a fresh notebook"
