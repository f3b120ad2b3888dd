"""Vector index: the `VectorIndex` protocol and its two adapters.

`EdgeIndex` (qdrant-edge shards in process) is the embedded default; `QdrantIndex` talks to a Qdrant
server or cluster. `open_index` picks one from the settings.
"""

from __future__ import annotations

from pathlib import Path

from memvault.vault.index.base import (
    DENSE,
    RRF_K,
    SPARSE,
    Hit,
    IndexPoint,
    PointFilter,
    SparseVector,
    VectorIndex,
    validate_namespace,
)
from memvault.vault.index.edge import EdgeIndex
from memvault.vault.index.qdrant import QdrantIndex

__all__ = [
    "DENSE",
    "RRF_K",
    "SPARSE",
    "EdgeIndex",
    "Hit",
    "IndexPoint",
    "PointFilter",
    "QdrantIndex",
    "SparseVector",
    "VectorIndex",
    "open_index",
    "validate_namespace",
]


def open_index(data_dir: Path, dense_dim: int, qdrant_url: str | None) -> VectorIndex:
    """The configured index: Edge shards under `data_dir / "index"`, or Qdrant at `qdrant_url`."""
    if qdrant_url is None:
        return EdgeIndex(Path(data_dir) / "index", dense_dim)
    return QdrantIndex.from_url(qdrant_url, dense_dim)
