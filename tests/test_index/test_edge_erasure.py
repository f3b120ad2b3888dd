"""Edge physical erasure: after a removal, no file under the root holds the removed points.

Each test first checks that the bytes it looks for ARE in the files while the points live (and,
for logical deletes, still are after the delete): the scan can see them, so an absence later
means they were removed, not that the scan is blind.
"""

from __future__ import annotations

import numpy as np
import pytest

from memvault.errors import InvalidRequest
from memvault.index import EdgeIndex, PointFilter, SparseVector
from tests.test_index.erasure import WIDE, Planted, files_holding, needles_of, planted

NS = "acme"
ALL = PointFilter()


def _index(tmp_path, **kwargs) -> EdgeIndex:
    return EdgeIndex(tmp_path / "index", WIDE, **kwargs)


def _scores(index: EdgeIndex, points: list[Planted]) -> dict[str, float]:
    """Each point's own dense score as the top hit of a search by its vector, within its user."""
    scores = {}
    for p in points:
        where = PointFilter(user_id=p.point.payload["user_id"])
        [top] = index.search_dense(NS, p.point.dense, where, 1)
        assert top.id == p.id
        scores[p.id] = top.score
    return scores


def _sparse_scores(index: EdgeIndex, user: str, word: int) -> dict[str, float]:
    query = SparseVector(indices=(word,), values=(1.0,))
    return {h.id: h.score for h in index.search_sparse(NS, query, PointFilter(user_id=user), 50)}


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(20261130)


def test_delete_then_compact_leaves_no_trace_and_keeps_survivors(tmp_path, rng) -> None:
    index = _index(tmp_path)
    removed = [planted(rng, "alice", words=11) for _ in range(3)]
    kept = [planted(rng, "alice", words=11) for _ in range(4)]
    others = [planted(rng, "bob", words=11) for _ in range(3)]
    index.upsert(NS, [p.point for p in removed + kept + others])
    index.flush()
    root = index.root
    assert files_holding(root, [p.needles()["vector"] for p in removed]), "scan sees vectors"
    before = _scores(index, kept + others)

    index.delete(NS, [p.id for p in removed])
    index.flush()

    # Logically gone, physically still there: this is what the rebuild is for.
    assert index.retrieve(NS, [p.id for p in removed]) == []
    assert files_holding(root, needles_of(removed))
    assert index.dirty_partitions(NS) == 1

    assert index.compact(NS) == 1

    assert files_holding(root, needles_of(removed)) == []
    assert index.dirty_partitions(NS) == 0
    assert index.compact(NS) == 0
    assert _scores(index, kept + others) == pytest.approx(before, rel=1e-6)
    assert sorted(index.scroll_ids(NS, ALL)) == sorted(p.id for p in kept + others)
    # Sparse scores after the rebuild equal those of an index that never held the removed points.
    fresh = EdgeIndex(tmp_path / "fresh", WIDE)
    fresh.upsert(NS, [p.point for p in kept])
    assert _sparse_scores(index, "alice", 11) == pytest.approx(
        _sparse_scores(fresh, "alice", 11), rel=1e-6
    )
    fresh.close()
    index.close()

    reopened = _index(tmp_path)
    assert _scores(reopened, kept + others) == pytest.approx(before, rel=1e-6)
    reopened.close()


def test_delete_where_user_drops_the_partition_at_once(tmp_path, rng) -> None:
    index = _index(tmp_path)
    alice = [planted(rng, "alice-key-tag") for _ in range(4)]
    bob = [planted(rng, "bob") for _ in range(3)]
    index.upsert(NS, [p.point for p in alice + bob])
    index.flush()
    root = index.root
    assert files_holding(root, [b"alice-key-tag", *needles_of(alice)[2::3]])
    before = _scores(index, bob)
    alice_folder = index.partition_path(NS, "alice-key-tag")
    assert alice_folder.is_dir()

    index.delete_where(NS, PointFilter(user_id="alice-key-tag"))

    assert not alice_folder.exists()
    assert files_holding(root, [b"alice-key-tag", *needles_of(alice)]) == []
    assert index.count(NS, PointFilter(user_id="alice-key-tag")) == 0
    assert _scores(index, bob) == pytest.approx(before, rel=1e-6)
    assert index.namespaces() == [NS]
    # The user can write again: a fresh partition.
    again = planted(rng, "alice-key-tag")
    index.upsert(NS, [again.point])
    assert index.scroll_ids(NS, PointFilter(user_id="alice-key-tag")) == [again.id]
    index.close()


