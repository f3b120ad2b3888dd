"""`EdgeIndex`'s reads: routing to partitions, searches, retrieve, scroll and count.

A call whose filter names a user goes to that user's partition, where the engine filters and
fuses; any other call visits every partition of the namespace, and searches over several are
merged by `_edge_fanout`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from qdrant_edge import (
    CountRequest,
    EdgeShard,
    Fusion,
    Prefetch,
    Query,
    QueryRequest,
    ScrollRequest,
)

from memvault.index._edge_convert import edge_filter, edge_sparse
from memvault.index._edge_fanout import fuse_rrf, hit, merge
from memvault.index._edge_hnsw import SEARCH_PARAMS
from memvault.index._edge_layout import partition_folder_name
from memvault.index._edge_shards import PartKey, ShardTable
from memvault.index.base import (
    DENSE,
    RRF_K,
    SPARSE,
    Hit,
    PointFilter,
    SparseVector,
    canonical_point_id,
    dense_vector,
    validate_namespace,
)

if TYPE_CHECKING:
    from qdrant_edge import PointId

T = TypeVar("T")
_SCROLL_PAGE = 1000


class EdgeReads:
    """The read half of `EdgeIndex` (which sets `dense_dim` and `_shards`)."""

    dense_dim: int
    _shards: ShardTable

    def _keys(self, namespace: str, where: PointFilter | None = None) -> list[PartKey]:
        """The partitions an operation visits: the named user's, else every one on disk."""
        validate_namespace(namespace)
        if where is not None and where.user_id is not None:
            return [(namespace, partition_folder_name(where.user_id))]
        return [(namespace, part) for part in self._shards.partitions(namespace)]

    def _each(
        self,
        namespace: str,
        where: PointFilter | None,
        op: Callable[[EdgeShard, PartKey], T],
        action: str,
    ) -> list[T]:
        """`op(shard, key)` on each visited partition that exists, results in partition order."""
        results: list[T] = []
        keys = self._keys(namespace, where)
        for key in keys:

            def call(shard: EdgeShard, key: PartKey = key) -> tuple[T]:
                return (op(shard, key),)

            found = self._shards.run(
                key, call, create=False, missing=None, action=action, keep=len(keys) == 1
            )
            if found is not None:
                results.append(found[0])
        return results

    def _dense(self, vector: Sequence[float]) -> list[float]:
        return dense_vector(vector, self.dense_dim)

    def search_dense(
        self, namespace: str, vector: Sequence[float], where: PointFilter, limit: int
    ) -> list[Hit]:
        """Exact cosine nearest neighbours among points matching `where`, best first."""
        return self._nearest(
            namespace, Query.Nearest(self._dense(vector), using=DENSE), where, limit
        )

    def search_sparse(
        self, namespace: str, vector: SparseVector, where: PointFilter, limit: int
    ) -> list[Hit]:
        """Sparse dot product, best first: the query carries IDF over the readable set."""
        return self._nearest(
            namespace, Query.Nearest(edge_sparse(vector), using=SPARSE), where, limit
        )

    def _nearest(self, namespace: str, query: Query, where: PointFilter, limit: int) -> list[Hit]:
        """The `limit` points matching `where` nearest to `query`."""
        request = QueryRequest(
            limit=max(limit, 0),
            query=query,
            filter=edge_filter(where),
            with_payload=True,
            params=SEARCH_PARAMS,
        )
        return self._query(namespace, where, request, limit)

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
        and on the outer query, so no out-of-scope point can enter either candidate list. Within
        one partition the engine fuses; over several (no `user_id`), `_edge_fanout` does.
        """
        flt = edge_filter(where)
        candidates = max(prefetch, limit, 1)
        dense_query = Query.Nearest(self._dense(dense), using=DENSE)
        sparse_query = Query.Nearest(edge_sparse(sparse), using=SPARSE)
        if limit > 0 and where.user_id is None and len(self._keys(namespace)) > 1:
            lists = [
                self._query(
                    namespace,
                    where,
                    QueryRequest(
                        limit=candidates,
                        query=q,
                        filter=flt,
                        with_payload=True,
                        params=SEARCH_PARAMS,
                    ),
                    candidates,
                )
                for q in (dense_query, sparse_query)
            ]
            return fuse_rrf(lists[0], lists[1], weights, rrf_k, limit)
        request = QueryRequest(
            limit=max(limit, 0),
            prefetches=[
                Prefetch(limit=candidates, query=dense_query, filter=flt, params=SEARCH_PARAMS),
                Prefetch(limit=candidates, query=sparse_query, filter=flt),
            ],
            query=Fusion.Rrf(k=rrf_k, weights=list(weights)),  # type: ignore[arg-type]
            filter=flt,
            with_payload=True,
        )
        return self._query(namespace, where, request, limit)

    def _query(
        self, namespace: str, where: PointFilter, request: QueryRequest, limit: int
    ) -> list[Hit]:
        if limit <= 0:
            validate_namespace(namespace)
            return []
        found = self._each(namespace, where, lambda shard, key: shard.query(request), "search")
        return merge(found, limit) if len(found) > 1 else [hit(p) for p in (found or [[]])[0]]

    def retrieve(
        self, namespace: str, ids: Sequence[str], *, user_id: str | None = None
    ) -> list[Hit]:
        """Points by id, in the order asked, with payload and score 0. Missing ids are skipped.
        With `user_id`, only that user's partition is read."""
        wanted = [canonical_point_id(i) for i in ids]
        if not wanted:
            validate_namespace(namespace)
            return []
        point_ids: list[PointId] = list(wanted)
        found: dict[str, dict[str, Any]] = {}
        where = None if user_id is None else PointFilter(user_id=user_id)
        for records in self._each(
            namespace, where, lambda shard, key: shard.retrieve(point_ids, True, False), "retrieve"
        ):
            found.update((str(r.id), dict(r.payload or {})) for r in records)
        return [Hit(id=i, score=0.0, payload=found[i]) for i in dict.fromkeys(wanted) if i in found]

    def scroll_ids(self, namespace: str, where: PointFilter) -> list[str]:
        """Every point id matching `where`."""
        flt = edge_filter(where)

        def op(shard: EdgeShard, key: PartKey) -> list[str]:
            ids: list[str] = []
            offset: Any = None
            while True:
                records, offset = shard.scroll(
                    ScrollRequest(offset=offset, limit=_SCROLL_PAGE, filter=flt, with_payload=False)
                )
                ids.extend(str(r.id) for r in records)
                if offset is None:
                    return ids

        return [i for ids in self._each(namespace, where, op, "scroll") for i in ids]

    def count(self, namespace: str, where: PointFilter) -> int:
        """Exact count of points matching `where`; 0 for an unknown namespace.

        A count inside one user's partition is remembered until that partition is written
        (`ShardTable.counted`): the readable-set IDF asks the same counts on every search.
        """
        request = CountRequest(exact=True, filter=edge_filter(where))
        if where.user_id is None:
            return sum(self._each(namespace, where, lambda shard, _: shard.count(request), "count"))

        def op(shard: EdgeShard, key: PartKey) -> int:
            return self._shards.counted(key, where, lambda: shard.count(request))

        return sum(self._each(namespace, where, op, "count"))
