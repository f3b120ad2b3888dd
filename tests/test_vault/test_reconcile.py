"""Crash repair: a failure between the write steps is repaired by the reconciler."""

from __future__ import annotations

import pytest

from memvault.index.base import IndexPoint, PointFilter
from memvault.runtime.factory import Services
from memvault.scope import Scope
from memvault.store.models import NoteRow
from memvault.vault.service import ACTIVE, PENDING, ScopedVault
from tests.conftest import ServicesFactory
from tests.faults import Crash, crash_at

FLIGHT = "The user's flight to Lisbon leaves at seven"


def _rows(services, status: str | None = None) -> list[NoteRow]:  # type: ignore[no-untyped-def]
    with services.db.session("t1") as sess:
        query = sess.query(NoteRow).filter(NoteRow.tenant_id == "t1")
        if status:
            query = query.filter(NoteRow.status == status)
        return list(query)


def _vault_after_a_crash(services: Services, step: str) -> ScopedVault:
    """u1/a1's vault in a new tenant t1, after an add of FLIGHT crashed at `step` (the fault
    is cleared again)."""
    services.tenants.create("t1")
    vault = services.vault.scoped(Scope("t1", "u1", "a1"))
    services.vault.fault = crash_at(step)
    with pytest.raises(Crash):
        vault.add(FLIGHT)
    services.vault.fault = lambda _s: None
    return vault


def test_a_crash_before_the_add_commits_leaves_only_an_orphan_vector(
    make_services: ServicesFactory, backend: str
) -> None:
    # The add indexes first and inserts its row in one transaction after that: a crash in
    # between leaves a vector without a row (never served), which the reconciler deletes.
    services = make_services(backend)
    vault = _vault_after_a_crash(services, "after_upsert")
    assert _rows(services) == []
    assert services.index.count("t1", PointFilter()) == 1
    assert vault.search("when is the flight?") == []  # an unacknowledged add is never served

    report = services.reconciler.run(grace_seconds=0)
    assert report.orphans_deleted == 1 and report.completed == 0 and report.removed == 0
    assert services.index.count("t1", PointFilter()) == 0
    again = vault.add(FLIGHT)  # the client's retry
    hits = vault.search("when is the flight?")
    assert [h.note.id for h in hits] == [again.id]


def test_a_crash_after_the_commit_leaves_a_complete_note(
    make_services: ServicesFactory, backend: str
) -> None:
    services = make_services(backend)
    vault = _vault_after_a_crash(services, "after_commit")
    assert [r.status for r in _rows(services)] == [ACTIVE]
    assert "Lisbon" in vault.search("when is the flight?")[0].note.text
    report = services.reconciler.run(grace_seconds=0)
    assert (report.completed, report.removed, report.orphans_deleted) == (0, 0, 0)


def test_reconciler_leaves_young_orphan_vectors_alone(make_services: ServicesFactory) -> None:
    # A young vector without a row may be an add in flight: its row commits after the upsert.
    services = make_services("sqlite")
    _vault_after_a_crash(services, "after_upsert")
    report = services.reconciler.run(grace_seconds=3600)
    assert report.orphans_deleted == 0
    assert services.index.count("t1", PointFilter()) == 1


def test_reconciler_removes_pending_rows_whose_keys_are_gone(
    make_services: ServicesFactory,
) -> None:
    # A row left `pending` (by the earlier three-step protocol) whose keys were shredded.
    services = make_services("sqlite")
    services.tenants.create("t1")
    vault = services.vault.scoped(Scope("t1", "u1", "a1"))
    note = vault.add(FLIGHT)
    with services.db.session("t1") as sess:
        row = sess.get(NoteRow, ("t1", note.id))
        assert row is not None
        row.status = PENDING
    services.keyring.shred("t1", "u1", "a1")
    report = services.reconciler.run(grace_seconds=0)
    assert report.removed == 1
    assert _rows(services) == []
    assert services.index.count("t1", PointFilter()) == 0


def test_reconciler_deletes_orphan_vectors(make_services: ServicesFactory, backend: str) -> None:
    services = make_services(backend)
    services.tenants.create("t1")
    vault = services.vault.scoped(Scope("t1", "u1", "a1"))
    kept = vault.add("The user's favourite tea is genmaicha")
    orphan = "0190a0a0-0000-7000-8000-000000000001"
    services.index.upsert(
        "t1",
        [
            IndexPoint(
                id=orphan,
                dense=[0.1] * services.vault.parts.embedder.dimension,
                payload={"user_id": "u1", "agent_id": "a1", "readers": ["a1"], "is_active": 1},
            )
        ],
    )
    # A point no write path made (its user_id is not a blind tag): no mark names its
    # partition, so only the full pass (`memvault reconcile`, a restore) visits it.
    report = services.reconciler.run_full(grace_seconds=0)
    assert report.orphans_deleted == 1
    assert services.index.scroll_ids("t1", PointFilter()) == [kept.id]
