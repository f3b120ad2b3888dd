"""Edge crash recovery: a rebuild or a legacy split killed half-way is finished or redone on open.

The crashes are real: a child process patches `os.replace`, `shutil.rmtree` or the marker write
to `os._exit` at the chosen step, so nothing after it runs, not even a close.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest

from memvault.errors import IndexError_
from memvault.index import EdgeIndex, PointFilter
from memvault.index.edge import shard_folder_name
from tests.test_index.erasure import WIDE, Planted, files_holding, needles_of, planted

NS = "acme"
CRASHED = 3

_CHILD = textwrap.dedent(
    """
    import json, os, shutil, sys
    from pathlib import Path
    from memvault.index import EdgeIndex, IndexPoint, PointFilter, _edge_rebuild
    spec = json.loads(sys.argv[1])
    index = EdgeIndex(Path(spec["root"]), spec["dim"])
    index.upsert(spec["ns"], [IndexPoint(**p) for p in spec["points"]])
    index.flush()
    calls = [0]
    if spec["mode"] == "replace":  # die at the n-th rename of the swap
        real_replace = os.replace
        def replace(src, dst):
            calls[0] += 1
            if calls[0] == spec["n"]:
                os._exit(3)
            return real_replace(src, dst)
        os.replace = replace
    elif spec["mode"] == "rmtree":  # die when the old partition, renamed to trash, is deleted
        real_rmtree = shutil.rmtree
        def rmtree(path, *args, **kwargs):
            if Path(path).name.startswith(".trash-"):
                os._exit(3)
            return real_rmtree(path, *args, **kwargs)
        shutil.rmtree = rmtree
    elif spec["mode"] == "build":  # die before the new shard is marked complete
        _edge_rebuild._touch_synced = lambda path: os._exit(3)
    index.delete_where(spec["ns"], PointFilter(user_id="alice", agent_id="agent-one"))
    os._exit(0)
    """
)


def _points(rng: np.random.Generator) -> tuple[list[Planted], list[Planted]]:
    removed = [planted(rng, "alice", agent="agent-one") for _ in range(3)]
    kept = [planted(rng, "alice", agent="agent-two") for _ in range(3)]
    kept += [planted(rng, "bob", agent="agent-one") for _ in range(2)]
    return removed, kept


def _stored(tmp_path: Path, seed: int) -> tuple[EdgeIndex, list[Planted], list[Planted]]:
    """An index under `tmp_path` holding the points of `_points` (to be removed, to be kept)."""
    removed, kept = _points(np.random.default_rng(seed))
    index = EdgeIndex(tmp_path, WIDE)
    index.upsert(NS, [p.point for p in removed + kept])
    return index, removed, kept


@contextmanager
def _renames_fail_from(monkeypatch: pytest.MonkeyPatch, call: int) -> Iterator[None]:
    """Inside the block, `os.replace` fails ("disk says no") from its `call`-th call (1-based)."""
    calls = 0
    real_replace = os.replace

    def failing_replace(src: object, dst: object) -> None:
        nonlocal calls
        calls += 1
        if calls >= call:
            raise OSError("disk says no")
        real_replace(src, dst)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "replace", failing_replace)
    try:
        yield
    finally:
        monkeypatch.setattr(os, "replace", real_replace)


def _crash(root: Path, points: list[Planted], mode: str, n: int = 0) -> None:
    spec = {
        "root": str(root),
        "dim": WIDE,
        "ns": NS,
        "mode": mode,
        "n": n,
        "points": [
            {"id": p.id, "dense": list(p.point.dense), "payload": p.point.payload} for p in points
        ],
    }
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, json.dumps(spec)], timeout=120, capture_output=True
    )
    assert done.returncode == CRASHED, done.stderr.decode()[-2000:]


def _assert_clean_and_live(root: Path, removed: list[Planted], kept: list[Planted]) -> None:
    index = EdgeIndex(root, WIDE)
    leftovers = [p.name for p in index.shard_path(NS).iterdir() if p.name.startswith(".")]
    assert leftovers == []
    assert files_holding(root, needles_of(removed)) == []
    assert sorted(index.scroll_ids(NS, PointFilter())) == sorted(p.id for p in kept)
    for p in kept:
        where = PointFilter(user_id=p.point.payload["user_id"])
        [top] = index.search_dense(NS, p.point.dense, where, 1)
        assert top.id == p.id
        assert top.score == pytest.approx(1.0, abs=1e-5)
        assert index.retrieve(NS, [p.id])[0].payload == p.point.payload
    index.close()


@pytest.mark.parametrize(
    ("mode", "n"),
    [("build", 0), ("replace", 1), ("replace", 2), ("rmtree", 0)],
    ids=["before-complete", "at-first-rename", "at-second-rename", "before-trash-delete"],
)
def test_rebuild_killed_midway_is_finished_on_open(tmp_path: Path, mode: str, n: int) -> None:
    removed, kept = _points(np.random.default_rng(n + len(mode)))
    root = tmp_path / "index"

    _crash(root, removed + kept, mode, n)

    left = [p.name for p in (root / shard_folder_name(NS)).iterdir()]
    assert any(name.startswith((".rebuild-", ".trash-")) for name in left)
    _assert_clean_and_live(root, removed, kept)


def test_rebuild_failing_in_process_is_recovered_by_the_next_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    index, removed, kept = _stored(tmp_path, seed=5)
    # The second rename of the swap fails, and every later one.
    with _renames_fail_from(monkeypatch, 2), pytest.raises(IndexError_) as caught:
        index.delete_where(NS, PointFilter(user_id="alice", agent_id="agent-one"))
    assert "disk says no" not in caught.value.message

    # The partition's folder is missing (renamed to trash); the next call finishes the swap.
    assert index.count(NS, PointFilter(user_id="alice")) == 3
    assert files_holding(tmp_path, needles_of(removed)) == []
    index.close()
    _assert_clean_and_live(tmp_path, removed, kept)


# -- the layout before partitions: one shard per namespace folder ------------------------------

_LEGACY = textwrap.dedent(
    """
    import json, os, sys
    from pathlib import Path
    from qdrant_edge import (
        Distance, EdgeConfig, EdgeShard, EdgeSparseVectorParams, EdgeVectorParams, Modifier,
        Point, UpdateOperation,
    )
    spec = json.loads(sys.argv[1])
    folder = Path(spec["folder"])
    folder.mkdir(parents=True)
    (folder / "namespace.json").write_text(json.dumps({"namespace": spec["ns"], "format": 1}))
    shard = EdgeShard.create(str(folder), EdgeConfig(
        vectors={"dense": EdgeVectorParams(size=spec["dim"], distance=Distance.Cosine)},
        sparse_vectors={"bm25": EdgeSparseVectorParams(modifier=Modifier.Idf)},
        max_search_threads=1, wal_enabled=True,
    ))
    shard.update(UpdateOperation.upsert_points([
        Point(id=p["id"], vector={"dense": p["dense"]}, payload=p["payload"])
        for p in spec["points"]
    ]))
    shard.update(UpdateOperation.delete_points([spec["deleted"]]))
    os._exit(0)  # no flush, no close: the points are only in the WAL
    """
)

_OPEN_AND_DIE = textwrap.dedent(
    """
    import os, shutil, sys
    from pathlib import Path
    from memvault.index import EdgeIndex, _edge_rebuild
    if sys.argv[2] == "before-marker":  # partitions partly written, no `legacy.split` yet
        real = _edge_rebuild._write_shard
        written = [0]
        def write_one_then_die(*args, **kwargs):
            written[0] += 1
            if written[0] == 2:
                os._exit(3)
            return real(*args, **kwargs)
        _edge_rebuild._write_shard = write_one_then_die
    else:  # `legacy.split` written and edge_config.json removed, the legacy WAL not yet
        real_rmtree = shutil.rmtree
        def rmtree(path, *args, **kwargs):
            if Path(path).name == "wal":
                os._exit(3)
            return real_rmtree(path, *args, **kwargs)
        shutil.rmtree = rmtree
    EdgeIndex(Path(sys.argv[1]), int(sys.argv[3]))
    os._exit(0)
    """
)


def _legacy(root: Path, rng: np.random.Generator) -> tuple[list[Planted], Planted]:
    folder = root / ("ns-" + hashlib.sha256(NS.encode()).hexdigest()[:32])
    points = [planted(rng, "alice") for _ in range(3)] + [planted(rng, "bob") for _ in range(2)]
    anonymous = planted(rng, "nobody")
    anonymous.point.payload.pop("user_id")
    deleted = planted(rng, "alice")
    spec = {
        "folder": str(folder),
        "ns": NS,
        "dim": WIDE,
        "deleted": deleted.id,
        "points": [
            {"id": p.id, "dense": list(p.point.dense), "payload": p.point.payload}
            for p in [*points, anonymous, deleted]
        ],
    }
    subprocess.run([sys.executable, "-c", _LEGACY, json.dumps(spec)], check=True, timeout=120)
    assert (folder / "edge_config.json").is_file()
    return [*points, anonymous], deleted


def _assert_split(root: Path, live: list[Planted], deleted: Planted) -> None:
    index = EdgeIndex(root, WIDE)
    folder = index.shard_path(NS)
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        ["namespace.json", *(index.partition_path(NS, u).name for u in ("alice", "bob", None))]
    )
    assert index.namespaces() == [NS]
    assert sorted(index.scroll_ids(NS, PointFilter())) == sorted(p.id for p in live)
    assert index.count(NS, PointFilter(user_id="alice")) == 3
    assert index.count(NS, PointFilter(user_id="bob")) == 2
    for p in live:
        assert index.retrieve(NS, [p.id])[0].payload == p.point.payload
    # The legacy shard's WAL held the deleted point; only the new partitions are left.
    assert files_holding(root, needles_of([deleted])) == []
    index.close()


def test_legacy_namespace_shard_is_split_into_partitions(tmp_path: Path) -> None:
    live, deleted = _legacy(tmp_path, np.random.default_rng(11))

    _assert_split(tmp_path, live, deleted)
    _assert_split(tmp_path, live, deleted)  # a second open has nothing left to do


@pytest.mark.parametrize("when", ["before-marker", "during-cleanup"])
def test_legacy_split_killed_midway_is_redone_on_open(tmp_path: Path, when: str) -> None:
    live, deleted = _legacy(tmp_path, np.random.default_rng(12))

    died = subprocess.run(
        [sys.executable, "-c", _OPEN_AND_DIE, str(tmp_path), when, str(WIDE)],
        timeout=120,
        capture_output=True,
    )
    assert died.returncode == CRASHED, died.stderr.decode()[-2000:]

    _assert_split(tmp_path, live, deleted)


def test_erasing_a_user_after_a_failed_rebuild_leaves_nothing_to_resurrect(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    index, removed, kept = _stored(tmp_path, seed=6)
    # The swap and its in-process recovery both fail: a complete `.rebuild-` stays beside it.
    with _renames_fail_from(monkeypatch, 1), pytest.raises(IndexError_):
        index.delete_where(NS, PointFilter(user_id="alice", agent_id="agent-one"))
    assert any(p.name.startswith(".rebuild-") for p in index.shard_path(NS).iterdir())

    index.delete_where(NS, PointFilter(user_id="alice"))  # erase the whole user
    index.close()

    reopened = EdgeIndex(tmp_path, WIDE)
    assert reopened.count(NS, PointFilter(user_id="alice")) == 0
    alice = [p for p in removed + kept if p.point.payload["user_id"] == "alice"]
    assert files_holding(tmp_path, [b"alice", *needles_of(alice)]) == []
    assert reopened.count(NS, PointFilter(user_id="bob")) == 2
    reopened.close()
