"""Incremental reconcile passes: work in proportion to what writes marked, never to the
number of partitions, and every crash repair still found (the mark is durable before the
vector is written)."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import select

from memvault.index import EdgeIndex, PointFilter
from memvault.runtime.factory import Services
from memvault.scope import Scope
from memvault.store.models import IndexMarkRow, NoteRow
from tests.conftest import ServicesFactory
from tests.faults import Crash, crash_at

USERS = 6


def _filled(services: Services) -> EdgeIndex:
    """Tenant t1 with USERS users of one note each, every mark cleared, every shard closed."""
    services.tenants.create("t1")
    for u in range(USERS):
        services.vault.scoped(Scope("t1", f"u{u}", "a1")).add(f"user {u} likes tea number {u}")
    services.reconciler.run(grace_seconds=0)  # clears every mark
    assert services.vault.parts.marks.tenants() == []
    index = services.index
    assert isinstance(index, EdgeIndex)
    index.close()
    return index


def _marks(services: Services) -> list[str]:
    with services.db.session("t1") as sess:
        return sorted(sess.execute(select(IndexMarkRow.user_key)).scalars())


def test_a_pass_with_nothing_changed_opens_no_partition(
    make_services: ServicesFactory, backend: str
) -> None:
    services = make_services(backend)
    index = _filled(services)
    before = index.shard_opens
    report = services.reconciler.run(grace_seconds=0)
    assert (report.orphans_deleted, report.completed, report.updates_completed) == (0, 0, 0)
    assert index.shard_opens == before
    assert index.open_partitions() == []


def test_a_pass_opens_only_the_partition_a_write_touched(
    make_services: ServicesFactory, backend: str
) -> None:
    services = make_services(backend)
    index = _filled(services)
    services.vault.scoped(Scope("t1", "u3", "a1")).add("user 3 now prefers coffee")
    assert _marks(services) == ["u3"]
    index.close()
    before = index.shard_opens
    services.reconciler.run(grace_seconds=0)
    assert index.shard_opens == before + 1
    assert [p for _, p in index.open_partitions()] == [
        index.partition_path("t1", _tag(services, "u3")).name
    ]
    assert _marks(services) == []


def _tag(services: Services, user: str) -> str:
    from memvault.vault.drafts import user_tag

    return user_tag(services.keyring.index_key("t1").tag, user)


def test_a_crash_left_orphan_in_one_partition_is_found_by_an_incremental_pass(
    make_services: ServicesFactory, backend: str
) -> None:
    services = make_services(backend)
    index = _filled(services)
    vault = services.vault.scoped(Scope("t1", "u2", "a1"))
    services.vault.fault = crash_at("after_upsert")
    with pytest.raises(Crash):
        vault.add("user 2 flies to Lisbon at seven")
    services.vault.fault = lambda _s: None
    assert _marks(services) == ["u2"]
    assert index.count("t1", PointFilter(user_id=_tag(services, "u2"))) == 2  # one orphan
    index.close()
    before = index.shard_opens
    report = services.reconciler.run(grace_seconds=0)
    assert report.orphans_deleted == 1
    assert index.shard_opens == before + 1  # u2's partition, and no other
    assert index.count("t1", PointFilter(user_id=_tag(services, "u2"))) == 1


def test_the_mark_is_committed_before_the_vector_is_written(
    make_services: ServicesFactory, backend: str
) -> None:
    services = make_services(backend)
    _filled(services)
    seen: list[list[str]] = []
    real = services.vault.parts.index.upsert

    def upsert(namespace, points):  # type: ignore[no-untyped-def]
        seen.append(_marks(services))  # read in another transaction: committed already
        real(namespace, points)

    services.vault.parts.index.upsert = upsert  # type: ignore[method-assign]
    services.vault.scoped(Scope("t1", "u4", "a1")).add("user 4 walks to work")
    assert seen == [["u4"]]


def test_a_young_mark_outlives_the_pass_that_cannot_judge_its_writes(
    make_services: ServicesFactory,
) -> None:
    # A pass with a grace period keeps marks whose writes may still be in flight.
    services = make_services("sqlite")
    _filled(services)
    services.vault.scoped(Scope("t1", "u1", "a1")).add("user 1 reads at night")
    services.reconciler.run(grace_seconds=60)
    assert _marks(services) == ["u1"]


def test_a_crash_left_staged_update_is_found_by_an_incremental_pass(
    make_services: ServicesFactory, backend: str
) -> None:
    services = make_services(backend)
    services.tenants.create("t1")
    vault = services.vault.scoped(Scope("t1", "u1", "a1"))
    note = vault.add("the meeting is on Monday")
    services.reconciler.run(grace_seconds=0)
    services.vault.fault = crash_at("after_stage")
    with pytest.raises(Crash):
        vault.update(note.id, text="the meeting is on Tuesday")
    services.vault.fault = lambda _s: None
    assert _marks(services) == ["u1"]
    report = services.reconciler.run(grace_seconds=0)
    assert report.updates_completed == 1
    with services.db.session("t1") as sess:
        row = sess.get(NoteRow, ("t1", note.id))
        assert row is not None and row.next_at is None
    assert "Tuesday" in vault.get(note.id).text


def test_marks_survive_a_restart_and_the_startup_pass_opens_only_marked_partitions(
    make_services: ServicesFactory, tmp_path: Path
) -> None:
    data = tmp_path / "restart"
    services = make_services("sqlite", data_dir=data)
    _filled(services)
    services.vault.fault = crash_at("after_upsert")
    with pytest.raises(Crash):
        services.vault.scoped(Scope("t1", "u5", "a1")).add("user 5 grows basil")
    services.close()
    again = make_services("sqlite", data_dir=data)
    index = again.index
    assert isinstance(index, EdgeIndex)
    report = again.start()
    assert report.orphans_deleted == 1
    assert index.shard_opens == 1
    assert again.vault.parts.marks.tenants() == []


def test_index_maintenance_looks_only_at_partitions_written_since_the_last_pass(
    tmp_path: Path,
) -> None:
    """After its first pass (which walks every partition for markers an earlier process left),
    `maintain` looks only at partitions this process wrote since: a marker planted on disk
    behind its back is not seen until the next process starts."""
    from memvault.index._edge_layout import mark_dirty
    from tests.test_index.shapes import DIM, axis, point

    root = tmp_path / "index"
    index = EdgeIndex(root, DIM)
    gone = point(axis(1), user="u2")
    index.upsert("t1", [point(axis(0), user=f"u{u}") for u in range(4)] + [gone])
    mark_dirty(index.partition_path("t1", "u3"))  # left by "an earlier process"
    assert index.maintain("t1") == 1 and index.dirty_partitions("t1") == 0  # the first walk

    mark_dirty(index.partition_path("t1", "u0"))  # behind its back: not looked at
    index.delete("t1", [gone.id], user_id="u2")  # a write marks u2 dirty itself
    assert index.dirty_partitions("t1") == 2
    assert index.maintain("t1") == 1  # u2 only
    assert index.dirty_partitions("t1") == 1
    assert index.maintain("t1") == 0  # nothing written since
    index.close()

    restarted = EdgeIndex(root, DIM)
    assert restarted.maintain("t1") == 1 and restarted.dirty_partitions("t1") == 0
    restarted.close()
