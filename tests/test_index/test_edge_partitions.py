"""Edge partitions: one shard per user inside the namespace folder, and what that changes."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from qdrant_client import QdrantClient

from memvault.index import EdgeIndex, PointFilter, QdrantIndex, VectorIndex, _edge_rebuild
from tests.test_index.shapes import DIM, axis, mix, point, sparse

NS = "acme"
ALL = PointFilter()
WORD, OTHER_WORD = 41, 42


def _alice_score(index: VectorIndex) -> float:
    [hit] = index.search_sparse(NS, sparse({WORD: 1.0}), PointFilter(user_id="alice"), 5)
    return hit.score


def _bob_writes_the_word(index: VectorIndex) -> None:
    index.upsert(NS, [point(axis(i % DIM), words={WORD: 1.0}, user="bob") for i in range(6)])


def _alice_writes(index: VectorIndex) -> None:
    index.upsert(
        NS,
        [
            point(axis(0), words={WORD: 1.0}, user="alice"),
            *(point(axis(1), words={OTHER_WORD: 1.0}, user="alice") for _ in range(3)),
        ],
    )


def test_edge_idf_is_per_user_so_other_users_cannot_move_scores(tmp_path: Path) -> None:
    index = EdgeIndex(tmp_path, DIM)
    _alice_writes(index)
    before = _alice_score(index)

    _bob_writes_the_word(index)

    assert _alice_score(index) == before
    index.close()


def test_one_collection_per_namespace_no_longer_leaks_word_counts() -> None:
    """The same steps on one collection per namespace (the Qdrant adapter; Edge before partitions).

    With the store's IDF modifier, bob's words lowered alice's score here. The store applies
    no IDF since issue 32 (the vault weighs the query by IDF over the reader's readable set),
    so a namespace-wide collection is as tight as a partition.
    """
    index = QdrantIndex(QdrantClient(location=":memory:"), DIM)
    _alice_writes(index)
    before = _alice_score(index)

    _bob_writes_the_word(index)

    assert _alice_score(index) == before
    index.close()


def test_edge_lru_counts_partitions(tmp_path: Path) -> None:
    index = EdgeIndex(tmp_path, DIM, max_open=2)
    users = ["u0", "u1", "u2"]
    for n, user in enumerate(users):
        index.upsert(NS, [point(axis(n), user=user)])
        assert len(index.open_partitions()) <= 2

    assert [part for _, part in index.open_partitions()] == [
        index.partition_path(NS, u).name for u in users[1:]
    ]
    assert index.open_namespaces() == [NS]
    hot = index.open_partitions()
    # A visit of every partition opens u0 only for the call: the cached shards stay.
    assert index.count(NS, ALL) == 3
    assert len(index.scroll_ids(NS, ALL)) == 3
    assert sorted(index.open_partitions()) == sorted(hot)
    assert index.count(NS, PointFilter(user_id="u0")) == 1  # a user's call does cache it
    opened = index.open_partitions()
    assert len(opened) == 2 and opened[-1] == (NS, index.partition_path(NS, "u0").name)
    index.close()


def test_edge_search_without_user_merges_partitions(tmp_path: Path) -> None:
    index = EdgeIndex(tmp_path, DIM)
    near_a = point(mix((0, 1.0), (1, 0.1)), user="alice", words={7: 1.0})
    near_b = point(mix((0, 1.0), (1, 0.3)), user="bob", words={7: 1.0})
    far_a = point(axis(1), user="alice")
    index.upsert(NS, [near_a, near_b, far_a])

    hits = index.search_dense(NS, axis(0), ALL, 3)
    hybrid = index.search_hybrid(NS, axis(0), sparse({7: 1.0}), ALL, 3, 3)

    assert [h.id for h in hits] == [near_a.id, near_b.id, far_a.id]
    assert hits[0].score > hits[1].score > hits[2].score
    assert [h.id for h in index.search_dense(NS, axis(0), ALL, 1)] == [near_a.id]
    # Dense ranks a, b, far; sparse a, b (per-user IDF: alice's word is rarer in her partition).
    assert {h.id for h in hybrid[:2]} == {near_a.id, near_b.id}
    assert hybrid[0].score == pytest.approx(2 / 60, rel=1e-6)
    index.close()


def test_edge_rebuild_blocks_that_user_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    index = EdgeIndex(tmp_path, DIM)
    alice = [point(axis(0), user="alice") for _ in range(3)]
    index.upsert(NS, [*alice, point(axis(1), user="bob")])
    index.delete(NS, [alice[0].id])
    started, release = threading.Event(), threading.Event()
    real = _edge_rebuild.live_points

    def slow_live_points(*args: object, **kwargs: object):  # type: ignore[no-untyped-def]
        started.set()
        assert release.wait(30)
        yield from real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(_edge_rebuild, "live_points", slow_live_points)
    compacting = threading.Thread(target=index.compact, args=(NS,))
    compacting.start()
    assert started.wait(30)
    alice_write = threading.Thread(target=index.upsert, args=(NS, [point(axis(2), user="alice")]))
    alice_write.start()

    index.upsert(NS, [point(axis(3), user="bob")])  # another user goes on
    assert index.count(NS, PointFilter(user_id="bob")) == 2
    alice_write.join(0.3)
    assert alice_write.is_alive()  # that user's write waits for the rebuild

    release.set()
    compacting.join(30)
    alice_write.join(30)
    assert index.count(NS, PointFilter(user_id="alice")) == 3
    assert index.dirty_partitions(NS) == 0
    index.close()
