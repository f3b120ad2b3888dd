"""Erase jobs: resumable after a crash at any step, signed receipts, the deletion inventory."""

from __future__ import annotations

import base64
import contextlib
import copy
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Column, Integer, MetaData, String, Table

import memvault.index as index_package
from memvault.compliance import inventory
from memvault.compliance.erasure import STEPS
from memvault.compliance.signatures import verify_document
from memvault.compliance.wiring import install
from memvault.errors import Conflict
from memvault.index.base import VectorIndex
from memvault.keyring import _keystore, _signing
from memvault.runtime.factory import Services
from memvault.scope import Scope
from memvault.store.models import Base
from memvault.store.scoping import OwnedBy
from tests.apiclient import OPERATOR_KEY, Api
from tests.conftest import ServicesFactory
from tests.faults import Crash, crash_at

USER = "usrqzgone"


def _seed(services: Services) -> list[str]:
    services.tenants.create("t1")  # as the operator does: resume finds jobs of known tenants
    ids = []
    for user in (USER, "usrqzstays"):
        for agent in ("a1", "a2"):
            view = services.vault.scoped(Scope("t1", user, agent))
            ids.append(view.add(f"{user} keeps the kayak paddle in the shed ({agent})").id)
        services.keys.issue("t1", user, "a1", "agent")
    return ids


def _seeded(make_services: ServicesFactory, tmp_path: Path) -> tuple[Path, Services]:
    """A SQLite vault under `tmp_path / "vault"`, seeded by `_seed`: its folder and services."""
    root = tmp_path / "vault"
    services = make_services("sqlite", data_dir=root)
    _seed(services)
    return root, services


def _verifies(services: Services, receipt: dict[str, Any]) -> bool:
    keys = services.keyring.signing_keys().public_keys()
    return verify_document(receipt["receipt"], receipt["key_id"], receipt["signature"], keys)


def _files_hold(root: Path, needle: bytes) -> bool:
    return any(needle in p.read_bytes() for p in root.rglob("*") if p.is_file())


@contextlib.contextmanager
def _old_snapshot(root: Path) -> Iterator[None]:
    """A reader holding an old snapshot of the data store, which blocks a TRUNCATE checkpoint."""
    reader = sqlite3.connect(root / "memvault.db")
    reader.execute("BEGIN")
    reader.execute("SELECT count(*) FROM notes").fetchone()
    try:
        yield
    finally:
        reader.rollback()
        reader.close()


def test_a_scrub_a_reader_blocks_withholds_the_receipt_until_the_sweeper_finishes(
    make_services: ServicesFactory, tmp_path: Path
) -> None:
    root, services = _seeded(make_services, tmp_path)
    services.eraser.checkpoint_attempts = 2
    jobs = install(services).erasures
    with _old_snapshot(root):
        job_id, receipt = jobs.submit("t1", USER, None, "k-admin", wait=120)
        assert receipt is None  # no receipt may claim a scrub that did not happen
        view = jobs.view("t1", job_id)
        assert view["state"] == "running" and view["step"] == "rows"
        assert jobs.resume_stalled(idle_for=3600) == 0  # not stalled long enough yet
        assert jobs.resume_stalled(idle_for=0) == 0  # the reader still blocks it
    assert jobs.resume_stalled(idle_for=0) == 1
    receipt = jobs.receipt("t1", job_id)
    assert receipt["receipt"]["verified"] is True and _verifies(services, receipt)
    assert all(s["remaining"] == 0 for s in receipt["receipt"]["stores"])
    services.close()
    assert not _files_hold(root, USER.encode())


@pytest.mark.parametrize(
    "point", [f"{when}:{step}" for step in STEPS for when in ("before", "after")]
)
def test_a_crash_at_any_step_resumes_to_a_verified_receipt(
    make_services: ServicesFactory, tmp_path: Path, point: str
) -> None:
    root, services = _seeded(make_services, tmp_path)
    jobs = install(services).erasures
    job_id = jobs.start("t1", USER, None, "k-admin")
    jobs.fault = crash_at(point)
    with pytest.raises(Crash):
        jobs.run("t1", job_id)
    services.close()

    reopened = make_services("sqlite", data_dir=root)
    # A crash after the receipt was recorded leaves nothing to resume.
    assert install(reopened).resume() == (0 if point == "after:sign" else 1)
    receipt = install(reopened).erasures.receipt("t1", job_id)
    body = receipt["receipt"]
    assert body["verified"] is True and _verifies(reopened, receipt)
    assert all(s["remaining"] == 0 for s in body["stores"])
    deleted = {s["store"]: s["deleted"] for s in body["stores"]}
    assert deleted["notes"] == 2 and deleted["vectors"] == 2 and deleted["api_keys"] == 1
    assert body["keys_destroyed"] == 2
    keeper = reopened.vault.scoped(Scope("t1", "usrqzstays", "a1"))
    assert len(keeper.list_notes()[0]) == 1
    reopened.close()
    assert not _files_hold(root, USER.encode())


