"""The startup upgrade of a data dir whose notes an earlier A-MEM absorbed (issue 31): each
absorbed note is live again with its own text, the survivor's text goes back to its writer's,
its history forgets the other note's sentences, and a relation replaces the alias."""

from __future__ import annotations

import time

import pytest
from sqlalchemy import update

from memvault.amem.attrs import append_history, update_attrs
from memvault.runtime.factory import Services
from memvault.runtime.upgrades import restore_absorbed
from memvault.scope import Scope
from memvault.store.models import NoteRow
from memvault.vault.drafts import namespace_for
from tests.conftest import ServicesFactory

A = Scope("t1", "u1", "a1")


@pytest.fixture
def services(make_services: ServicesFactory, backend: str) -> Services:
    services = make_services(backend, amem=False)
    services.tenants.create("t1")
    return services


def _absorb_the_old_way(
    services: Services, survivor_id: str, absorbed_id: str, action: str
) -> None:
    """What `NoteWriter._absorb` and the pipeline used to leave behind."""
    view = services.vault.scoped(A)
    before = view.get(survivor_id).text
    merged = f"{before} {view.get(absorbed_id).text}"
    view.update(survivor_id, text=merged)
    entry = {"at": time.time(), "action": action, "absorbed": absorbed_id, "previous": before}
    assert update_attrs(view, survivor_id, lambda a: append_history(a, entry))
    with services.db.session("t1") as sess:
        sess.execute(
            update(NoteRow).where(NoteRow.id == absorbed_id).values(is_active=0, enrichment="done")
        )
    services.index.set_payload(namespace_for("t1"), [absorbed_id], {"alias_of": survivor_id})


@pytest.mark.parametrize(
    ("action", "relation"),
    [("EVOLVE", "supersedes"), ("EXPAND", "expands"), ("MERGE", "duplicate_of")],
)
def test_an_absorbed_note_comes_back_whole(services: Services, action: str, relation: str) -> None:
    view = services.vault.scoped(A)
    old = view.add("The user wants to buy a Model 3")
    new = view.add("The user decided on the standard RWD Model 3")
    _absorb_the_old_way(services, old.id, new.id, action)
    assert "RWD" in view.get(old.id).text

    assert restore_absorbed(services.vault, ["t1"]) == 1
    assert view.get(new.id).text == "The user decided on the standard RWD Model 3"
    assert view.get(old.id).text == "The user wants to buy a Model 3"
    assert view.get(new.id).relations == {relation: (old.id,)}
    with services.db.session("t1") as sess:
        row = sess.get(NoteRow, ("t1", old.id))
        assert row is not None
        _, attrs = services.vault.codec.open(A, row.id, row.key_version, row.text_ct, row.attrs_ct)
    assert all("RWD" not in str(h) for h in attrs.get("evolution_history", []))
    found = [h.note.id for h in view.search("standard RWD Model 3", include_history=True)]
    assert new.id in found
    assert restore_absorbed(services.vault, ["t1"]) == 0  # once


def test_a_survivor_its_writer_changed_after_the_absorb_keeps_the_change(
    services: Services,
) -> None:
    view = services.vault.scoped(A)
    old = view.add("The user has a sister")
    new = view.add("The user's sister works in finance in Northvale")
    _absorb_the_old_way(services, old.id, new.id, "EXPAND")
    time.sleep(2.2)  # past the margin: the writer's own PATCH, later
    view.update(old.id, text="The user has two sisters")
    assert restore_absorbed(services.vault, ["t1"]) == 1
    assert view.get(old.id).text == "The user has two sisters"
    assert view.get(new.id).text == "The user's sister works in finance in Northvale"


def test_a_user_deleted_note_stays_deleted(services: Services) -> None:
    view = services.vault.scoped(A)
    note = view.add("The user keeps bees in the garden")
    view.delete(note.id)
    with services.db.session("t1") as sess:
        sess.execute(update(NoteRow).where(NoteRow.id == note.id).values(enrichment="done"))
    assert restore_absorbed(services.vault, ["t1"]) == 0
    assert view.list_notes()[1] == 0
