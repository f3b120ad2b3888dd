"""Counts inside a user's partition are remembered until it is written (readable-set IDF).

The conformance part runs on both adapters: every kind of write moves the counts a reader's
IDF is built from, at once. The Edge part shows the memo is really used (a change made behind
the adapter's back is not seen) and that each write path forgets it.
"""

from __future__ import annotations

import random
from dataclasses import replace
from pathlib import Path

import pytest
from qdrant_edge import UpdateOperation

from memvault.index import EdgeIndex, IndexPoint, PointFilter, VectorIndex
from tests.test_index.shapes import DIM, axis, point

NS = "tenant-memo"
READER = PointFilter(user_id="u1", readers_any=("a1", "*"), active_only=True)


def _counts(index: VectorIndex) -> tuple[int, int]:
    return index.count(NS, READER), index.count(NS, replace(READER, term=7))


def test_every_write_moves_the_counts_at_once(index: VectorIndex) -> None:
    a, b = point(axis(0), words={7: 1.0}), point(axis(1), words={7: 1.0, 8: 1.0})
    index.upsert(NS, [a, b, point(axis(2), words={8: 1.0})])
    assert _counts(index) == (3, 2)

    index.upsert(NS, [point(axis(3), words={7: 1.0})])  # a new note
    assert _counts(index) == (4, 3)
    index.upsert(NS, [point(axis(1), pid=b.id, words={8: 1.0})])  # an edit drops the term
    assert _counts(index) == (4, 2)
    index.set_payload(NS, [a.id], {"is_active": 0})  # superseded or deleted softly
    assert _counts(index) == (3, 1)
    index.set_payload(NS, [a.id], {"is_active": 1})
    assert _counts(index) == (4, 2)
    index.delete(NS, [a.id], user_id="u1")  # a purge
    assert _counts(index) == (3, 1)
    index.delete_where(NS, PointFilter(user_id="u1", agent_id="a1", term=7))  # an agent's erase
    assert _counts(index) == (2, 0)
    index.delete_where(NS, PointFilter(user_id="u1"))  # the user's erase
    assert _counts(index) == (0, 0)
    index.upsert(NS, [point(axis(0), words={7: 1.0})])
    assert _counts(index) == (1, 1)


def test_a_count_is_remembered_until_the_partition_is_written(tmp_path: Path) -> None:
    index = EdgeIndex(tmp_path / "index", DIM)
    try:
        index.upsert(NS, [point(axis(0), words={7: 1.0})])
        assert _counts(index) == (1, 1)
        behind = point(axis(1), words={7: 1.0})  # written past the adapter: not seen
        key = (NS, index.partition_path(NS, "u1").name)
        with index._shards.partition_lock(key):
            shard = index._shards.handle(key, create=False)
            assert shard is not None
            shard.update(UpdateOperation.upsert_points([index._point(behind)]))
        assert _counts(index) == (1, 1)
        # A new point is added to the remembered counts, not counted afresh ...
        index.upsert(NS, [point(axis(2), words={7: 1.0})])
        assert _counts(index) == (2, 2)
        # ... a count with another filter is not remembered yet, and an edit forgets them all.
        assert index.count(NS, PointFilter(user_id="u1")) == 3
        index.set_payload(NS, [behind.id], {"is_active": 1})
        assert _counts(index) == (3, 3)
    finally:
        index.close()


@pytest.mark.parametrize("how", ["close", "evict"])
def test_closing_a_partition_forgets_its_counts(tmp_path: Path, how: str) -> None:
    index = EdgeIndex(tmp_path / "index", DIM, max_open=1)
    try:
        index.upsert(NS, [point(axis(0), words={7: 1.0})])
        assert _counts(index) == (1, 1)
        if how == "close":
            index.close()
        else:
            index.upsert(NS, [point(axis(0), words={7: 1.0}, user="u2")])  # evicts u1
        folder = index.partition_path(NS, "u1")
        assert (NS, folder.name) not in index.open_partitions()
        shard = index._shards.factory.open(folder)  # a write while it is closed
        shard.update(UpdateOperation.upsert_points([index._point(point(axis(1), words={7: 1.0}))]))
        shard.close()
        assert _counts(index) == (2, 2)
    finally:
        index.close()


def test_new_points_keep_every_remembered_count_exact(tmp_path: Path) -> None:
    """Counts under many filters, remembered, then batches of new points of every kind (other
    readers, inactive, other agents and terms): each remembered count equals a fresh one."""
    rng = random.Random(7)
    agents, terms = ["a1", "a2", "a3"], [7, 8, 9, 10]

    def random_point() -> IndexPoint:
        agent = rng.choice(agents)
        readers = rng.choice([[agent], [agent, "a2"], ["*"]])
        words = {t: 1.0 for t in rng.sample(terms, rng.randint(1, 3))}
        return point(
            axis(rng.randrange(DIM)),
            words=words,
            agent=agent,
            readers=readers,
            is_active=rng.choice([0, 1, 1]),
            topic_tags=rng.choice([[], ["t1"], ["t1", "t2"]]),
        )

    filters = [
        PointFilter(user_id="u1", readers_any=(r, "*"), active_only=active, term=t, agent_id=a)
        for r in agents
        for active in (True, False)
        for t in (None, *terms)
        for a in (None, "a1")
    ] + [
        PointFilter(user_id="u1", topic_tags=("t1", "t2")),
        PointFilter(user_id="u1", note_type="fact"),
    ]
    index = EdgeIndex(tmp_path / "index", DIM)
    try:
        index.upsert(NS, [random_point() for _ in range(20)])
        for _ in range(4):
            remembered = [index.count(NS, f) for f in filters]
            assert remembered == [index.count(NS, f) for f in filters]  # served from the memo
            index.upsert(NS, [random_point() for _ in range(rng.randint(1, 6))])
            kept = [index.count(NS, f) for f in filters]
            index.forget_counts()
            assert kept == [index.count(NS, f) for f in filters]
            assert kept != remembered
    finally:
        index.close()
