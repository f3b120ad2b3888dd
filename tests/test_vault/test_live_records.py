"""A search's hydration on the driver (`ScopedReads.live_records`) reads exactly what the ORM
read (`live_rows`) would: the same notes, the same fields, the same scope rules.

On both backends (PostgreSQL as the app role, bound by row-level security), for callers whose
agent id holds a LIKE wildcard (`_`), across tenants, users, soft deletes, expiry, links, and
id lists longer than one statement takes.
"""

from __future__ import annotations

import time
import uuid

import pytest
from sqlalchemy import text

from memvault.runtime.factory import Services
from memvault.scope import Scope
from memvault.store.records import NoteFields, NoteRecord
from memvault.vault.scoped_reads import MAX_IDS_PER_READ, _live_by_ids, id_bucket
from tests.conftest import ServicesFactory

FIELDS = [name for name in NoteRecord._fields if name != "has_links"]


def seed(services: Services) -> dict[str, str]:
    """Notes in and around scope (t1, u1): name -> id."""
    services.tenants.create("t1")
    services.tenants.create("t2")
    vault = services.vault
    a1 = vault.scoped(Scope("t1", "u1", "a1"))
    ids = {
        "private": a1.add("Alice keeps the spare key in the blue flower pot").id,
        "linked": a1.add("The blue flower pot stands by the garage door").id,
        "shared": a1.add("The team lunch is on Fridays at noon", visibility="shared").id,
        "deleted": a1.add("Bruno sold his old bicycle last spring").id,
        "expiring": a1.add("The parking permit runs out soon", ttl_days=1).id,
        # readers |ab1|: a caller `a_1` must not match it as a LIKE pattern would
        "wildcard_bait": vault.scoped(Scope("t1", "u1", "ab1")).add("Chiara plays guitar").id,
        "other_user": vault.scoped(Scope("t1", "u2", "a1")).add("Alice keeps the spare key").id,
        "other_tenant": vault.scoped(Scope("t2", "u1", "a1")).add("Alice keeps the spare key").id,
    }
    a1.link(ids["private"], ids["linked"])
    a1.delete(ids["deleted"])
    return ids


def assert_same_rows(services: Services, viewer: Scope, ids: list[str]) -> set[str]:
    """live_records agrees with live_rows, field by field; returns the ids it found."""
    view = services.vault.scoped(viewer)
    records = view.live_records(ids, with_links=True)
    with services.db.session(viewer.tenant) as sess:
        rows = view.live_rows(sess, ids)
        linked = {
            r[0]
            for r in sess.execute(
                text("SELECT src_id FROM links UNION SELECT dst_id FROM links")
            ).all()
        }
    assert set(records) == set(rows)
    for note_id, record in records.items():
        row: NoteFields = rows[note_id]
        assert [getattr(record, f) for f in FIELDS] == [getattr(row, f) for f in FIELDS]
        assert record.has_links is (note_id in linked)
        assert view.note_of(record) == view.note_of(row)
    without = view.live_records(ids)
    assert set(without) == set(records)
    assert not any(r.has_links for r in without.values())
    return set(records)


@pytest.mark.parametrize("backend_name", ["sqlite", "postgres"])
def test_live_records_read_what_live_rows_read(
    make_services: ServicesFactory, monkeypatch: pytest.MonkeyPatch, backend_name: str
) -> None:
    services = make_services(backend_name)
    ids = seed(services)
    every = list(ids.values())
    found = assert_same_rows(services, Scope("t1", "u1", "a1"), every)
    assert found == {ids["private"], ids["linked"], ids["shared"], ids["expiring"]}
    found = assert_same_rows(services, Scope("t1", "u1", "a_1"), every)
    assert found == {ids["shared"]}  # not the note only `ab1` reads
    assert assert_same_rows(services, Scope("t1", "u2", "a1"), every) == {ids["other_user"]}
    assert assert_same_rows(services, Scope("t2", "u1", "a1"), every) == {ids["other_tenant"]}

    later = time.time() + 2 * 86_400
    monkeypatch.setattr(services.vault.parts, "clock", lambda: later)
    found = assert_same_rows(services, Scope("t1", "u1", "a1"), every)
    assert ids["expiring"] not in found and ids["private"] in found

    # more ids than one statement takes, with repeats: two statements, nothing lost or doubled
    padded = [str(uuid.uuid4()) for _ in range(MAX_IDS_PER_READ + 40)] + every + every
    assert assert_same_rows(services, Scope("t1", "u1", "a1"), padded) == found


@pytest.mark.parametrize("n_ids", [1, 30, 200, MAX_IDS_PER_READ])
def test_hydration_statement_is_planned_on_the_primary_key(
    make_services: ServicesFactory, n_ids: int
) -> None:
    services = make_services("sqlite")
    size = id_bucket(n_ids)
    assert size >= n_ids and (size == 8 or size < 2 * n_ids)
    statement = _live_by_ids(size, True).statement
    values = {f"id_{i}": f"00000000-0000-7000-8000-{i:012d}" for i in range(size)}
    values |= {"scope_tenant": "t1", "scope_user": "u1", "now": 0.0}
    values |= {"scope_reader": "%|a1|%", "scope_any_reader": "%|*|%"}
    bound = statement.params(**values)  # type: ignore[attr-defined]
    sql = str(bound.compile(services.db.engine, compile_kwargs={"literal_binds": True}))
    with services.db.engine.connect() as conn:
        plan = " ".join(str(row[-1]) for row in conn.execute(text("EXPLAIN QUERY PLAN " + sql)))
    assert "sqlite_autoindex_notes_1" in plan, plan
    assert "ix_notes_dedup" not in plan and "ix_notes_scope" not in plan, plan
