"""The HNSW build of a big partition, run in a side process (`_edge_hnsw_child`).

`EdgeShard.optimize()` holds the GIL for the whole build (98 s at 100k points), and a shard admits
one process, so the build never touches the live partition: `EdgeMaintenance.build_hnsw` copies
the live points into `.rebuild-u-…` (page by page, the partition's lock taken per page), marks it
`hnsw.building`, and runs `_edge_hnsw_child` on that folder in a child process, which loads it with
`build_config` (an indexing threshold of 1 KB, so `optimize()` indexes every segment), optimizes,
flushes and closes. Back in the server, under the partition's lock, the points that changed
during the build are copied again from the live shard (or deleted), and the folder is swapped in
like a compaction (`_edge_rebuild.swap_in`). A crash before `rebuild.done` leaves a partial
folder that the next open deletes, without a rebuild of the partition (`hnsw.building`).
"""

from __future__ import annotations

from pathlib import Path

from qdrant_edge import (
    Distance,
    EdgeConfig,
    EdgeOptimizersConfig,
    EdgeShard,
    EdgeSparseVectorParams,
    EdgeVectorParams,
    HnswIndexConfig,
    Memory,
    SearchParams,
)

from memvault.index.base import DENSE, SPARSE

HNSW_M = 32
HNSW_EF_CONSTRUCT = 256
HNSW_EF = 512
"""Search-time beam width on an indexed partition (`SEARCH_PARAMS`)."""
FULL_SCAN_THRESHOLD_KB = 1000
"""Below this many KB of vectors matching a filter, the engine scans them exactly."""
SEARCH_PARAMS = SearchParams(hnsw_ef=HNSW_EF)
BUILDING_FILE = "hnsw.building"
"""In a `.rebuild-u-…` folder: an HNSW build's copy; if partial, discarded without a rebuild."""
BUILT_FILE = "hnsw.built"
"""In a partition folder: its points were indexed by an HNSW build (a rebuild drops it)."""
PENDING_FILE = "hnsw.pending"
"""In a partition folder: it passed the size threshold without an index; maintenance builds one."""


def build_config(
    base: EdgeConfig, m: int = HNSW_M, ef_construct: int = HNSW_EF_CONSTRUCT
) -> EdgeConfig:
    """`base` (the shards' configuration) with HNSW on and a 1 KB indexing threshold."""
    return EdgeConfig(
        vectors=base.vectors,
        sparse_vectors=base.sparse_vectors,
        hnsw_config=HnswIndexConfig(
            m=m,
            ef_construct=ef_construct,
            full_scan_threshold=FULL_SCAN_THRESHOLD_KB,
            max_indexing_threads=1,
        ),
        optimizers=EdgeOptimizersConfig(
            indexing_threshold=1, default_segment_number=1, deleted_threshold=0.2
        ),
        max_search_threads=1,
        wal_enabled=True,
    )


def build(
    folder: Path, dense_dim: int, m: int = HNSW_M, ef_construct: int = HNSW_EF_CONSTRUCT
) -> None:
    """Index the (closed) shard in `folder` in place: load, optimize, flush, close.

    The vectors are those `_edge_factory.ShardFactory` creates (this module sits below it).
    `m` and `ef_construct` are the graph's degree and build beam (`bench.scale` tries others).
    """
    base = EdgeConfig(
        vectors={
            DENSE: EdgeVectorParams(size=dense_dim, distance=Distance.Cosine, memory=Memory.Cold)
        },
        sparse_vectors={SPARSE: EdgeSparseVectorParams(modifier=None)},  # no IDF (issue 32)
    )
    shard = EdgeShard.load(str(folder), build_config(base, m, ef_construct))
    try:
        shard.optimize()
        shard.flush()
    finally:
        shard.close()
