"""What only `QdrantIndex` promises: the server compacts, and collections ask it to early."""

from __future__ import annotations

from typing import Any

import pytest
from qdrant_client import QdrantClient, models

from memvault.index import PointFilter, QdrantIndex
from memvault.index.qdrant import VACUUM_DELETED_THRESHOLD, VACUUM_MIN_VECTORS
from tests.test_index.shapes import DIM, axis, point


def test_qdrant_collections_ask_for_an_early_vacuum(monkeypatch: pytest.MonkeyPatch) -> None:
    client = QdrantClient(location=":memory:")
    sent: list[dict[str, Any]] = []
    real = client.create_collection

    def recording(*args: Any, **kwargs: Any) -> bool:
        sent.append(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(client, "create_collection", recording)
    index = QdrantIndex(client, DIM)
    index.upsert("t1", [point(axis(0))])

    [kwargs] = sent
    config = kwargs["optimizers_config"]
    assert isinstance(config, models.OptimizersConfigDiff)
    assert config.deleted_threshold == VACUUM_DELETED_THRESHOLD < 0.2  # the server default
    assert config.vacuum_min_vector_number == VACUUM_MIN_VECTORS == 100  # the server minimum
    index.close()


def test_qdrant_compact_deletes_nothing_more_and_returns_zero() -> None:
    index = QdrantIndex(QdrantClient(location=":memory:"), DIM)
    kept, gone = point(axis(0)), point(axis(1))
    index.upsert("t1", [kept, gone])
    index.delete("t1", [gone.id])
    index.delete_where("t1", PointFilter(user_id="u1", agent_id="nobody"))

    assert index.compact("t1") == 0
    assert index.compact_all() == 0
    assert index.scroll_ids("t1", PointFilter()) == [kept.id]
    index.close()
