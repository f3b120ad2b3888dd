"""How every qdrant-edge shard is configured, created and loaded (`ShardFactory`).

One configuration for all: cosine `dense` (`Memory.Cold`), plain `bm25` without the engine's
IDF modifier (issue 32), the WAL on, and the payload indexes of a search's scope filter. A shard
made under an older configuration is brought up to date when it is loaded.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from qdrant_edge import (
    Distance,
    EdgeConfig,
    EdgeShard,
    EdgeSparseVectorParams,
    EdgeVectorParams,
    IntegerIndexParams,
    KeywordIndexParams,
    Memory,
    Modifier,
    UpdateOperation,
)

from memvault.index._edge_layout import is_partition_name, is_shard
from memvault.index._edge_rebuild import rebuild_partition, swap_in
from memvault.index.base import DENSE, SPARSE

# The adapter's logger: these messages are `EdgeIndex`'s, wherever the code sits.
log = logging.getLogger("memvault.index.edge")


def _payload_indexes() -> dict[str, Any]:
    """Payload fields the shard indexes, and how: those of a search's scope filter.

    Each keyword index costs a loaded 5,000-point partition about 5 MiB of RSS
    (docs/performance.md), so fields filtered only by rare operations are not indexed:
    `agent_id` (erasing an agent) and `note_type`; the engine checks those against the stored
    payload (`alias_of`, once A-MEM's alias of an absorbed note, is no longer filtered).
    Shards created with them lose them on their next load (`RETIRED_INDEXES`).
    """
    return {
        "user_id": KeywordIndexParams(is_tenant=True),
        "readers": KeywordIndexParams(),
        "topic_tags": KeywordIndexParams(),
        "is_active": IntegerIndexParams(lookup=True, range=False),
        # A reader's document frequencies are counts by keyed token id (`PointFilter.term`).
        "terms": IntegerIndexParams(lookup=True, range=False),
    }


RETIRED_INDEXES = ("agent_id", "note_type", "alias_of")
"""Payload indexes that shards created before 2026-12-02 have and `ShardFactory.open` deletes."""


class ShardFactory:
    """Creates and loads shards with one configuration: cosine `dense`, plain `bm25`, WAL on.

    `bm25` has no IDF modifier (issue 32): the engine's IDF would count every note of the
    partition, other agents' private notes included; the query carries IDF over the readable
    set instead. A shard created with the modifier is rebuilt without it when it is opened.
    """

    def __init__(self, dense_dim: int) -> None:
        self.dense_dim = dense_dim

    def config(self, modifier: Modifier | None = None) -> EdgeConfig:
        """The engine configuration of every shard.

        Dense vectors are `Memory.Cold`: mapped and paged in as searches touch them. The
        engine's default (`Cached`) pages in the whole preallocated storage file when a shard
        is loaded, about 42 MiB for a 5,000-point partition whose vectors take 10 MiB
        (docs/performance.md). A shard keeps the placement it was created with.
        """
        return EdgeConfig(
            vectors={
                DENSE: EdgeVectorParams(
                    size=self.dense_dim, distance=Distance.Cosine, memory=Memory.Cold
                )
            },
            sparse_vectors={SPARSE: EdgeSparseVectorParams(modifier=modifier)},
            max_search_threads=1,
            wal_enabled=True,
        )

    def _load(self, folder: Path) -> EdgeShard:
        """Load the shard in `folder`; one made with the IDF modifier is rebuilt without it."""
        try:
            return EdgeShard.load(str(folder), self.config())
        except Exception as exc:
            if "modifier" not in str(exc):
                raise
        legacy = EdgeShard.load(str(folder), self.config(Modifier.Idf))
        if not is_partition_name(folder.name):
            return legacy  # a pre-partition namespace shard, read once by its split
        try:
            rebuild_partition(folder, legacy, self.open)
        finally:
            legacy.close()
        swap_in(folder)
        log.info("index partition rebuilt without the engine's IDF modifier")
        return EdgeShard.load(str(folder), self.config())

    def open(self, folder: Path) -> EdgeShard:
        """Load the shard in `folder`, or create it there (the folder may exist, empty)."""
        # Passing the config on load makes the engine refuse a shard of another dimension.
        if is_shard(folder):
            shard = self._load(folder)
        else:
            folder.mkdir(mode=0o700, exist_ok=True)
            shard = EdgeShard.create(str(folder), self.config())
        # Also on load: a crash between create and the index calls leaves them missing.
        present = shard.info().payload_schema
        for name, params in _payload_indexes().items():
            if name not in present:
                shard.update(UpdateOperation.create_field_index(name, params))
        for name in RETIRED_INDEXES:  # their memory is freed from the next load on
            if name in present:
                shard.update(UpdateOperation.delete_field_index(name))
        return shard
