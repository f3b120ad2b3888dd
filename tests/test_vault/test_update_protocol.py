"""Updates go through the staged protocol: a failed update changes nothing, a crashed one is
finished by the reconciler, and one bad row never stops the repair of the others."""

from __future__ import annotations

import logging

import pytest

from memvault.errors import InvalidRequest, ScreenRefused
from memvault.index.base import PointFilter
from memvault.scope import Scope
from memvault.store.models import NoteRow
from memvault.vault.service import ACTIVE
from tests._helpers import T1_SCOPE, tenant_vault
from tests.conftest import ServicesFactory
from tests.faults import Crash, crash_at

SCOPE = T1_SCOPE


def _row(services, note_id: str) -> NoteRow:  # type: ignore[no-untyped-def]
    with services.db.session("t1") as sess:
        row = sess.get(NoteRow, ("t1", note_id))
        assert row is not None
        return row


@pytest.mark.parametrize(
    "change",
    [
        {"topics": ["\ud800"]},
        {"text": "bad \udfff text, long enough"},
        {"source": "x\x00y"},
        {"text": "my aws key is AKIAIOSFODNN7EXAMPLE and wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"},
        {"topics": ["password is hunter2"]},
        {"readers": ["bad id\n"]},
    ],
)
def test_a_failed_update_leaves_the_note_exactly_as_it_was(
    make_services: ServicesFactory, backend: str, change: dict[str, object]
) -> None:
    services, vault = tenant_vault(make_services, backend)
    note = vault.add("Alice's sister lives in Porto", topics=["family"], source="chat")
    before = _row(services, note.id)

    with pytest.raises((InvalidRequest, ScreenRefused)):
        vault.update(note.id, **change)  # type: ignore[arg-type]

    after = _row(services, note.id)
    for column in NoteRow.__table__.columns:
        assert getattr(after, column.key) == getattr(before, column.key), column.key
    assert after.status == ACTIVE and after.next_at is None
    assert vault.get(note.id).text == "Alice's sister lives in Porto"
    assert [h.note.id for h in vault.search("where does the sister live?")] == [note.id]


@pytest.mark.parametrize("step", ["after_stage", "after_upsert"])
def test_a_crashed_update_keeps_the_old_version_until_the_reconciler_finishes_it(
    make_services: ServicesFactory, backend: str, step: str
) -> None:
    services, vault = tenant_vault(make_services, backend)
    note = vault.add("The team meeting moved to Tuesday morning")
    services.vault.fault = crash_at(step)
    with pytest.raises(Crash):
        vault.update(note.id, text="The team meeting moved to Thursday afternoon")
    services.vault.fault = lambda _s: None

    # The previous version is still served (never a 404, never pending).
    assert vault.get(note.id).text == "The team meeting moved to Tuesday morning"
    assert _row(services, note.id).next_at is not None

    report = services.reconciler.run(grace_seconds=0)
    assert report.updates_completed == 1 and report.failed == 0
    assert vault.get(note.id).text == "The team meeting moved to Thursday afternoon"
    assert _row(services, note.id).next_at is None
    hits = vault.search("Thursday afternoon meeting", mode="sparse")
    assert [h.note.id for h in hits] == [note.id]
    assert services.index.count("t1", PointFilter()) == 1


def test_one_bad_row_is_skipped_and_logged_by_id_and_the_rest_repaired(
    make_services: ServicesFactory, caplog: pytest.LogCaptureFixture
) -> None:
    services = make_services("sqlite")
    for tenant in ("t0", "t1"):
        services.tenants.create(tenant)
    good = services.vault.scoped(SCOPE)
    other = services.vault.scoped(Scope("t0", "u1", "a1"))
    first = other.add("Bob prefers window seats on long flights")
    services.vault.fault = crash_at("after_stage")
    with pytest.raises(Crash):
        other.update(first.id, text="Bob prefers aisle seats on long flights")
    services.vault.fault = crash_at("after_upsert")  # t1: an orphan vector to delete
    with pytest.raises(Crash):
        good.add("The user's flight to Lisbon leaves at seven")
    services.vault.fault = lambda _s: None
    # Corrupt t0's staged update so its repair raises (not a decryption error).
    with services.db.session("t0") as sess:
        row = sess.get(NoteRow, ("t0", first.id))
        assert row is not None
        row.next_state = "{not json"

    with caplog.at_level(logging.WARNING):
        report = services.reconciler.run(grace_seconds=0)
    assert report.failed == 1 and report.orphans_deleted == 1
    assert first.id in caplog.text
    assert "Lisbon" not in caplog.text and "aisle" not in caplog.text
    assert services.index.count("t1", PointFilter()) == 0
    assert other.get(first.id).text == "Bob prefers window seats on long flights"


def test_update_readers_is_staged_with_the_new_reader_list(
    make_services: ServicesFactory, backend: str
) -> None:
    services, owner = tenant_vault(make_services, backend)
    coder = services.vault.scoped(Scope("t1", "u1", "coder"))
    note = owner.add("The staging database is rebuilt every Sunday")
    assert coder.search("staging database rebuilt") == []
    owner.update(note.id, readers=["coder"])
    assert [h.note.id for h in coder.search("staging database rebuilt")] == [note.id]
    owner.update(note.id, readers=[])
    assert coder.search("staging database rebuilt") == []
