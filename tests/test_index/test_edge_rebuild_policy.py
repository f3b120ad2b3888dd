"""When a partition needs a rebuild: deletes at once (erasure), updates past a share only."""

from __future__ import annotations

import numpy as np
import pytest

from memvault.errors import InvalidRequest
from memvault.index import EdgeIndex, PointFilter
from tests.test_index.erasure import WIDE, Planted, files_holding, needles_of, planted

NS = "acme"


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(20261204)


def _replace(first: Planted, other: Planted) -> object:
    return type(first.point)(id=first.id, dense=other.point.dense, payload=first.point.payload)


def _folder(index: EdgeIndex, user: str):
    return index.partition_path(NS, user)


def test_updates_below_the_share_do_not_rebuild_and_above_it_do(tmp_path, rng) -> None:
    index = EdgeIndex(tmp_path / "index", WIDE, rebuild_share=0.25)
    points = [planted(rng, "alice") for _ in range(12)]
    index.upsert(NS, [p.point for p in points])
    before = sorted(p.name for p in _folder(index, "alice").iterdir())

    index.upsert(NS, [_replace(points[0], planted(rng, "alice"))])  # 1 of 13 vectors: 7.7 %
    index.upsert(NS, [_replace(points[1], planted(rng, "alice"))])  # 2 of 14: 14.3 %
    index.flush()
    assert index.maintain(NS) == 0  # below the share: no rebuild, the old vectors stay
    assert files_holding(index.root, [points[0].needles()["vector-wal"]])
    assert index.dirty_partitions(NS) == 1
    after = sorted(p.name for p in _folder(index, "alice").iterdir())
    assert after == sorted([*before, "churn.count"])

    index.upsert(NS, [_replace(p, planted(rng, "alice")) for p in points[2:4]])  # 4 of 16: 25 %
    index.flush()
    assert index.maintain(NS) == 1
    old = [points[i].needles()["vector-wal"] for i in range(4)]
    assert files_holding(index.root, old) == []
    assert index.dirty_partitions(NS) == 0
    assert index.maintain(NS) == 0
    assert index.count(NS, PointFilter(user_id="alice")) == 12
    index.close()


def test_compact_still_rebuilds_any_update_below_the_share(tmp_path, rng) -> None:
    index = EdgeIndex(tmp_path / "index", WIDE, rebuild_share=0.9)
    first = planted(rng, "alice")
    index.upsert(NS, [first.point, planted(rng, "alice").point])
    index.upsert(NS, [_replace(first, planted(rng, "alice"))])
    index.flush()
    assert index.maintain(NS) == 0
    assert index.compact(NS) == 1  # the erasure scrub and the retention sweeper call this
    assert files_holding(index.root, [first.needles()["vector-wal"]]) == []
    index.close()


def test_a_delete_still_rebuilds_at_the_next_maintenance_pass(tmp_path, rng) -> None:
    """A delete is a purge or an erasure: `maintain` removes it whatever the share."""
    index = EdgeIndex(tmp_path / "index", WIDE, rebuild_share=1.0)
    removed = planted(rng, "alice", words=11)
    kept = [planted(rng, "alice", words=11) for _ in range(20)]
    index.upsert(NS, [p.point for p in [removed, *kept]])
    index.delete(NS, [removed.id])
    index.flush()
    assert files_holding(index.root, needles_of([removed]))
    assert index.maintain(NS) == 1
    assert files_holding(index.root, needles_of([removed])) == []
    assert index.count(NS, PointFilter(user_id="alice")) == 20
    index.close()


def test_erasing_an_agent_rebuilds_at_once_whatever_the_share(tmp_path, rng) -> None:
    index = EdgeIndex(tmp_path / "index", WIDE, rebuild_share=1.0)
    gone = planted(rng, "alice", agent="bot", words=11)
    kept = planted(rng, "alice", words=11)
    index.upsert(NS, [gone.point, kept.point])
    index.flush()
    index.delete_where(NS, PointFilter(user_id="alice", agent_id="bot"))
    assert files_holding(index.root, needles_of([gone])) == []
    assert index.dirty_partitions(NS) == 0
    index.close()


@pytest.mark.parametrize("share", [0.0, -0.1, 1.5])
def test_a_share_outside_zero_to_one_is_refused(tmp_path, share) -> None:
    with pytest.raises(InvalidRequest, match="rebuild_share"):
        EdgeIndex(tmp_path / "index", WIDE, rebuild_share=share)
