"""Optimized and quantized Qdrant Edge shards, for the benchmarks that measure them.

Light on imports (the engine and the index's vector names only): `bench.search_parts
--then-optimize` runs `optimize_in_place` in a child process, whose start is part of the time
it reports.
"""

from __future__ import annotations

from qdrant_edge import (
    Distance,
    EdgeConfig,
    EdgeOptimizersConfig,
    EdgeShard,
    EdgeSparseVectorParams,
    EdgeVectorParams,
    HnswIndexConfig,
    QuantizationSearchParams,
    ScalarQuantizationConfig,
    ScalarType,
    SearchParams,
)

from memvault.index.base import DENSE, SPARSE

RESCORE = SearchParams(quantization=QuantizationSearchParams(rescore=True, oversampling=1.5))
"""Search parameters that rescore quantized candidates with the float vectors."""


def optimized_config(dense_dim: int, *, quantize: bool, sparse: bool) -> EdgeConfig:
    """A shard configuration whose `optimize()` writes one non-appendable segment without HNSW
    (`m=0`), with int8 scalar quantization when `quantize`; `sparse` adds the BM25 vectors of
    memvault's partitions (a partition is loaded with its own vector names)."""
    return EdgeConfig(
        vectors={DENSE: EdgeVectorParams(size=dense_dim, distance=Distance.Cosine)},
        # No IDF modifier: memvault computes IDF over the reader's readable set (issue 32).
        sparse_vectors={SPARSE: EdgeSparseVectorParams(modifier=None)} if sparse else None,
        hnsw_config=HnswIndexConfig(m=0, ef_construct=100, full_scan_threshold=10_000),
        optimizers=EdgeOptimizersConfig(indexing_threshold=1, default_segment_number=1),
        quantization_config=(
            ScalarQuantizationConfig(type=ScalarType.Int8, quantile=0.99, always_ram=True)
            if quantize
            else None
        ),
        max_search_threads=1,
        wal_enabled=True,
    )


def optimize_in_place(folders: list[str], dense_dim: int, quantize: bool) -> None:
    """Load each closed memvault partition with `optimized_config`, optimize it, close it (the
    work `bench.search_parts --then-optimize` gives a child process)."""
    config = optimized_config(dense_dim, quantize=quantize, sparse=True)
    for folder in folders:
        shard = EdgeShard.load(folder, config)
        shard.optimize()
        shard.close()
