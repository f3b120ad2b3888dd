"""`open_index` picks the adapter from the settings."""

from __future__ import annotations

from pathlib import Path

from memvault.index import EdgeIndex, PointFilter, QdrantIndex, open_index
from tests.test_index.shapes import DIM, axis, point

ALL = PointFilter()


def test_open_index_without_url_is_edge_under_data_dir(tmp_path: Path) -> None:
    index = open_index(tmp_path, DIM, None)
    index.upsert("t1", [point(axis(0))])
    index.close()

    assert isinstance(index, EdgeIndex)
    assert index.shard_path("t1").parent == tmp_path / "index"
    assert index.shard_path("t1").is_dir()
    assert (tmp_path / "index").stat().st_mode & 0o777 == 0o700


def test_open_index_with_memory_url_is_qdrant(tmp_path: Path) -> None:
    index = open_index(tmp_path, DIM, ":memory:")
    index.upsert("t1", [point(axis(0))])

    assert isinstance(index, QdrantIndex)
    assert index.count("t1", ALL) == 1
    assert not (tmp_path / "index").exists()
    index.close()
