"""`EdgeIndex`: the embedded default, one qdrant-edge shard folder per namespace.

qdrant-edge runs Qdrant's Rust engine inside this process. Each namespace is a shard folder under
`root`, opened lazily and closed again (least recently used first) beyond `max_open`, because every
open shard holds threads, file handles and its WAL lock. Search is exact: HNSW is never built on the
request path, since `optimize()` holds the GIL for seconds.

Folders are named by a stable internal id, `ns-` + 32 hex digits of the SHA-256 of the namespace
(`shard_folder_name`), never by the raw tenant string: `GLOBEX` and `globex` would share one folder
on a case-insensitive file system. Each folder records its namespace in `namespace.json`. Folders
of older versions, named by the raw namespace, are renamed when an `EdgeIndex` opens its root.

Errors name the operation, never the engine's message: it carries filesystem paths.

Thread safety: the API calls us from a thread pool. One lock guards the table of open shards, one
lock per shard serializes the calls on that shard. Lock order is always table, then shard.

The folder layout lives in `_edge_layout`, the table of open shards in `_edge_shards`; this
module holds the `VectorIndex` methods and the translation of filters, ids, vectors and hits.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from qdrant_edge import (
    CountRequest,
    EdgeShard,
    FieldCondition,
    Filter,
    Fusion,
    HasIdCondition,
    MatchAny,
    MatchValue,
    Point,
    Prefetch,
    Query,
    QueryRequest,
    ScoredPoint,
    ScrollRequest,
    UpdateOperation,
)
from qdrant_edge import SparseVector as EdgeSparseVector

if TYPE_CHECKING:
    from qdrant_edge import PointId, Record

from memvault.errors import InvalidRequest
from memvault.vault.index._edge_layout import (
    list_namespaces,
    migrate_legacy_folders,
    shard_folder_name,
)
from memvault.vault.index._edge_shards import ShardTable, index_error
from memvault.vault.index.base import (
    DENSE,
    RRF_K,
    SPARSE,
    Hit,
    IndexPoint,
    PointFilter,
    SparseVector,
    canonical_point_id,
    store_payload,
    validate_namespace,
)

__all__ = ["EdgeIndex", "edge_filter", "shard_folder_name"]

_SCROLL_PAGE = 1000


def edge_filter(where: PointFilter) -> Filter | None:
    """Translate a `PointFilter` into an edge `Filter`; `None` when it has no condition."""
    must: list[Any] = []
    if where.user_id is not None:
        must.append(FieldCondition(key="user_id", match=MatchValue(where.user_id)))
    if where.agent_id is not None:
        must.append(FieldCondition(key="agent_id", match=MatchValue(where.agent_id)))
    if where.readers_any:
        must.append(FieldCondition(key="readers", match=MatchAny(list(where.readers_any))))
    if where.active_only:
        # An int, not True: the binding turns MatchValue(True) into 1, which never matches a bool.
        must.append(FieldCondition(key="is_active", match=MatchValue(1)))
    if where.note_type is not None:
        must.append(FieldCondition(key="note_type", match=MatchValue(where.note_type)))
    must.extend(FieldCondition(key="topic_tags", match=MatchValue(t)) for t in where.topic_tags)
    if where.only_ids:
        must.append(HasIdCondition({canonical_point_id(i) for i in where.only_ids}))
    must_not: list[Any] = []
    if where.exclude_ids:
        # The binding insists on a set here, not a list.
        must_not.append(HasIdCondition({canonical_point_id(i) for i in where.exclude_ids}))
    if not must and not must_not:
        return None
    return Filter(must=must or None, must_not=must_not or None)


def _point_ids(ids: Sequence[str]) -> list[PointId]:
    """Canonical UUID strings, typed as the binding wants them."""
    return [canonical_point_id(i) for i in ids]


def _edge_sparse(vector: SparseVector) -> EdgeSparseVector:
    """The binding's sparse vector, with plain `int` indices and `float` values."""
    return EdgeSparseVector(
        indices=[int(i) for i in vector.indices], values=[float(v) for v in vector.values]
    )


def _hit(point: ScoredPoint) -> Hit:
    """A `Hit` from an engine result: string id, float score, a copy of the payload."""
    return Hit(id=str(point.id), score=float(point.score), payload=dict(point.payload or {}))


