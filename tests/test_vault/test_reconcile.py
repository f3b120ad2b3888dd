"""Crash repair: a failure between the write steps is repaired by the reconciler."""

from __future__ import annotations

import pytest

from memvault.scope import Scope
from memvault.vault.index.base import IndexPoint, PointFilter
from memvault.vault.service import PENDING
from memvault.vault.store.models import NoteRow
from tests.conftest import ServicesFactory
from tests.faults import Crash, crash_at


def _rows(services, status: str | None = None) -> list[NoteRow]:  # type: ignore[no-untyped-def]
    with services.db.session("t1") as sess:
        query = sess.query(NoteRow).filter(NoteRow.tenant_id == "t1")
        if status:
            query = query.filter(NoteRow.status == status)
        return list(query)


@pytest.mark.parametrize("step", ["after_pending", "after_upsert"])
def test_reconciler_completes_a_write_interrupted_between_steps(
    make_services: ServicesFactory, backend: str, step: str
) -> None:
    services = make_services(backend)
    services.tenants.create("t1")
    vault = services.vault.scoped(Scope("t1", "u1", "a1"))
    services.vault.fault = crash_at(step)
    with pytest.raises(Crash):
        vault.add("The user's flight to Lisbon leaves at seven")
    services.vault.fault = lambda _s: None
    assert len(_rows(services, PENDING)) == 1
    assert vault.search("when is the flight?") == []  # a pending note is never served

    report = services.reconciler.run(grace_seconds=0)
    assert report.completed == 1 and report.removed == 0
    assert _rows(services, PENDING) == []
    hits = vault.search("when is the flight?")
    assert len(hits) == 1 and "Lisbon" in hits[0].note.text
    assert services.index.count("t1", PointFilter()) == 1


def test_reconciler_leaves_young_pending_rows_alone(make_services: ServicesFactory) -> None:
    services = make_services("sqlite")
    services.tenants.create("t1")
    vault = services.vault.scoped(Scope("t1", "u1", "a1"))
    services.vault.fault = crash_at("after_pending")
    with pytest.raises(Crash):
        vault.add("The user's flight to Lisbon leaves at seven")
    report = services.reconciler.run(grace_seconds=3600)
    assert report.completed == 0
    assert len(_rows(services, PENDING)) == 1


def test_reconciler_removes_pending_rows_whose_keys_are_gone(
    make_services: ServicesFactory,
) -> None:
    services = make_services("sqlite")
    services.tenants.create("t1")
    vault = services.vault.scoped(Scope("t1", "u1", "a1"))
    services.vault.fault = crash_at("after_upsert")
    with pytest.raises(Crash):
        vault.add("The user's flight to Lisbon leaves at seven")
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
    report = services.reconciler.run(grace_seconds=0)
    assert report.orphans_deleted == 1
    assert services.index.scroll_ids("t1", PointFilter()) == [kept.id]
