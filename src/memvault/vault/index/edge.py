"""`EdgeIndex`: the embedded default, one qdrant-edge shard folder per namespace.

qdrant-edge runs Qdrant's Rust engine inside this process. Each namespace is a shard folder under
`root`, opened lazily and closed again (least recently used first) beyond `max_open`, because every
open shard holds threads, file handles and its WAL lock. Search is exact: HNSW is never built on the
request path, since `optimize()` holds the GIL for seconds.

Thread safety: the API calls us from a thread pool. One lock guards the table of open shards, one
lock per shard serializes the calls on that shard. Lock order is always table, then shard.
"""

from __future__ import annotations

import logging
import shutil
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from qdrant_edge import (
    CountRequest,
    Distance,
    EdgeConfig,
    EdgeShard,
    EdgeSparseVectorParams,
    EdgeVectorParams,
    FieldCondition,
    Filter,
    Fusion,
    HasIdCondition,
    IntegerIndexParams,
    KeywordIndexParams,
    MatchAny,
    MatchValue,
    Modifier,
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

from memvault.errors import IndexError_, InvalidRequest, VaultError
from memvault.vault.index.base import (
    DENSE,
    NAMESPACE_PATTERN,
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

log = logging.getLogger(__name__)

T = TypeVar("T")

_CONFIG_FILE = "edge_config.json"
_SCROLL_PAGE = 1000


def _payload_indexes() -> dict[str, Any]:
    """Payload fields the shard indexes, and how. `user_id` is the tenant key inside a shard."""
    return {
        "user_id": KeywordIndexParams(is_tenant=True),
        "agent_id": KeywordIndexParams(),
        "readers": KeywordIndexParams(),
        "note_type": KeywordIndexParams(),
        "topic_tags": KeywordIndexParams(),
        "is_active": IntegerIndexParams(lookup=True, range=False),
    }


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


def _hit(point: ScoredPoint) -> Hit:
    return Hit(id=str(point.id), score=float(point.score), payload=dict(point.payload or {}))


@dataclass(slots=True)
class _OpenShard:
    shard: EdgeShard
    lock: threading.Lock
    closed: bool = False

    def shut(self) -> None:
        """Flush and close; the caller holds `lock`."""
        self.closed = True
        try:
            self.shard.flush()
        finally:
            self.shard.close()


class EdgeIndex:
    """`VectorIndex` on qdrant-edge shards: `root/<namespace>/` per namespace.

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
        self.max_open = max_open
        self.flush_every_write = flush_every_write
        self.root.mkdir(parents=True, exist_ok=True)
        self._table: OrderedDict[str, _OpenShard] = OrderedDict()
        self._table_lock = threading.Lock()

    # -- shard table -------------------------------------------------------------------------

    def _config(self) -> EdgeConfig:
        return EdgeConfig(
            vectors={DENSE: EdgeVectorParams(size=self.dense_dim, distance=Distance.Cosine)},
            sparse_vectors={SPARSE: EdgeSparseVectorParams(modifier=Modifier.Idf)},
            max_search_threads=1,
            wal_enabled=True,
        )

    def _path(self, namespace: str) -> Path:
        return self.root / namespace

    def _on_disk(self, namespace: str) -> bool:
        return (self._path(namespace) / _CONFIG_FILE).is_file()

    def _open(self, namespace: str) -> EdgeShard:
        path = str(self._path(namespace))
        # Passing the config on load makes the engine refuse a shard of another dimension.
        if self._on_disk(namespace):
            shard = EdgeShard.load(path, self._config())
        else:
            shard = EdgeShard.create(path, self._config())
        # Also on load: a crash between create and the index calls leaves them missing.
        present = shard.info().payload_schema
        for field, params in _payload_indexes().items():
            if field not in present:
                shard.update(UpdateOperation.create_field_index(field, params))
        return shard

    def _acquire(self, namespace: str, create: bool) -> _OpenShard | None:
        with self._table_lock:
            handle = self._table.get(namespace)
            if handle is not None:
                self._table.move_to_end(namespace)
                return handle
            if not create and not self._on_disk(namespace):
                return None
            try:
                shard = self._open(namespace)
            except Exception as exc:
                raise IndexError_(f"cannot open shard for namespace: {exc}") from exc
            handle = _OpenShard(shard=shard, lock=threading.Lock())
            self._table[namespace] = handle
            self._evict_beyond_limit()
            return handle

    def _evict_beyond_limit(self) -> None:
        """Close least recently used shards; the caller holds the table lock.

        Closing under the table lock means a namespace is never reopened while its old handle
        still holds the WAL lock.
        """
        while len(self._table) > self.max_open:
            _, oldest = self._table.popitem(last=False)
            with oldest.lock:
                try:
                    oldest.shut()
                except Exception as exc:
                    log.warning("closing an evicted edge shard failed: %s", type(exc).__name__)

    def _run(self, namespace: str, op: Callable[[EdgeShard], T], *, create: bool, missing: T) -> T:
        """Run `op` on the namespace's shard under its lock; `missing` if it does not exist."""
        validate_namespace(namespace)
        while True:
            handle = self._acquire(namespace, create)
            if handle is None:
                return missing
            with handle.lock:
                if handle.closed:  # evicted between acquire and lock: open it again
                    continue
                try:
                    return op(handle.shard)
                except VaultError:
                    raise
                except Exception as exc:
                    raise IndexError_(f"edge shard operation failed: {exc}") from exc

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

        self._run(namespace, op, create=True, missing=None)

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

        self._run(namespace, op, create=False, missing=None)

    def delete(self, namespace: str, ids: Sequence[str]) -> None:
        """Delete points by id; unknown ids and namespaces are ignored."""
        wanted = _point_ids(ids)
        if not wanted:
            return
        self._run(
            namespace,
            lambda shard: shard.update(UpdateOperation.delete_points(wanted)),
            create=False,
            missing=None,
        )

    def delete_where(self, namespace: str, where: PointFilter) -> None:
        """Delete every point matching `where` (all points for an empty filter)."""
        flt = edge_filter(where) or Filter()
        self._run(
            namespace,
            lambda shard: shard.update(UpdateOperation.delete_points_by_filter(flt)),
            create=False,
            missing=None,
        )

    def drop_namespace(self, namespace: str) -> None:
        """Close the namespace's shard and delete its folder. Unknown namespaces are ignored."""
        validate_namespace(namespace)
        with self._table_lock:
            handle = self._table.pop(namespace, None)
            if handle is not None:
                with handle.lock:
                    handle.shut()
            path = self._path(namespace)
            if path.exists():
                shutil.rmtree(path)

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
        points = self._run(
            namespace, lambda shard: shard.query(request), create=False, missing=none
        )
        return [_hit(p) for p in points]

    def retrieve(self, namespace: str, ids: Sequence[str]) -> list[Hit]:
        """Points by id, in the order asked, with payload and score 0. Missing ids are skipped."""
        wanted = [canonical_point_id(i) for i in ids]
        if not wanted:
            return []
        point_ids: list[PointId] = list(wanted)
        none: list[Record] = []
        records = self._run(
            namespace,
            lambda shard: shard.retrieve(point_ids, True, False),
            create=False,
            missing=none,
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

        return self._run(namespace, op, create=False, missing=[])

    def count(self, namespace: str, where: PointFilter) -> int:
        """Exact count of points matching `where`; 0 for an unknown namespace."""
        request = CountRequest(exact=True, filter=edge_filter(where))
        return self._run(namespace, lambda shard: shard.count(request), create=False, missing=0)

    def namespaces(self) -> list[str]:
        """Namespaces with a shard folder under `root`, open or not."""
        return sorted(
            p.name
            for p in self.root.iterdir()
            if NAMESPACE_PATTERN.match(p.name) and (p / _CONFIG_FILE).is_file()
        )

    def open_namespaces(self) -> list[str]:
        """Namespaces whose shard is open now, least recently used first (for ops and tests)."""
        with self._table_lock:
            return list(self._table)

    def flush(self) -> None:
        """Flush every open shard's pending writes to its segments."""
        with self._table_lock:
            handles = list(self._table.values())
        for handle in handles:
            with handle.lock:
                if not handle.closed:
                    handle.shard.flush()

    def close(self) -> None:
        """Flush and close every open shard. Later calls reopen shards lazily."""
        with self._table_lock:
            failures = 0
            while self._table:
                _, handle = self._table.popitem(last=False)
                with handle.lock:
                    try:
                        handle.shut()
                    except Exception as exc:
                        failures += 1
                        log.warning("closing an edge shard failed: %s", type(exc).__name__)
            if failures:
                raise IndexError_(f"{failures} edge shard(s) failed to close")


def _edge_sparse(vector: SparseVector) -> EdgeSparseVector:
    return EdgeSparseVector(
        indices=[int(i) for i in vector.indices], values=[float(v) for v in vector.values]
    )