class EdgeIndex:
    """`VectorIndex` on qdrant-edge shards: `root/ns-<id>/` per namespace (`shard_folder_name`).

    `max_open` bounds the shards open at once (each costs threads and memory). With
    `flush_every_write` each write is also flushed to the segments; off by default because the
    WAL already makes an acknowledged write survive a crash (it is replayed on the next open).
    One `EdgeIndex` per `root` per process: a shard's WAL lock refuses a second opener.
    """

    def __init__(
        self,
        root: Path,
        dense_dim: int,
        *,
        max_open: int = 64,
        flush_every_write: bool = False,
    ) -> None:
        if dense_dim < 1:
            raise InvalidRequest("dense_dim must be positive")
        if max_open < 1:
            raise InvalidRequest("max_open must be at least 1")
        self.root = Path(root)
        self.dense_dim = dense_dim
        self.flush_every_write = flush_every_write
        self._shards = ShardTable(self.root, dense_dim, max_open)
        try:
            self.root.mkdir(parents=True, exist_ok=True, mode=0o700)
            os.chmod(self.root, 0o700)
            migrate_legacy_folders(self.root)
        except OSError as exc:
            raise index_error("open", exc) from None

    @property
    def max_open(self) -> int:
        """The most shards open at once; a lower value takes effect at the next shard open."""
        return self._shards.max_open

    @max_open.setter
    def max_open(self, value: int) -> None:
        self._shards.max_open = value

    def shard_path(self, namespace: str) -> Path:
        """The folder of `namespace`'s shard (it may not exist): for operations and tests."""
        return self._shards.path(namespace)

    # -- VectorIndex -------------------------------------------------------------------------

    def _dense(self, vector: Sequence[float]) -> list[float]:
        if len(vector) != self.dense_dim:
            raise InvalidRequest(f"dense vector must have {self.dense_dim} dimensions")
        return [float(x) for x in vector]

    def _point(self, point: IndexPoint) -> Point:
        vectors: dict[str, Any] = {DENSE: self._dense(point.dense)}
        if point.sparse is not None:
            vectors[SPARSE] = _edge_sparse(point.sparse)
        return Point(
            id=canonical_point_id(point.id), vector=vectors, payload=store_payload(point.payload)
        )

    def upsert(self, namespace: str, points: Sequence[IndexPoint]) -> None:
        """Insert or replace points; creates the namespace's shard on first use."""
        validate_namespace(namespace)
        if not points:
            return
        edge_points = [self._point(p) for p in points]

        def op(shard: EdgeShard) -> None:
            shard.update(UpdateOperation.upsert_points(edge_points))
            if self.flush_every_write:
                shard.flush()

        self._shards.run(namespace, op, create=True, missing=None, action="upsert")

    def set_payload(self, namespace: str, ids: Sequence[str], payload: dict[str, Any]) -> None:
        """Merge `payload` into each existing point's payload; unknown ids are skipped."""
        wanted = _point_ids(ids)
        if not wanted:
            return
        values = store_payload(payload)

        def op(shard: EdgeShard) -> None:
            # The engine rejects the whole call if one id is missing, so keep the existing ones.
            existing: list[PointId] = [str(r.id) for r in shard.retrieve(wanted, False, False)]
            if existing:
                shard.update(UpdateOperation.set_payload(existing, values))

        self._shards.run(namespace, op, create=False, missing=None, action="payload update")

    def delete(self, namespace: str, ids: Sequence[str]) -> None:
        """Delete points by id; unknown ids and namespaces are ignored."""
        wanted = _point_ids(ids)
        if not wanted:
            return
        self._shards.run(
            namespace,
            lambda shard: shard.update(UpdateOperation.delete_points(wanted)),
            create=False,
            missing=None,
            action="delete",
        )

    def delete_where(self, namespace: str, where: PointFilter) -> None:
        """Delete every point matching `where` (all points for an empty filter)."""
        flt = edge_filter(where) or Filter()
        self._shards.run(
            namespace,
            lambda shard: shard.update(UpdateOperation.delete_points_by_filter(flt)),
            create=False,
            missing=None,
            action="delete",
        )

    def drop_namespace(self, namespace: str) -> None:
        """Close the namespace's shard and delete its folder. Unknown namespaces are ignored."""
        self._shards.drop(namespace)

    def search_dense(
        self, namespace: str, vector: Sequence[float], where: PointFilter, limit: int
    ) -> list[Hit]:
        """Exact cosine nearest neighbours among points matching `where`, best first."""
        request = QueryRequest(
            limit=max(limit, 0),
            query=Query.Nearest(self._dense(vector), using=DENSE),
            filter=edge_filter(where),
            with_payload=True,
        )
        return self._query(namespace, request, limit)

    def search_sparse(
        self, namespace: str, vector: SparseVector, where: PointFilter, limit: int
    ) -> list[Hit]:
        """Sparse dot product with the shard's IDF modifier, best first."""
        request = QueryRequest(
            limit=max(limit, 0),
            query=Query.Nearest(_edge_sparse(vector), using=SPARSE),
            filter=edge_filter(where),
            with_payload=True,
        )
        return self._query(namespace, request, limit)

    def search_hybrid(
        self,
        namespace: str,
        dense: Sequence[float],
        sparse: SparseVector,
        where: PointFilter,
        limit: int,
        prefetch: int,
        weights: tuple[float, float] = (1.0, 1.0),
        rrf_k: int = RRF_K,
    ) -> list[Hit]:
        """Dense and sparse prefetches, both filtered by `where`, fused by RRF (k=`RRF_K`).

        Each prefetch takes `max(prefetch, limit)` candidates. The filter sits on both prefetches
        and on the outer query, so no out-of-scope point can enter either candidate list.
        """
        flt = edge_filter(where)
        candidates = max(prefetch, limit, 1)
        request = QueryRequest(
            limit=max(limit, 0),
            prefetches=[
                Prefetch(
                    limit=candidates,
                    query=Query.Nearest(self._dense(dense), using=DENSE),
                    filter=flt,
                ),
                Prefetch(
                    limit=candidates,
                    query=Query.Nearest(_edge_sparse(sparse), using=SPARSE),
                    filter=flt,
                ),
            ],
            query=Fusion.Rrf(k=rrf_k, weights=list(weights)),  # type: ignore[arg-type]
            filter=flt,
            with_payload=True,
        )
        return self._query(namespace, request, limit)

    def _query(self, namespace: str, request: QueryRequest, limit: int) -> list[Hit]:
        if limit <= 0:
            validate_namespace(namespace)
            return []
        none: list[ScoredPoint] = []
        points = self._shards.run(
            namespace,
            lambda shard: shard.query(request),
            create=False,
            missing=none,
            action="search",
        )
        return [_hit(p) for p in points]

    def retrieve(self, namespace: str, ids: Sequence[str]) -> list[Hit]:
        """Points by id, in the order asked, with payload and score 0. Missing ids are skipped."""
        wanted = [canonical_point_id(i) for i in ids]
        if not wanted:
            return []
        point_ids: list[PointId] = list(wanted)
        none: list[Record] = []
        records = self._shards.run(
            namespace,
            lambda shard: shard.retrieve(point_ids, True, False),
            create=False,
            missing=none,
            action="retrieve",
        )
        found = {str(r.id): dict(r.payload or {}) for r in records}
        return [Hit(id=i, score=0.0, payload=found[i]) for i in dict.fromkeys(wanted) if i in found]

    def scroll_ids(self, namespace: str, where: PointFilter) -> list[str]:
        """Every point id matching `where`."""
        flt = edge_filter(where)

        def op(shard: EdgeShard) -> list[str]:
            ids: list[str] = []
            offset: Any = None
            while True:
                records, offset = shard.scroll(
                    ScrollRequest(offset=offset, limit=_SCROLL_PAGE, filter=flt, with_payload=False)
                )
                ids.extend(str(r.id) for r in records)
                if offset is None:
                    return ids

        return self._shards.run(namespace, op, create=False, missing=[], action="scroll")

    def count(self, namespace: str, where: PointFilter) -> int:
        """Exact count of points matching `where`; 0 for an unknown namespace."""
        request = CountRequest(exact=True, filter=edge_filter(where))
        return self._shards.run(
            namespace, lambda shard: shard.count(request), create=False, missing=0, action="count"
        )

    def namespaces(self) -> list[str]:
        """Namespaces with a shard folder under `root`, open or not, read from their records."""
        return list_namespaces(self.root)

    def open_namespaces(self) -> list[str]:
        """Namespaces whose shard is open now, least recently used first (for ops and tests)."""
        return self._shards.open_names()

    def flush(self) -> None:
        """Flush every open shard's pending writes to its segments."""
        self._shards.flush()

    def close(self) -> None:
        """Flush and close every open shard. Later calls reopen shards lazily."""
        self._shards.close()
