"""What only `EdgeIndex` promises: shard folders, reopening, WAL durability, LRU closing."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from memvault.errors import IndexError_, InvalidRequest
from memvault.index import EdgeIndex, PointFilter
from memvault.index.edge import shard_folder_name
from tests._helpers import run_threads
from tests.test_index.shapes import DIM, axis, mix, point, sparse

ALL = PointFilter()


def _folder(namespace: str) -> str:
    """The expected folder name, computed here independently of the adapter."""
    return "ns-" + hashlib.sha256(namespace.encode("utf-8")).hexdigest()[:32]


def _partition(user_id: str) -> str:
    return "u-" + hashlib.sha256(user_id.encode("utf-8")).hexdigest()[:32]


SCOPE_INDEXES = {"user_id", "readers", "topic_tags", "is_active", "terms"}
"""The payload fields a partition indexes: those of a search's scope filter."""


def _indexed_fields(partition: Path) -> set[str]:
    """The payload fields the partition stored at `partition` indexes."""
    from qdrant_edge import EdgeShard

    shard = EdgeShard.load(str(partition))
    try:
        return set(shard.info().payload_schema)
    finally:
        shard.close()


def test_edge_upsert_creates_one_shard_folder_per_namespace(tmp_path: Path) -> None:
    index = EdgeIndex(tmp_path, DIM)
    index.upsert("t1", [point(axis(0))])
    index.upsert("t1~agent-2", [point(axis(0))])
    index.count("ghost", ALL)
    index.close()

    folders = sorted(p.name for p in tmp_path.iterdir())
    assert folders == sorted([_folder("t1"), _folder("t1~agent-2")])
    t1 = tmp_path / _folder("t1")
    assert index.shard_path("t1") == t1
    assert shard_folder_name("t1") == t1.name
    # One shard per partition (user) inside the namespace folder, named by a hash of the key.
    assert sorted(p.name for p in t1.iterdir()) == ["namespace.json", _partition("u1")]
    assert (t1 / _partition("u1") / "edge_config.json").is_file()
    assert (t1 / _partition("u1") / "wal").is_dir()
    assert index.partition_path("t1", "u1") == t1 / _partition("u1")
    assert json.loads((t1 / "namespace.json").read_text()) == {"namespace": "t1", "format": 1}
    assert index.namespaces() == ["t1", "t1~agent-2"]


def test_edge_folders_never_differ_by_case_only(tmp_path: Path) -> None:
    """`GLOBEX` and `globex` would share one folder on a case-insensitive file system."""
    index = EdgeIndex(tmp_path, DIM)
    upper, lower = point(axis(0)), point(axis(1))
    index.upsert("GLOBEX", [upper])
    index.upsert("globex", [lower])

    names = [p.name for p in tmp_path.iterdir()]
    assert len(names) == 2
    assert len({n.lower() for n in names}) == 2
    assert all(n == n.lower() for n in names)
    assert index.scroll_ids("GLOBEX", ALL) == [upper.id]
    assert index.scroll_ids("globex", ALL) == [lower.id]
    assert index.namespaces() == ["GLOBEX", "globex"]
    index.close()


def test_edge_namespace_with_trailing_newline_is_refused(tmp_path: Path) -> None:
    index = EdgeIndex(tmp_path, DIM)
    with pytest.raises(InvalidRequest):
        index.upsert("acme\n", [point(axis(0))])
    with pytest.raises(InvalidRequest):
        index.count("acme\n", ALL)
    assert list(tmp_path.iterdir()) == []
    index.close()