def test_a_receipt_verifies_and_any_flipped_byte_breaks_it(make_services: ServicesFactory) -> None:
    services = make_services("sqlite")
    _seed(services)
    jobs = install(services).erasures
    receipt = jobs.run("t1", jobs.start("t1", USER, "a1", "k-admin"))
    assert _verifies(services, receipt)
    assert receipt["receipt"]["subject"] == {"user_id": USER, "agent_id": "a1"}
    signature = base64.b64decode(receipt["signature"])
    for i in range(len(signature)):
        flipped = bytearray(signature)
        flipped[i] ^= 0x01
        tampered = copy.deepcopy(receipt)
        tampered["signature"] = base64.b64encode(bytes(flipped)).decode()
        assert not _verifies(services, tampered)
    for field, value in (("keys_destroyed", 99), ("verified", False), ("tenant_id", "t2")):
        tampered = copy.deepcopy(receipt)
        tampered["receipt"][field] = value
        assert not _verifies(services, tampered)


def test_every_table_and_index_adapter_is_in_the_inventory() -> None:
    tables = set(Base.metadata.tables) | set(_keystore.metadata.tables)
    tables.add(_signing.signing_keys.name)
    assert tables - inventory.registered_tables() == set()
    adapters = {
        name
        for name in dir(index_package)
        if name.endswith("Index")
        and isinstance(getattr(index_package, name), type)
        and getattr(index_package, name) is not VectorIndex
    }
    assert adapters and adapters <= inventory.registered_adapters()


def test_the_inventory_check_fails_on_an_unregistered_table() -> None:
    metadata = MetaData()
    Table("notes", metadata, Column("id", Integer, primary_key=True))
    Table("shadow_copies", metadata, Column("user_id", String(8), primary_key=True))
    assert inventory.unregistered_tables(metadata) == {"shadow_copies"}


def test_erase_over_the_api_returns_a_receipt_and_the_inventory_counts_zero(
    make_services: ServicesFactory, backend: str
) -> None:
    api = Api(make_services(backend))
    admin = api.tenant("t1")
    for agent in ("a1", "a2"):
        api.add(api.agent_key("t1", USER, agent), f"the canoe is blue ({agent})")
    keeper = api.agent_key("t1", "usrqzstays", "a1")
    api.add(keeper, "the canoe is green")

    before = api.call("GET", f"/v1/admin/inventory?user_id={USER}", admin)
    assert before.status_code == 200, before.text
    counts = {s["store"]: s["count"] for s in before.json()["stores"]}
    assert counts["notes"] == 2 and counts["vectors"] == 2 and counts["api_keys"] == 2

    r = api.call("POST", "/v1/admin/erase", admin, json={"user_id": USER})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["state"] == "done" and body["receipt"]["verified"] is True
    receipt = {k: body[k] for k in ("receipt", "key_id", "signature")}
    published = api.client.get("/v1/receipt-keys").json()["keys"]
    assert verify_document(body["receipt"], body["key_id"], body["signature"], published)

    fetched = api.call("GET", f"/v1/admin/erasures/{body['id']}", admin).json()
    assert {k: fetched[k] for k in receipt} == receipt
    listed = api.call("GET", "/v1/admin/erasures", admin).json()["erasures"]
    assert [e["id"] for e in listed] == [body["id"]]

    after = api.call("GET", f"/v1/admin/inventory?user_id={USER}", admin).json()["stores"]
    erasable = {s["store"] for s in after if s["count"] is not None}
    assert {"notes", "vectors", "data_keys", "api_keys"} <= erasable
    assert all(s["count"] == 0 for s in after if s["count"] is not None)
    assert len(api.search(keeper, "canoe")) == 1
    assert api.call("GET", "/v1/admin/erasures/no-such-job", admin).status_code == 404
    agent_key = api.agent_key("t1", "usrqzstays", "a2")
    assert api.call("GET", "/v1/admin/erasures", agent_key).status_code == 403


def test_a_slow_erase_answers_202_with_the_job_then_the_receipt(
    make_services: ServicesFactory,
) -> None:
    api = Api(make_services("sqlite"))
    admin = api.tenant("t1")
    api.add(api.agent_key("t1", USER, "a1"), "the tent pegs are in the red bag")
    api.client.app.state.erase_wait = 0.0  # type: ignore[attr-defined]
    r = api.call("POST", "/v1/admin/erase", admin, json={"user_id": USER})
    assert r.status_code in (200, 202), r.text
    job_id = r.json()["id"]
    api.client.app.state.compliance.erasures.wait()  # type: ignore[attr-defined]
    done = api.call("GET", f"/v1/admin/erasures/{job_id}", admin).json()
    assert done["state"] == "done" and done["receipt"]["verified"] is True


