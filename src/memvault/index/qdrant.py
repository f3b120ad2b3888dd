"""`QdrantIndex`: the same `VectorIndex` on a Qdrant server or cluster, via qdrant-client.

One collection per namespace (`<prefix><namespace>`), with the same named vectors as `EdgeIndex`.
`":memory:"` selects qdrant-client's local mode, a pure-Python engine used by the tests here
(exact search, payload indexes accepted and ignored). The local mode is not thread-safe, so every
client call goes through one lock; on a server the lock costs little next to the round trip.

Physical erasure is the server's job: a deleted point is only marked deleted in its segment until
the vacuum optimizer rewrites that segment, so collections are created with a low
`deleted_threshold` and the server's smallest `vacuum_min_vector_number` (`compact` has nothing
more to ask of it). docs/index.md says what that does and does not guarantee.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from qdrant_client import QdrantClient, models
from qdrant_client.http.exceptions import UnexpectedResponse

from memvault.errors import IndexError_, InvalidRequest, VaultError
from memvault.index._qdrant_convert import (
    payload_indexes,
    qdrant_filter,
    qdrant_sparse,
    to_hit,
)
from memvault.index.base import (
    DENSE,
    RRF_K,
    SPARSE,
    TIMED_OPERATIONS,
    Hit,
    IndexPoint,
    PointFilter,
    SparseVector,
    canonical_point_id,
    dense_vector,
    store_payload,
    validate_namespace,
)
from memvault.observability import timed_methods

T = TypeVar("T")

_SCROLL_PAGE = 1000
_HTTP_NOT_FOUND = 404
VACUUM_DELETED_THRESHOLD = 0.001
"""Vacuum a segment once 0.1% of its vectors are deleted (the server's default is 20%)."""
VACUUM_MIN_VECTORS = 100
"""Vacuum segments from 100 vectors on: the smallest value a server accepts (default 1000)."""


@timed_methods("index", TIMED_OPERATIONS)
class QdrantIndex:
    """`VectorIndex` on qdrant-client: one collection per namespace.

    Hybrid search fuses in the server with `RrfQuery(Rrf(k=RRF_K))`, so its scores equal
    `EdgeIndex`'s (`1 / (k + rank)`, rank from 0). A plain `FusionQuery(RRF)` would use the
    client's local default k=2 in local mode and the server's default on a server.
    """

    def __init__(
        self, client: QdrantClient, dense_dim: int, *, collection_prefix: str = "memvault_"
    ) -> None:
        if dense_dim < 1:
            raise InvalidRequest("dense_dim must be positive")
        self.client = client
        self.dense_dim = dense_dim
        self.collection_prefix = collection_prefix
        self._lock = threading.RLock()
        self._known: set[str] = set()
        options = client.init_options
        self._local = options.get("location") == ":memory:" or options.get("path") is not None

    @classmethod
    def from_url(cls, url: str, dense_dim: int) -> QdrantIndex:
        """An index on the Qdrant at `url`; `":memory:"` runs qdrant-client's local mode."""
        try:
            client = (
                QdrantClient(location=":memory:") if url == ":memory:" else QdrantClient(url=url)
            )
        except Exception as exc:  # the client's message may echo the URL or a path
            raise IndexError_(f"cannot open the qdrant client: {type(exc).__name__}") from None
        return cls(client, dense_dim)

    # -- collections -------------------------------------------------------------------------

    def _collection(self, namespace: str) -> str:
        return self.collection_prefix + validate_namespace(namespace)

    def _exists(self, name: str) -> bool:
        if name in self._known:
            return True
        if self.client.collection_exists(name):
            self._drop_idf_modifier(name)
            self._known.add(name)
            return True
        return False

    def _drop_idf_modifier(self, name: str) -> None:
        """Turn off the IDF modifier of a collection made before issue 32, once per process.

        The engine's IDF counts every point of the collection, other users' and agents'
        included; the query carries IDF over the reader's readable set instead (`text.bm25`).
        The stored sparse vectors are term frequencies either way, so nothing is re-written.
        """
        sparse = self.client.get_collection(name).config.params.sparse_vectors or {}
        params = sparse.get(SPARSE)
        if params is not None and params.modifier == models.Modifier.IDF:
            self.client.update_collection(
                name,
                sparse_vectors_config={
                    SPARSE: models.SparseVectorParams(modifier=models.Modifier.NONE)
                },
            )

    def _create(self, name: str) -> None:
        self.client.create_collection(
            name,
            vectors_config={
                DENSE: models.VectorParams(size=self.dense_dim, distance=models.Distance.COSINE)
            },
            sparse_vectors_config={
                SPARSE: models.SparseVectorParams(modifier=models.Modifier.NONE)
            },
            optimizers_config=models.OptimizersConfigDiff(
                deleted_threshold=VACUUM_DELETED_THRESHOLD,
                vacuum_min_vector_number=VACUUM_MIN_VECTORS,
            ),
        )
        if not self._local:  # the local mode ignores payload indexes and warns about them
            for field, schema in payload_indexes().items():
                self.client.create_payload_index(name, field_name=field, field_schema=schema)
        self._known.add(name)

    def _run(self, namespace: str, op: Callable[[str], T], *, create: bool, missing: T) -> T:
        """Run `op(collection)` under the client lock; `missing` if the collection is absent."""
        name = self._collection(namespace)
        with self._lock:
            try:
                if not self._exists(name):
                    if not create:
                        return missing
                    self._create(name)
                return op(name)
            except VaultError:
                raise
            except UnexpectedResponse as exc:
                if exc.status_code == _HTTP_NOT_FOUND and not create:
                    # Dropped by another worker since we cached it.
                    self._known.discard(name)
                    return missing
                raise IndexError_(f"qdrant operation failed: HTTP {exc.status_code}") from exc
            except Exception as exc:
                raise IndexError_(f"qdrant operation failed: {type(exc).__name__}") from exc

    # -- VectorIndex -------------------------------------------------------------------------

    def _dense(self, vector: Sequence[float]) -> list[float]:
        return dense_vector(vector, self.dense_dim)

    def _point(self, point: IndexPoint) -> models.PointStruct:
        vectors: dict[str, Any] = {DENSE: self._dense(point.dense)}
        if point.sparse is not None:
            vectors[SPARSE] = qdrant_sparse(point.sparse)
        return models.PointStruct(
            id=canonical_point_id(point.id), vector=vectors, payload=store_payload(point.payload)
        )

    def upsert(self, namespace: str, points: Sequence[IndexPoint]) -> None:
        """Insert or replace points; creates the namespace's collection on first use."""
        validate_namespace(namespace)
        if not points:
            return
        structs = [self._point(p) for p in points]
        self._run(
            namespace,
            lambda name: self.client.upsert(name, points=structs, wait=True),
            create=True,
            missing=None,
        )

    def set_payload(self, namespace: str, ids: Sequence[str], payload: dict[str, Any]) -> None:
        """Merge `payload` into each existing point's payload; unknown ids are skipped."""
        wanted = [canonical_point_id(i) for i in ids]
        if not wanted:
            return
        values = store_payload(payload)

        def op(name: str) -> None:
            # A server rejects the whole call if one id is missing, so keep the existing ones.
            found = self.client.retrieve(name, wanted, with_payload=False, with_vectors=False)
            existing: list[models.ExtendedPointId] = [str(r.id) for r in found]
            if existing:
                self.client.set_payload(name, values, points=existing, wait=True)

        self._run(namespace, op, create=False, missing=None)

    def delete(self, namespace: str, ids: Sequence[str], *, user_id: str | None = None) -> None:
        """Delete points by id; unknown ids and namespaces are ignored. With `user_id`, only
        that user's points."""
        wanted: list[models.ExtendedPointId] = [canonical_point_id(i) for i in ids]
        if not wanted:
            return
        if user_id is not None:
            self.delete_where(
                namespace, PointFilter(user_id=user_id, only_ids=tuple(str(i) for i in wanted))
            )
            return
        self._delete(namespace, models.PointIdsList(points=wanted))

    def delete_where(self, namespace: str, where: PointFilter) -> None:
        """Delete every point matching `where` (all points for an empty filter)."""
        self._delete(
            namespace, models.FilterSelector(filter=qdrant_filter(where) or models.Filter())
        )

    def _delete(
        self, namespace: str, selector: models.PointIdsList | models.FilterSelector
    ) -> None:
        """Delete the points `selector` picks and wait; an absent namespace is left alone."""
        self._run(
            namespace,
            lambda name: self.client.delete(name, points_selector=selector, wait=True),
            create=False,
            missing=None,
        )

    def drop_namespace(self, namespace: str) -> None:
        """Delete the namespace's collection. Unknown namespaces are ignored."""
        name = self._collection(namespace)
        with self._lock:
            try:
                if self.client.collection_exists(name):
                    self.client.delete_collection(name)
            except Exception as exc:
                raise IndexError_(f"qdrant drop failed: {type(exc).__name__}") from exc
            finally:
                self._known.discard(name)

    def compact(self, namespace: str) -> int:
        """Nothing to do here: always 0. The server removes deleted points by itself.

        Its vacuum optimizer rewrites a segment once `deleted_threshold` of its vectors are
        deleted (set low on creation; segments under `vacuum_min_vector_number` vectors wait).
        Its WAL keeps each operation, deletes included, until the segments are flushed; closed
        WAL segments (`wal_capacity_mb` each) are then removed, but the open one is reused until
        full, so a deleted point's upsert record may stay in it for a while. Snapshots, replicas
        and backups keep their own copies. None of this can be forced per point from a client.
        """
        self._collection(namespace)
        return 0

    def compact_all(self) -> int:
        """Nothing to do here: always 0 (see `compact`)."""
        return 0

    def maintain(self, namespace: str) -> int:
        """Nothing to do here: always 0 (see `compact`)."""
        return self.compact(namespace)

    def search_dense(
        self, namespace: str, vector: Sequence[float], where: PointFilter, limit: int
    ) -> list[Hit]:
        """Cosine nearest neighbours among points matching `where`, best first."""
        return self._nearest(namespace, self._dense(vector), DENSE, where, limit)

    def search_sparse(
        self, namespace: str, vector: SparseVector, where: PointFilter, limit: int
    ) -> list[Hit]:
        """Sparse dot product, best first (no IDF modifier: the query carries the weights)."""
        return self._nearest(namespace, qdrant_sparse(vector), SPARSE, where, limit)

    def _nearest(
        self,
        namespace: str,
        query: list[float] | models.SparseVector,
        using: str,
        where: PointFilter,
        limit: int,
    ) -> list[Hit]:
        """The `limit` points matching `where` nearest to `query` in the vector `using`."""
        flt = qdrant_filter(where)
        return self._query(
            namespace,
            limit,
            lambda name: self.client.query_points(
                name, query=query, using=using, query_filter=flt, limit=limit, with_payload=True
            ),
        )

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

        Each prefetch takes `max(prefetch, limit)` candidates; the filter is on both prefetches
        and on the outer query.
        """
        flt = qdrant_filter(where)
        candidates = max(prefetch, limit, 1)
        prefetches = [
            models.Prefetch(query=self._dense(dense), using=DENSE, filter=flt, limit=candidates),
            models.Prefetch(
                query=qdrant_sparse(sparse), using=SPARSE, filter=flt, limit=candidates
            ),
        ]
        fusion = models.RrfQuery(rrf=models.Rrf(k=rrf_k, weights=list(weights)))
        return self._query(
            namespace,
            limit,
            lambda name: self.client.query_points(
                name,
                prefetch=prefetches,
                query=fusion,
                query_filter=flt,
                limit=limit,
                with_payload=True,
            ),
        )

    def _query(
        self, namespace: str, limit: int, op: Callable[[str], models.QueryResponse]
    ) -> list[Hit]:
        if limit <= 0:
            validate_namespace(namespace)
            return []
        response = self._run(namespace, op, create=False, missing=None)
        return [] if response is None else [to_hit(p) for p in response.points]

    def retrieve(
        self, namespace: str, ids: Sequence[str], *, user_id: str | None = None
    ) -> list[Hit]:
        """Points by id, in the order asked, with payload and score 0. Missing ids are skipped.
        With `user_id`, only that user's points."""
        wanted: list[models.ExtendedPointId] = [canonical_point_id(i) for i in ids]
        if not wanted:
            return []
        none: list[models.Record] = []
        records = self._run(
            namespace,
            lambda name: self.client.retrieve(name, wanted, with_payload=True, with_vectors=False),
            create=False,
            missing=none,
        )
        found = {
            str(r.id): dict(r.payload or {})
            for r in records
            if user_id is None or (r.payload or {}).get("user_id") == user_id
        }
        return [
            Hit(id=str(i), score=0.0, payload=found[str(i)])
            for i in dict.fromkeys(wanted)
            if str(i) in found
        ]

    def scroll_ids(self, namespace: str, where: PointFilter) -> list[str]:
        """Every point id matching `where`."""
        flt = qdrant_filter(where)

        def op(name: str) -> list[str]:
            ids: list[str] = []
            offset: models.ExtendedPointId | None = None
            while True:
                records, offset = self.client.scroll(
                    name,
                    scroll_filter=flt,
                    limit=_SCROLL_PAGE,
                    offset=offset,
                    with_payload=False,
                    with_vectors=False,
                )
                ids.extend(str(r.id) for r in records)
                if offset is None:
                    return ids

        return self._run(namespace, op, create=False, missing=[])

    def count(self, namespace: str, where: PointFilter) -> int:
        """Exact count of points matching `where`; 0 for an unknown namespace."""
        flt = qdrant_filter(where)
        return self._run(
            namespace,
            lambda name: self.client.count(name, count_filter=flt, exact=True).count,
            create=False,
            missing=0,
        )

    def namespaces(self) -> list[str]:
        """Namespaces that have a collection under this index's prefix."""
        with self._lock:
            try:
                names = [c.name for c in self.client.get_collections().collections]
            except Exception as exc:
                raise IndexError_(f"qdrant listing failed: {type(exc).__name__}") from None
        prefix = self.collection_prefix
        return sorted(n[len(prefix) :] for n in names if n.startswith(prefix))

    def close(self) -> None:
        """Close the client (local mode persists and releases its storage)."""
        with self._lock:
            try:
                self.client.close()
            except Exception as exc:
                raise IndexError_(f"qdrant close failed: {type(exc).__name__}") from None
            finally:
                self._known.clear()