def _legacy_shard(root: Path, namespace: str, count: int) -> list[str]:
    """A shard folder named by its raw namespace, as older versions made, killed before close."""
    child = textwrap.dedent(
        f"""
        import os, uuid
        from pathlib import Path
        from qdrant_edge import (
            Distance, EdgeConfig, EdgeShard, EdgeSparseVectorParams, EdgeVectorParams, Modifier,
            Point, UpdateOperation,
        )
        config = EdgeConfig(
            vectors={{"dense": EdgeVectorParams(size={DIM}, distance=Distance.Cosine)}},
            sparse_vectors={{"bm25": EdgeSparseVectorParams(modifier=Modifier.Idf)}},
            max_search_threads=1,
            wal_enabled=True,
        )
        root = Path({str(root)!r})
        root.mkdir(parents=True, exist_ok=True)
        shard = EdgeShard.create(str(root / {namespace!r}), config)
        ids = [str(uuid.uuid4()) for _ in range({count})]
        shard.update(UpdateOperation.upsert_points([
            Point(id=i, vector={{"dense": [1.0] + [0.0] * {DIM - 1}}},
                  payload={{"user_id": "u1", "is_active": 1}})
            for i in ids
        ]))
        print("\\n".join(ids), flush=True)
        os._exit(0)  # no flush, no close: the points are only in the WAL
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", child], check=True, timeout=120, capture_output=True, text=True
    ).stdout
    return sorted(out.split())


def test_edge_migrates_folders_named_by_raw_namespace(tmp_path: Path) -> None:
    acme = _legacy_shard(tmp_path, "acme", 5)
    sandbox = _legacy_shard(tmp_path, "acme~bot", 3)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["acme", "acme~bot"]

    index = EdgeIndex(tmp_path, DIM)

    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [_folder("acme"), _folder("acme~bot")]
    )
    record = json.loads((tmp_path / _folder("acme") / "namespace.json").read_text())
    assert record["namespace"] == "acme"
    assert index.namespaces() == ["acme", "acme~bot"]
    assert sorted(index.scroll_ids("acme", ALL)) == acme
    assert sorted(index.scroll_ids("acme~bot", ALL)) == sandbox
    index.upsert("acme", [point(axis(1))])
    assert index.count("acme", ALL) == 6
    index.close()

    again = EdgeIndex(tmp_path, DIM)  # a second open has nothing left to migrate
    assert again.namespaces() == ["acme", "acme~bot"]
    assert again.count("acme", ALL) == 6
    again.close()


def test_edge_migration_interrupted_after_the_record_finishes_on_next_open(
    tmp_path: Path,
) -> None:
    ids = _legacy_shard(tmp_path, "acme", 2)
    # A crash between writing the record and renaming the folder leaves this behind.
    (tmp_path / "acme" / "namespace.json").write_text(json.dumps({"namespace": "acme"}))

    index = EdgeIndex(tmp_path, DIM)

    assert [p.name for p in tmp_path.iterdir()] == [_folder("acme")]
    assert sorted(index.scroll_ids("acme", ALL)) == ids
    index.close()


def test_edge_errors_carry_no_filesystem_path(tmp_path: Path) -> None:
    root = tmp_path / "secret-place" / "index"
    first = EdgeIndex(root, DIM)
    first.upsert("t1", [point(axis(0))])
    second = EdgeIndex(root, DIM)  # the first one holds the shard's WAL lock

    with pytest.raises(IndexError_) as caught:
        second.count("t1", ALL)

    message = caught.value.message
    assert "secret-place" not in message and "/" not in message
    assert message == "vector index open failed: the shard is locked by another process"
    assert caught.value.__cause__ is None and caught.value.__suppress_context__
    first.close()
    second.close()


def test_edge_drop_namespace_deletes_folder(tmp_path: Path) -> None:
    index = EdgeIndex(tmp_path, DIM)
    index.upsert("t1", [point(axis(0))])
    index.upsert("t2", [point(axis(0))])

    index.drop_namespace("t1")

    assert not (tmp_path / _folder("t1")).exists()
    assert (tmp_path / _folder("t2")).is_dir()
    assert index.open_namespaces() == ["t2"]
    assert index.namespaces() == ["t2"]
    index.close()


def test_edge_drop_namespace_of_closed_shard_deletes_folder(tmp_path: Path) -> None:
    first = EdgeIndex(tmp_path, DIM)
    first.upsert("t2", [point(axis(0))])
    first.close()

    second = EdgeIndex(tmp_path, DIM)
    second.drop_namespace("t2")

    assert not (tmp_path / _folder("t2")).exists()
    assert list(tmp_path.iterdir()) == []
    second.close()


def test_edge_reopen_after_close_keeps_points_and_payload(tmp_path: Path) -> None:
    first = EdgeIndex(tmp_path, DIM)
    kept = point(axis(0), words={3: 1.0}, topic_tags=["h1"])
    gone = point(axis(1))
    first.upsert("t1", [kept, gone])
    first.delete("t1", [gone.id])
    first.close()

    second = EdgeIndex(tmp_path, DIM)

    assert second.namespaces() == ["t1"]
    assert second.retrieve("t1", [kept.id])[0].payload == kept.payload
    assert second.scroll_ids("t1", ALL) == [kept.id]
    assert [h.id for h in second.search_sparse("t1", sparse({3: 1.0}), ALL, 5)] == [kept.id]
    second.close()


def test_edge_after_close_reopens_lazily(tmp_path: Path) -> None:
    index = EdgeIndex(tmp_path, DIM)
    index.upsert("t1", [point(axis(0))])
    index.close()

    assert index.open_namespaces() == []
    assert index.count("t1", ALL) == 1
    assert index.open_namespaces() == ["t1"]
    index.close()


def test_edge_unflushed_writes_survive_process_kill(tmp_path: Path) -> None:
    child = textwrap.dedent(
        f"""
        import os, uuid
        from pathlib import Path
        from memvault.index import EdgeIndex, IndexPoint
        index = EdgeIndex(Path({str(tmp_path)!r}), {DIM})
        points = [
            IndexPoint(id=str(uuid.uuid4()), dense=[1.0] + [0.0] * {DIM - 1},
                       payload={{"user_id": "u1", "is_active": 1}})
            for _ in range(300)
        ]
        for start in range(0, 300, 100):
            index.upsert("t1", points[start:start + 100])
        os._exit(0)  # no flush, no close: only the WAL has these points
        """
    )
    subprocess.run([sys.executable, "-c", child], check=True, timeout=120)

    index = EdgeIndex(tmp_path, DIM)

    assert index.count("t1", PointFilter(user_id="u1", active_only=True)) == 300
    index.close()


def test_edge_flush_every_write_keeps_points(tmp_path: Path) -> None:
    index = EdgeIndex(tmp_path, DIM, flush_every_write=True)
    index.upsert("t1", [point(axis(0)), point(axis(1))])
    index.flush()

    assert index.count("t1", ALL) == 2
    index.close()


def test_edge_other_dimension_on_existing_shard_raises_index_error(tmp_path: Path) -> None:
    first = EdgeIndex(tmp_path, DIM)
    first.upsert("t1", [point(axis(0))])
    first.close()

    with pytest.raises(IndexError_) as caught:
        EdgeIndex(tmp_path, DIM * 2).count("t1", ALL)
    assert str(tmp_path) not in caught.value.message
    assert "another vector configuration" in caught.value.message


def test_edge_lru_keeps_at_most_max_open_and_answers_correctly(tmp_path: Path) -> None:
    index = EdgeIndex(tmp_path, DIM, max_open=2)
    names = [f"t{n}" for n in range(5)]
    written = {}
    for n, ns in enumerate(names):
        pts = [point(mix((n, 1.0), (i, 0.2)), user=f"u{n}") for i in range(3)]
        index.upsert(ns, pts)
        written[ns] = pts
        assert len(index.open_namespaces()) <= 2

    assert index.open_namespaces() == ["t3", "t4"]
    for n, ns in enumerate(names):
        hits = index.search_dense(ns, axis(n), ALL, 10)
        assert sorted(h.id for h in hits) == sorted(p.id for p in written[ns])
        assert {h.payload["user_id"] for h in hits} == {f"u{n}"}
        assert len(index.open_namespaces()) <= 2
    assert index.open_namespaces() == ["t3", "t4"]
    index.count("t0", ALL)
    assert index.open_namespaces() == ["t4", "t0"]
    assert index.namespaces() == names
    index.close()


def test_edge_lru_under_concurrent_use_loses_nothing(tmp_path: Path) -> None:
    index = EdgeIndex(tmp_path, DIM, max_open=2)
    names = [f"t{n}" for n in range(5)]
    start = threading.Barrier(4)

    def worker(n: int) -> None:
        start.wait()
        for round_ in range(15):
            ns = names[(n + round_) % 5]
            index.upsert(ns, [point(axis(n), user=f"u{n}")])
            index.search_hybrid(ns, axis(n), sparse({n: 1.0}), PointFilter(user_id=f"u{n}"), 3, 5)
            index.count(names[(n + round_ + 2) % 5], ALL)

    assert run_threads(worker, 4) == []
    assert sum(index.count(ns, ALL) for ns in names) == 4 * 15
    assert len(index.open_namespaces()) <= 2
    index.close()


def test_edge_indexes_only_scope_fields_and_still_filters_on_the_others(tmp_path: Path) -> None:
    """A new partition indexes the fields of a search's scope filter; the rarely filtered ones
    (`agent_id`, `note_type`) are matched against the stored payload, correctly."""
    index = EdgeIndex(tmp_path, DIM)
    keep = point(axis(0), agent="a1", note_type="fact")
    other_agent = point(axis(1), agent="a2", note_type="fact")
    knowledge = point(axis(2), agent="a1", note_type="knowledge")
    index.upsert("t1", [keep, other_agent, knowledge])

    def ids(where: PointFilter) -> set[str]:
        return set(index.scroll_ids("t1", where))

    assert ids(PointFilter(user_id="u1", agent_id="a2")) == {other_agent.id}
    assert ids(PointFilter(user_id="u1", note_type="knowledge")) == {knowledge.id}
    hits = index.search_dense("t1", axis(0), PointFilter(user_id="u1", agent_id="a1"), 5)
    assert [h.id for h in hits] == [keep.id, knowledge.id]
    index.delete_where("t1", PointFilter(user_id="u1", agent_id="a2"))  # erasing an agent
    assert ids(PointFilter(user_id="u1")) == {keep.id, knowledge.id}
    index.close()

    assert _indexed_fields(tmp_path / _folder("t1") / _partition("u1")) == SCOPE_INDEXES
    # Dense vectors are paged in as searches touch them, not all at load (docs/index.md).
    config_file = tmp_path / _folder("t1") / _partition("u1") / "edge_config.json"
    assert json.loads(config_file.read_text())["vectors"]["dense"]["memory"] == "cold"


def test_edge_drops_the_retired_indexes_of_an_older_partition_and_answers_the_same(
    tmp_path: Path,
) -> None:
    """A partition created with the seven indexes of before 2026-12-02 loses the three retired
    ones when it is opened, and its answers do not change."""
    from qdrant_edge import EdgeShard, KeywordIndexParams, UpdateOperation

    index = EdgeIndex(tmp_path, DIM)
    points = [point(axis(i), agent=f"a{i % 2}", note_type="fact") for i in range(DIM)]  # no ties
    index.upsert("t1", points)
    index.close()
    folder = tmp_path / _folder("t1") / _partition("u1")
    shard = EdgeShard.load(str(folder))
    for field in ("agent_id", "note_type", "alias_of"):
        shard.update(UpdateOperation.create_field_index(field, KeywordIndexParams()))
    assert len(shard.info().payload_schema) == 8
    shard.close()

    reopened = EdgeIndex(tmp_path, DIM)
    where = PointFilter(user_id="u1", agent_id="a1")
    assert set(reopened.scroll_ids("t1", where)) == {p.id for p in points[1::2]}
    hits = reopened.search_dense("t1", axis(3), PointFilter(user_id="u1", readers_any=("a1",)), 3)
    assert hits[0].id == points[3].id
    reopened.close()
    assert _indexed_fields(folder) == SCOPE_INDEXES
