"""Vector index: the `VectorIndex` protocol and its two adapters.

`EdgeIndex` (qdrant-edge shards in process) is the embedded default; `QdrantIndex` talks to a Qdrant
server or cluster. `open_index` picks one from the settings. `QdrantIndex` is imported only when
first used: qdrant-client (with grpc and its fastembed/onnxruntime imports) adds about 90 MiB and
a second of start-up that the embedded default never needs.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from memvault.index.base import (
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
from memvault.index.edge import EdgeIndex

if TYPE_CHECKING:
    from memvault.index.qdrant import QdrantIndex

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


def __getattr__(name: str) -> Any:
    """`QdrantIndex`, imported on first use (PEP 562)."""
    if name == "QdrantIndex":
        from memvault.index.qdrant import QdrantIndex

        return QdrantIndex
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)


def open_index(
    data_dir: Path,
    dense_dim: int,
    qdrant_url: str | None,
    *,
    max_open: int = 64,
    memory_budget_mib: float | None = None,
    rebuild_share: float = 0.2,
    hnsw_min_points: int = 20_000,
) -> VectorIndex:
    """The configured index: Edge shards under `data_dir / "index"` (at most `max_open` open,
    within `memory_budget_mib`), or Qdrant at `qdrant_url`.

    `rebuild_share`: Edge's `maintain` threshold (the replaced share that triggers a rebuild);
    `hnsw_min_points`: the partition size from which `maintain` builds an HNSW index.
    """
    if qdrant_url is None:
        return EdgeIndex(
            Path(data_dir) / "index",
            dense_dim,
            max_open=max_open,
            memory_budget_mib=memory_budget_mib,
            rebuild_share=rebuild_share,
            hnsw_min_points=hnsw_min_points,
        )
    from memvault.index.qdrant import QdrantIndex

    return QdrantIndex.from_url(qdrant_url, dense_dim)
