"""`EdgeIndex`: the embedded default, a folder per namespace and a qdrant-edge shard per user.

qdrant-edge runs Qdrant's Rust engine inside this process. Each namespace is a folder under
`root`; inside it each partition (the points of one `user_id`) is its own shard, opened lazily and
closed again (least recently used first) beyond `max_open`, because every open shard holds threads,
file handles and its WAL lock. Search is exact: HNSW is never built on the request path, since
`optimize()` holds the GIL for seconds.

Why a shard per user: qdrant-edge never removes a deleted point from its WAL, and keeps it in the
segments until a vacuum. Only a deleted folder or a shard written afresh is clean, so erasing a
user drops that user's folder, and a purge marks the partition dirty for `compact`, which
rebuilds it (`_edge_rebuild`). It also makes BM25's IDF per user: one user's writes no longer
move another user's scores.

Folders are named by stable internal ids: `ns-` + 32 hex digits of the SHA-256 of the namespace
(`shard_folder_name`), and `u-` + 32 hex digits of the SHA-256 of the `user_id` inside it, never
the raw strings. Each namespace folder records its namespace in `namespace.json`. Older layouts
(a folder named by the raw namespace; a namespace folder that is one shard) are migrated when an
`EdgeIndex` opens its root.

Errors name the operation, never the engine's message: it carries filesystem paths.

Thread safety: the API calls us from a thread pool; `_edge_shards` describes the locks. A query
naming a user touches one partition; one without a user visits every partition of the namespace.

The folder layout lives in `_edge_layout`, the table of open shards in `_edge_shards`, rebuilds and
recovery in `_edge_rebuild` (under locks in `_edge_maintenance`), reads in `_edge_search` (merged
over partitions by `_edge_fanout`), type translation in `_edge_convert`; this module holds the
writes, the erasure calls and the index's lifetime.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from qdrant_edge import (
    CountRequest,
    EdgeShard,
    Filter,
    Point,
    UpdateOperation,
)

if TYPE_CHECKING:
    from qdrant_edge import PointId

from memvault.errors import InvalidRequest
from memvault.index._edge_convert import edge_filter, edge_sparse, point_ids
from memvault.index._edge_hnsw import BUILT_FILE, PENDING_FILE
from memvault.index._edge_layout import (
    add_churn,
    has_churn,
    is_dirty,
    list_namespaces,
    mark_dirty,
    migrate_legacy_folders,
    partition_folder_name,
    partition_key,
    shard_folder_name,
)
from memvault.index._edge_maintenance import EdgeMaintenance
from memvault.index._edge_search import EdgeReads
from memvault.index._edge_shards import PartKey, ShardTable, index_error
from memvault.index.base import (
    DENSE,
    SPARSE,
    TIMED_OPERATIONS,
    IndexPoint,
    PointFilter,
    canonical_point_id,
    store_payload,
    validate_namespace,
)
from memvault.observability import timed_methods

__all__ = [
    "DEFAULT_HNSW_MIN_POINTS",
    "DEFAULT_REBUILD_SHARE",
    "EdgeIndex",
    "edge_filter",
    "shard_folder_name",
]

DEFAULT_REBUILD_SHARE = 0.2
"""`maintain` rebuilds a partition once this share of the vectors in its files are replaced
ones (the engine's own vacuum default, `deleted_threshold`, is 0.2 too)."""

DEFAULT_HNSW_MIN_POINTS = 20_000
"""A partition this large gets an HNSW index in maintenance (docs/index.md, "Big users")."""


def _needs_compact(folder: Path) -> bool:
    """Whether the partition's files may hold deleted or replaced points."""
    return is_dirty(folder) or has_churn(folder)


def _only_user(where: PointFilter) -> bool:
    """Whether `where` names a user and nothing else (erasing that user drops the partition)."""
    return where.user_id is not None and where == PointFilter(user_id=where.user_id)


@timed_methods("index", TIMED_OPERATIONS)
class EdgeIndex(EdgeReads):
    """`VectorIndex` on qdrant-edge: `root/ns-<id>/u-<id>/` is the shard of one user of a namespace.

    `max_open` bounds the partition shards open at once (each costs threads and memory), and
    `memory_budget_mib` (None: no budget) their estimated memory (`_edge_shards`). With
    `flush_every_write` each write is also flushed to the segments; off by default because the
    WAL already makes an acknowledged write survive a crash (it is replayed on the next open).
    One `EdgeIndex` per `root` per process: a shard's WAL lock refuses a second opener.

    A point's partition is its payload's `user_id` (any string, treated as opaque; points
    without one share `u-default`), and it never changes: `set_payload` refuses `user_id`, and
    an id upserted again under another `user_id` would live in both partitions.
    """

    def __init__(
        self,
        root: Path,
        dense_dim: int,
        *,
        max_open: int = 64,
        memory_budget_mib: float | None = None,
        flush_every_write: bool = False,
        rebuild_share: float = DEFAULT_REBUILD_SHARE,
        hnsw_min_points: int = DEFAULT_HNSW_MIN_POINTS,
    ) -> None:
        if hnsw_min_points < 1:
            raise InvalidRequest("hnsw_min_points must be at least 1")
        self.hnsw_min_points = hnsw_min_points
        if not 0.0 < rebuild_share <= 1.0:
            raise InvalidRequest("rebuild_share must be in (0, 1]")
        self.rebuild_share = rebuild_share
        if dense_dim < 1:
            raise InvalidRequest("dense_dim must be positive")
        if max_open < 1:
            raise InvalidRequest("max_open must be at least 1")
        self.root = Path(root)
        self.dense_dim = dense_dim
        self.flush_every_write = flush_every_write
        if memory_budget_mib is not None and memory_budget_mib <= 0:
            raise InvalidRequest("memory_budget_mib must be positive")
        self._shards = ShardTable(self.root, dense_dim, max_open, memory_budget_mib)
        self._upkeep = EdgeMaintenance(self._shards)
        try:
            self.root.mkdir(parents=True, exist_ok=True, mode=0o700)
            os.chmod(self.root, 0o700)
            migrate_legacy_folders(self.root)
        except OSError as exc:
            raise index_error("open", exc) from None
        self._upkeep.open_root()

    @property
    def max_open(self) -> int:
        """The most shards open at once; a lower value takes effect at the next shard open."""
        return self._shards.max_open

    @max_open.setter
    def max_open(self, value: int) -> None:
        self._shards.max_open = value

    @property
    def memory_budget_mib(self) -> float | None:
        """The open shards' memory budget in MiB (None: only `max_open` bounds them)."""
        return self._shards.budget_mib

    @property
    def shard_opens(self) -> int:
        """How many shards this index has loaded or created (for tests and benchmarks)."""
        return self._shards.opens

    def open_memory_mib(self) -> float:
        """The estimated memory of the open shards, in MiB."""
        return self._shards.memory_mib()

    def shard_path(self, namespace: str) -> Path:
        """The namespace's folder (it may not exist): for operations and tests."""
        return self._shards.path(namespace)

    def partition_path(self, namespace: str, user_id: str | None) -> Path:
        """The shard folder of `user_id`'s partition in `namespace` (it may not exist)."""
        return self._shards.path(namespace) / partition_folder_name(user_id)

    # -- VectorIndex -------------------------------------------------------------------------

    def _point(self, point: IndexPoint) -> Point:
        vectors: dict[str, Any] = {DENSE: self._dense(point.dense)}
        if point.sparse is not None:
            vectors[SPARSE] = edge_sparse(point.sparse)
        return Point(
            id=canonical_point_id(point.id), vector=vectors, payload=store_payload(point.payload)
        )

    def upsert(self, namespace: str, points: Sequence[IndexPoint]) -> None:
        """Insert or replace points, each in its user's partition (created on first use).

        Replacing a point leaves its old vectors in the shard's files. That is routine churn
        (an update), not an erasure: it is counted (`churn.count`), and the partition is rebuilt
        by `compact`, or by `maintain` once the replaced share reaches `rebuild_share`.
        """
        validate_namespace(namespace)
        groups: dict[str, list[tuple[Point, str, dict[str, Any]]]] = {}
        for p in points:
            stored = self._point(p)
            groups.setdefault(partition_folder_name(partition_key(p.payload)), []).append(
                (stored, str(stored.id), store_payload(p.payload))
            )
        for part, items in groups.items():
            key = (namespace, part)

            def op(
                shard: EdgeShard,
                key: PartKey = key,
                items: list[tuple[Point, str, dict[str, Any]]] = items,
            ) -> None:
                ids: list[PointId] = [pid for _, pid, _ in items]
                replaced = len(shard.retrieve(ids, False, False))
                try:
                    shard.update(UpdateOperation.upsert_points([p for p, _, _ in items]))
                    if replaced:  # their old payloads are not read: count afresh
                        self._shards.forget_counts(key)
                    else:
                        self._shards.count_added(key, [(pid, body) for _, pid, body in items])
                except BaseException:
                    self._shards.forget_counts(key)
                    raise
                self._shards.grew(key, len(items))
                self._upkeep.changed(key, ids)
                folder = self._shards.part_path(key)
                if replaced:
                    add_churn(folder, replaced, shard.info().points_count or 0)
                if (
                    not (folder / BUILT_FILE).exists()
                    and not (folder / PENDING_FILE).exists()
                    and (shard.info().points_count or 0) >= self.hnsw_min_points
                ):
                    (folder / PENDING_FILE).touch(mode=0o600)
                if self.flush_every_write:
                    shard.flush()

            self._shards.run(key, op, create=True, missing=None, action="upsert")

    def set_payload(self, namespace: str, ids: Sequence[str], payload: dict[str, Any]) -> None:
        """Merge `payload` into each existing point's payload; unknown ids are skipped.

        `user_id` is the partition key and cannot be changed here (`InvalidRequest`).
        """
        if "user_id" in payload:
            raise InvalidRequest("user_id is a point's partition key and cannot be updated")
        wanted = point_ids(ids)
        if not wanted:
            validate_namespace(namespace)
            return
        values = store_payload(payload)

        def op(shard: EdgeShard, key: PartKey) -> None:
            # The engine rejects the whole call if one id is missing, so keep the existing ones.
            existing: list[PointId] = [str(r.id) for r in shard.retrieve(wanted, False, False)]
            if existing:
                shard.update(UpdateOperation.set_payload(existing, values))
                self._upkeep.changed(key, existing)

        self._each(namespace, None, op, "payload update")

    def delete(self, namespace: str, ids: Sequence[str], *, user_id: str | None = None) -> None:
        """Delete points by id; unknown ids and namespaces are ignored. With `user_id`, only
        that user's partition is visited.

        The delete is logical: each partition that held one of the points is first marked dirty
        (fsynced), so `compact` rebuilds it even after a crash.
        """
        wanted = point_ids(ids)
        if not wanted:
            validate_namespace(namespace)
            return

        def op(shard: EdgeShard, key: PartKey) -> None:
            existing: list[PointId] = [str(r.id) for r in shard.retrieve(wanted, False, False)]
            if existing:
                mark_dirty(self._shards.part_path(key))
                shard.update(UpdateOperation.delete_points(existing))
                self._upkeep.changed(key, existing)

        self._each(
            namespace, None if user_id is None else PointFilter(user_id=user_id), op, "delete"
        )

    def delete_where(self, namespace: str, where: PointFilter) -> None:
        """Delete every point matching `where` (all points for an empty filter).

        With only `user_id` (erasing a user), or an empty filter, the partitions are closed and
        their folders deleted: physically gone at once. With `user_id` and more conditions, the
        matches are deleted and the partition rebuilt at once. Without `user_id`, matches are
        deleted in every partition, which is marked dirty for `compact`.
        """
        validate_namespace(namespace)
        if _only_user(where) or where == PointFilter():
            for key in self._keys(namespace, where):
                self._upkeep.drop_partition(key)
            return
        flt = edge_filter(where)
        rebuild_now = where.user_id is not None

        def op(shard: EdgeShard, key: PartKey) -> bool:
            if not shard.count(CountRequest(exact=True, filter=flt)):
                return False
            mark_dirty(self._shards.part_path(key))
            self._upkeep.touched(key)
            self._upkeep.cancel_build(key)  # the ids are unknown: its copy cannot catch up
            shard.update(UpdateOperation.delete_points_by_filter(flt or Filter()))
            return True

        if not rebuild_now:
            self._each(namespace, where, op, "delete")
            return
        self._upkeep.delete_then_rebuild(self._keys(namespace, where)[0], op)

    def drop_namespace(self, namespace: str) -> None:
        """Close the namespace's shards and delete its folder. Unknown namespaces are ignored."""
        self._upkeep.drop_namespace(namespace)

    def compact(self, namespace: str) -> int:
        """Rebuild every partition of `namespace` holding deleted or replaced points; return how
        many were rebuilt (the erasure scrub and the retention sweeper call this).

        A rebuilt partition holds only its live points: deleted and replaced ones are gone
        from its WAL, segments and payload storage.
        """
        return self._rebuild_where(namespace, _needs_compact)

    def maintain(self, namespace: str) -> int:
        """The maintenance pass's rebuilds: partitions with deleted points (a delete is a purge
        or an erasure, so it is removed within a pass, as before), and partitions whose replaced
        share reached `rebuild_share`. Updates below that share wait; `compact` takes them.

        Then a partition that passed `hnsw_min_points` without an index gets one, built in a side
        process while it keeps serving (`EdgeMaintenance.build_hnsw`); this call waits for it."""

        return self._upkeep.maintain(namespace, lambda: self._keys(namespace), self.rebuild_share)

    def _rebuild_where(self, namespace: str, needed: Callable[[Path], bool]) -> int:
        validate_namespace(namespace)
        rebuilt = 0
        for key in self._keys(namespace):
            folder = self._shards.part_path(key)
            if needed(folder) and self._upkeep.rebuild(key, dirty_only=True, needed=needed):
                rebuilt += 1
        return rebuilt

    def compact_all(self) -> int:
        """`compact` every namespace; return how many partitions were rebuilt."""
        return sum(self.compact(ns) for ns in self.namespaces())

    def dirty_partitions(self, namespace: str) -> int:
        """How many partitions of `namespace` wait for `compact` (for operations and tests)."""
        return sum(_needs_compact(self._shards.part_path(key)) for key in self._keys(namespace))

    def namespaces(self) -> list[str]:
        """Namespaces with a folder under `root`, open or not, read from their records."""
        return list_namespaces(self.root)

    def open_namespaces(self) -> list[str]:
        """Namespaces with an open partition, least recently used first (for ops and tests)."""
        return list(dict.fromkeys(ns for ns, _ in reversed(self._shards.open_names())))[::-1]

    def open_partitions(self) -> list[tuple[str, str]]:
        """Open `(namespace, partition folder)` pairs, least recently used first."""
        return self._shards.open_names()

    def forget_counts(self) -> None:
        """Drop every remembered count (benchmarks: a search's cost right after a write)."""
        for key in self._shards.open_names():
            with self._shards.partition_lock(key):
                self._shards.forget_counts(key)

    def flush(self) -> None:
        """Flush every open shard's pending writes to its segments."""
        self._shards.flush()

    def close(self) -> None:
        """Flush and close every open shard. Later calls reopen shards lazily."""
        self._shards.close()