def test_delete_where_user_and_agent_rebuilds_at_once(tmp_path, rng) -> None:
    index = _index(tmp_path)
    gone = [planted(rng, "alice", agent="agent-one") for _ in range(3)]
    kept = [planted(rng, "alice", agent="agent-two") for _ in range(3)]
    bob = [planted(rng, "bob", agent="agent-one") for _ in range(2)]
    index.upsert(NS, [p.point for p in gone + kept + bob])
    index.flush()
    root = index.root
    assert files_holding(root, [p.needles()["vector"] for p in gone])
    before = _scores(index, kept + bob)

    index.delete_where(NS, PointFilter(user_id="alice", agent_id="agent-one"))

    assert files_holding(root, needles_of(gone)) == []
    assert index.dirty_partitions(NS) == 0
    assert _scores(index, kept + bob) == pytest.approx(before, rel=1e-6)
    assert index.count(NS, PointFilter(user_id="alice")) == 3
    assert index.count(NS, PointFilter(user_id="bob", agent_id="agent-one")) == 2
    index.close()


def test_delete_where_without_user_marks_dirty_then_compact_cleans(tmp_path, rng) -> None:
    index = _index(tmp_path)
    gone = [planted(rng, "alice", agent="agent-x"), planted(rng, "bob", agent="agent-x")]
    kept = [planted(rng, "alice", agent="agent-y"), planted(rng, "bob", agent="agent-y")]
    index.upsert(NS, [p.point for p in gone + kept])

    index.delete_where(NS, PointFilter(agent_id="agent-x"))
    index.flush()

    assert index.count(NS, ALL) == 2
    assert index.dirty_partitions(NS) == 2
    assert files_holding(index.root, [p.needles()["vector"] for p in gone])
    assert index.compact_all() == 2
    assert files_holding(index.root, needles_of(gone)) == []
    assert sorted(index.scroll_ids(NS, ALL)) == sorted(p.id for p in kept)
    index.close()


def test_replacing_a_point_marks_dirty_and_compact_drops_the_old_vector(tmp_path, rng) -> None:
    index = _index(tmp_path)
    first = planted(rng, "alice")
    index.upsert(NS, [first.point])
    assert index.dirty_partitions(NS) == 0
    second = planted(rng, "alice")
    replaced = type(first.point)(id=first.id, dense=second.point.dense, payload=first.point.payload)

    index.upsert(NS, [replaced])
    index.flush()

    # The segment overwrote the old vector in place; the WAL still holds it.
    assert index.dirty_partitions(NS) == 1
    assert files_holding(index.root, [first.needles()["vector-wal"]])
    assert index.compact(NS) == 1
    assert (
        files_holding(index.root, [first.needles()["vector"], first.needles()["vector-wal"]]) == []
    )
    [top] = index.search_dense(NS, second.point.dense, PointFilter(user_id="alice"), 1)
    assert top.id == first.id and top.score == pytest.approx(1.0, abs=1e-5)
    index.close()


def test_drop_namespace_leaves_no_trace(tmp_path, rng) -> None:
    index = _index(tmp_path)
    dropped = [planted(rng, "alice"), planted(rng, "bob")]
    other = planted(rng, "carol")
    index.upsert(NS, [p.point for p in dropped])
    index.upsert("globex", [other.point])
    index.flush()
    assert files_holding(index.root, [p.needles()["vector"] for p in dropped])

    index.drop_namespace(NS)

    assert files_holding(index.root, [b"alice", b"bob", *needles_of(dropped)]) == []
    assert [p.name for p in index.root.iterdir()] == [index.shard_path("globex").name]
    assert index.retrieve("globex", [other.id])[0].id == other.id
    index.close()


def test_set_payload_refuses_to_move_a_point_to_another_partition(tmp_path, rng) -> None:
    index = _index(tmp_path)
    p = planted(rng, "alice")
    index.upsert(NS, [p.point])

    with pytest.raises(InvalidRequest):
        index.set_payload(NS, [p.id], {"user_id": "bob"})
    assert index.count(NS, PointFilter(user_id="alice")) == 1
    index.close()
