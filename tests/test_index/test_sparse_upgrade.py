"""Indexes made with the store's IDF modifier lose it when opened (issue 32), data intact.

The engine's IDF counted every point of a partition, other agents' private notes included.
Both adapters now store plain term frequencies and score a plain dot product; an index made
before is upgraded in place: an Edge shard is rebuilt without the modifier on its first open
(the engine refuses to load it under another sparse configuration), a Qdrant collection's
modifier is switched off (its vectors are the same term frequencies).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from qdrant_client import QdrantClient, models
from qdrant_edge import Modifier

from memvault.index import EdgeIndex, PointFilter, QdrantIndex
from memvault.index._edge_factory import ShardFactory
from tests.test_index.shapes import DIM, axis, point, sparse

NS = "acme"
ALL = PointFilter()


def _points() -> list:
    return [
        point(axis(0), words={1: 1.5}, user="alice"),
        *(point(axis(1), words={1: 0.5, 2: 1.0}, user="alice") for _ in range(4)),
    ]


def test_edge_shard_made_with_idf_is_rebuilt_without_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plain = ShardFactory.config
    monkeypatch.setattr(
        ShardFactory, "config", lambda self, modifier=Modifier.Idf: plain(self, modifier)
    )
    legacy = EdgeIndex(tmp_path, DIM)
    points = _points()
    legacy.upsert(NS, points)
    idf_scored = legacy.search_sparse(NS, sparse({1: 1.0}), ALL, 10)
    legacy.close()
    # Under the IDF modifier, a term in all five points weighs ln(1 + 0.5/5.5), not 1.
    assert idf_scored[0].score == pytest.approx(1.5 * 0.0870114, rel=1e-4)
    monkeypatch.setattr(ShardFactory, "config", plain)

    index = EdgeIndex(tmp_path, DIM)
    hits = index.search_sparse(NS, sparse({1: 1.0}), ALL, 10)

    assert hits[0].id == points[0].id and hits[0].score == pytest.approx(1.5, rel=1e-6)
    assert sorted(h.id for h in hits) == sorted(p.id for p in points)
    assert index.count(NS, PointFilter(term=2)) == 4  # payloads came through the rebuild
    assert not [p for p in tmp_path.rglob("*") if p.name.startswith((".rebuild-", ".trash-"))]
    index.close()
    again = EdgeIndex(tmp_path, DIM)  # a second open loads it as it is
    assert again.search_sparse(NS, sparse({1: 1.0}), ALL, 1)[0].score == pytest.approx(1.5)
    again.close()


def test_qdrant_collection_made_with_idf_loses_the_modifier() -> None:
    client = QdrantClient(location=":memory:")
    old = QdrantIndex(client, DIM)
    points = _points()
    old.upsert(NS, points)
    name = old.collection_prefix + NS
    client.update_collection(
        name,
        sparse_vectors_config={"bm25": models.SparseVectorParams(modifier=models.Modifier.IDF)},
    )
    assert old.search_sparse(NS, sparse({1: 1.0}), ALL, 1)[0].score < 1.0

    index = QdrantIndex(client, DIM)  # a new process: its first use of the collection
    hits = index.search_sparse(NS, sparse({1: 1.0}), ALL, 10)

    assert hits[0].score == pytest.approx(1.5, rel=1e-6)
    params = client.get_collection(name).config.params.sparse_vectors or {}
    assert params["bm25"].modifier == models.Modifier.NONE
    index.close()
