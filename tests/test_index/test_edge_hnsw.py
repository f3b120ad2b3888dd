"""Big partitions get an HNSW index built in a side process, swapped in while they keep serving."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from memvault.index import EdgeIndex, IndexPoint, PointFilter
from memvault.index._edge_hnsw import BUILDING_FILE, BUILT_FILE, PENDING_FILE
from memvault.index._edge_layout import REBUILD_PREFIX, REBUILT_FILE
from tests.test_index.erasure import files_holding, needles_of, planted

NS = "acme"
DIM = 32
ALICE = PointFilter(user_id="alice")


def _points(rng: np.random.Generator, n: int, start: int = 0) -> list[IndexPoint]:
    vecs = rng.standard_normal((n, DIM)).astype(np.float32)
    return [
        IndexPoint(
            id=f"00000000-0000-4000-8000-{start + i:012d}",
            dense=vecs[i].tolist(),
            payload={"user_id": "alice", "agent_id": "a1", "readers": ["a1"], "is_active": 1},
        )
        for i in range(n)
    ]


def _index(tmp_path: Path, **kwargs: object) -> EdgeIndex:
    return EdgeIndex(tmp_path / "index", DIM, hnsw_min_points=500, **kwargs)  # type: ignore[arg-type]


def _indexed(index: EdgeIndex) -> int:
    key = (NS, index.partition_path(NS, "alice").name)
    return index._shards.run(
        key, lambda s: s.info().indexed_vectors_count or 0, create=False, missing=0, action="t"
    )


def _copy_folder(index: EdgeIndex) -> Path:
    part = index.partition_path(NS, "alice")
    return part.parent / (REBUILD_PREFIX + part.name)


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(35)


def test_a_small_partition_gets_no_index(tmp_path, rng) -> None:
    index = _index(tmp_path)
    index.upsert(NS, _points(rng, 499))
    assert not (index.partition_path(NS, "alice") / PENDING_FILE).exists()
    assert index.maintain(NS) == 0
    assert _indexed(index) == 0
    index.close()


def test_the_index_is_built_aside_swapped_in_and_as_good_as_an_exact_scan(tmp_path, rng) -> None:
    index = _index(tmp_path)
    points = _points(rng, 2000)
    index.upsert(NS, points)
    queries = rng.standard_normal((20, DIM)).tolist()
    exact = [[h.id for h in index.search_dense(NS, q, ALICE, 10)] for q in queries]
    assert _indexed(index) == 0
    assert (index.partition_path(NS, "alice") / PENDING_FILE).exists()

    assert index.maintain(NS) == 1

    part = index.partition_path(NS, "alice")
    assert (part / BUILT_FILE).exists() and not (part / PENDING_FILE).exists()
    assert _indexed(index) >= 2000
    assert not _copy_folder(index).exists()
    found = [[h.id for h in index.search_dense(NS, q, ALICE, 10)] for q in queries]
    # At this size (256 KB of vectors, under full_scan_threshold) the engine still answers
    # exactly: this checks the swapped-in shard answers as the old one did, not HNSW's recall.
    recall = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(found, exact, strict=True)])
    assert recall >= 0.99
    assert index.count(NS, ALICE) == 2000
    assert index.maintain(NS) == 0  # built once
    index.close()


def _wait_for_copy(index: EdgeIndex, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not (_copy_folder(index) / BUILDING_FILE).exists():
        assert time.monotonic() < deadline, "the build never started"
        time.sleep(0.005)


def test_reads_and_writes_during_the_build_are_served_and_kept(tmp_path, rng) -> None:
    index = _index(tmp_path)
    points = _points(rng, 3000)
    index.upsert(NS, points)
    builder = threading.Thread(target=index.maintain, args=(NS,))
    builder.start()
    _wait_for_copy(index)
    # During the copy or the side build: reads answer, writes land in the live partition.
    assert len(index.search_dense(NS, points[5].dense, ALICE, 10)) == 10
    added = _points(rng, 3, start=9000)
    index.upsert(NS, added)
    index.delete(NS, [points[0].id, points[1].id])
    moved = IndexPoint(id=points[2].id, dense=added[0].dense, payload=points[2].payload)
    index.upsert(NS, [moved])
    index.set_payload(NS, [points[3].id], {"topic_tags": ["x"]})
    during = _copy_folder(index).exists()
    builder.join(120)
    assert not builder.is_alive()
    assert during, "the writes happened after the swap: the test proved nothing"

    assert (index.partition_path(NS, "alice") / BUILT_FILE).exists()
    assert _indexed(index) > 0
    assert index.retrieve(NS, [points[0].id, points[1].id]) == []
    assert {h.id for h in index.retrieve(NS, [a.id for a in added])} == {a.id for a in added}
    [top] = index.search_dense(NS, added[0].dense, PointFilter(user_id="alice"), 1)
    assert top.id in {added[0].id, points[2].id}
    [p3] = index.retrieve(NS, [points[3].id])
    assert p3.payload["topic_tags"] == ["x"]
    assert index.count(NS, ALICE) == 3000 + 3 - 2
    # The deletes reached the copy after its WAL recorded them: it is marked for compact.
    assert index.dirty_partitions(NS) == 1
    index.close()


def test_erasing_the_user_during_the_build_leaves_nothing(tmp_path, rng) -> None:
    index = _index(tmp_path)
    planted_points = [planted(rng, "alice", words=11) for _ in range(3)]
    index.upsert(NS, _points(rng, 3000))
    builder = threading.Thread(target=index.maintain, args=(NS,))
    builder.start()
    _wait_for_copy(index)
    index.delete_where(NS, ALICE)
    builder.join(120)
    assert not builder.is_alive()
    assert not index.partition_path(NS, "alice").exists()
    assert not _copy_folder(index).exists()
    assert files_holding(index.root, needles_of(planted_points)) == []
    index.close()


def _child_pids() -> set[int]:
    out = subprocess.run(
        ["ps", "-o", "pid=,args=", "--ppid", str(os.getpid())], capture_output=True, text=True
    )
    return {int(line.split()[0]) for line in out.stdout.splitlines() if "_edge_hnsw_child" in line}


def test_a_killed_build_leaves_the_partition_whole_and_is_retried(tmp_path, rng) -> None:
    index = _index(tmp_path)
    index.upsert(NS, _points(rng, 3000))
    result: list[int] = []
    builder = threading.Thread(target=lambda: result.append(index.maintain(NS)))
    builder.start()
    deadline = time.monotonic() + 60
    while not (pids := _child_pids()):
        assert time.monotonic() < deadline
        time.sleep(0.01)
    for pid in pids:
        os.kill(pid, signal.SIGKILL)
    builder.join(60)
    assert result == [0]
    assert not _copy_folder(index).exists()
    assert index.count(NS, ALICE) == 3000
    assert (index.partition_path(NS, "alice") / PENDING_FILE).exists()
    assert index.maintain(NS) == 1  # the next pass builds it
    index.close()


def _closed_partition_and_its_copy(tmp_path: Path, rng: np.random.Generator) -> tuple[Path, Path]:
    """Alice's partition of 600 points in a closed index, and a copy of it where a build of
    its HNSW graph would go (as a build would start it)."""
    index = _index(tmp_path)
    index.upsert(NS, _points(rng, 600))
    index.close()
    part = index.partition_path(NS, "alice")
    copy = _copy_folder(index)
    shutil.copytree(part, copy)
    return part, copy


def test_reopen_discards_a_half_built_copy_without_a_rebuild(tmp_path, rng) -> None:
    part, copy = _closed_partition_and_its_copy(tmp_path, rng)
    (copy / BUILDING_FILE).touch()
    before = sorted(p.name for p in part.iterdir())

    reopened = _index(tmp_path)

    assert not copy.exists()
    assert sorted(p.name for p in part.iterdir()) == before  # not rebuilt: its files are as left
    assert reopened.count(NS, ALICE) == 600
    reopened.close()


def test_reopen_swaps_in_a_finished_build(tmp_path, rng) -> None:
    part, copy = _closed_partition_and_its_copy(tmp_path, rng)
    subprocess.run(
        [sys.executable, "-m", "memvault.index._edge_hnsw_child", str(copy), str(DIM)], check=True
    )
    (copy / BUILT_FILE).touch()
    (copy / REBUILT_FILE).touch()

    reopened = _index(tmp_path)

    assert not copy.exists()
    assert (part / BUILT_FILE).exists()
    assert _indexed(reopened) >= 600
    assert reopened.count(NS, ALICE) == 600
    reopened.close()


@pytest.mark.parametrize("how", ["compact", "delete_where"])
def test_a_rebuild_or_filter_delete_during_the_build_cancels_it_cleanly(tmp_path, rng, how) -> None:
    index = _index(tmp_path)
    points = _points(rng, 3000)
    index.upsert(NS, points)
    result: list[int] = []
    builder = threading.Thread(target=lambda: result.append(index.maintain(NS)))
    builder.start()
    _wait_for_copy(index)
    if how == "compact":
        index.upsert(
            NS, [IndexPoint(id=points[1].id, dense=points[2].dense, payload=points[1].payload)]
        )
        assert index.compact(NS) == 1
    else:
        index.delete_where(NS, PointFilter(user_id="alice", agent_id="a1"))
    builder.join(120)
    assert result == [0]
    assert not _copy_folder(index).exists()
    assert not (index.partition_path(NS, "alice") / BUILT_FILE).exists()
    assert index.count(NS, ALICE) == (3000 if how == "compact" else 0)
    if how == "compact":  # queued again: the next pass builds the index
        assert (index.partition_path(NS, "alice") / PENDING_FILE).exists()
        assert index.maintain(NS) == 1
    index.close()