def test_tenant_deletion_returns_a_signed_receipt(make_services: ServicesFactory) -> None:
    api = Api(make_services("sqlite"))
    key = api.agent_key("t9", "u1", "a1")
    api.add(key, "something the tenant remembers")
    r = api.call("DELETE", "/v1/operator/tenants/t9", OPERATOR_KEY)
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["receipt"]["verified"] is True and body["receipt"]["tenant_id"] == "t9"
    deleted = {s["store"]: s["deleted"] for s in body["receipt"]["stores"]}
    assert deleted["notes"] == 1
    assert deleted["api_keys"] == 2  # the tenant admin's key and the agent's
    again = api.call("GET", f"/v1/operator/tenant-deletions/{body['id']}", OPERATOR_KEY)
    assert again.json()["signature"] == body["signature"]
    published = api.client.get("/v1/receipt-keys").json()["keys"]
    assert verify_document(body["receipt"], body["key_id"], body["signature"], published)


def test_a_tenant_deletion_a_reader_blocks_answers_202_and_the_sweeper_finishes_it(
    make_services: ServicesFactory, tmp_path: Path
) -> None:
    """The keys are shredded and the rows deleted, but no receipt may claim a scrub a reader
    blocked: the operator gets the deletion's id and polls it; the sweeper signs it later."""
    root = tmp_path / "vault"
    services = make_services("sqlite", data_dir=root)
    api = Api(services)
    api.add(api.agent_key("tnqzgone", "u1", "a1"), "the tenant keeps its canoe by the lake")
    services.eraser.checkpoint_attempts = 2
    deletions = install(services).tenant_deletions
    with _old_snapshot(root):
        r = api.call("DELETE", "/v1/operator/tenants/tnqzgone", OPERATOR_KEY)
        assert r.status_code == 202, r.text
        job_id = r.json()["id"]
        assert r.json() == {"id": job_id, "state": "running", "step": "rows"}
        polled = api.call("GET", f"/v1/operator/tenant-deletions/{job_id}", OPERATOR_KEY)
        assert polled.status_code == 200 and polled.json()["state"] == "running"
        assert deletions.resume_stalled(idle_for=3600) == 0  # not stalled long enough yet
        assert deletions.resume_stalled(idle_for=0) == 0  # the reader still blocks it
    assert deletions.resume_stalled(idle_for=0) == 1
    done = api.call("GET", f"/v1/operator/tenant-deletions/{job_id}", OPERATOR_KEY).json()
    assert done["state"] == "done" and done["receipt"]["verified"] is True
    assert all(s["remaining"] == 0 for s in done["receipt"]["stores"])
    assert _verifies(services, done)
    assert deletions.resume_stalled(idle_for=0) == 0  # nothing left running


def test_a_tenant_deletion_running_in_a_thread_is_left_to_it(
    make_services: ServicesFactory,
) -> None:
    services = make_services("sqlite")
    services.tenants.create("t1")
    deletions = install(services).tenant_deletions
    job_id = deletions.start("t1")
    ran: list[int] = []

    def in_flight(point: str) -> None:
        if point == "before:shred":
            ran.append(deletions.resume_stalled(idle_for=0))  # the sweeper, meanwhile
            with pytest.raises(Conflict):
                deletions.run(job_id)

    deletions.fault = in_flight
    receipt = deletions.run(job_id)
    assert ran == [0]
    assert receipt["receipt"]["verified"] is True


def test_an_erase_removes_the_users_ids_from_key_rotation_records(
    make_services: ServicesFactory, tmp_path: Path
) -> None:
    from memvault.compliance import rotation

    root, services = _seeded(make_services, tmp_path)
    rotation.start_rotation(services, "t1", USER, None, "k-admin")  # the victim's own job
    whole = rotation.start_rotation(services, "t1", None, None, "k-admin")  # the whole tenant
    jobs = install(services).erasures
    assert inventory.count("key_rotation_jobs", services, OwnedBy("t1", USER)) == 2
    receipt = jobs.run("t1", jobs.start("t1", USER, None, "k-admin"))
    assert receipt["receipt"]["verified"] is True
    kept = rotation.load_rotation(services, "t1", whole.id)
    assert all(scope[0] != USER for scope in kept.scopes) and kept.scopes
    services.close()
    assert not _files_hold(root, USER.encode())
