"""One fixture, `index`, that runs every conformance test against each adapter."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from qdrant_client import QdrantClient

from memvault.index import EdgeIndex, QdrantIndex, VectorIndex
from tests.test_index.shapes import DIM


@pytest.fixture(params=["edge", "qdrant"])
def index(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[VectorIndex]:
    adapter: VectorIndex
    if request.param == "edge":
        adapter = EdgeIndex(tmp_path / "index", DIM)
    else:
        adapter = QdrantIndex(QdrantClient(location=":memory:"), DIM)
    yield adapter
    adapter.close()
