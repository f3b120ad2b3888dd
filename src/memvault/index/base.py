"""The `VectorIndex` protocol every adapter implements, and the value types it speaks.

A namespace is a tenant (Mode A) or a (tenant, agent) sandbox (Mode B). Points carry no text:
the payload holds ids, flags, blind (keyed-hash) tags, timestamps and the embedding model id.
Every query carries a `PointFilter`; adapters translate it into the store's own filter so the
scope is enforced inside the store, never after it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar, runtime_checkable

from memvault.errors import InvalidRequest
from memvault.ids import canonical_uuid
from memvault.text.vectors import RRF_K, SparseVector

DENSE = "dense"
SPARSE = "bm25"

C = TypeVar("C")
F = TypeVar("F")


@dataclass(frozen=True, slots=True)
class IndexPoint:
    """One note's vectors and payload. `id` is the note's UUID string."""

    id: str
    dense: Sequence[float]
    payload: dict[str, Any]
    sparse: SparseVector | None = None


@dataclass(frozen=True, slots=True)
class PointFilter:
    """Conditions on payload fields, all ANDed.

    - `user_id` / `agent_id`: exact match when given.
    - `readers_any`: the point's `readers` list contains at least one of these values.
    - `active_only`: `is_active == 1`.
    - `note_type`: exact match when given.
    - `topic_tags`: the point's `topic_tags` contains every one of these (AND).
    - `exclude_ids`: point ids to leave out.
    - `only_ids`: when non-empty, only these point ids (the graph walk's relevance gate).
    - `term`: the point's `terms` list (its keyed BM25 token ids) holds this id; counting
      with it gives a term's document frequency over the readable set (`vault/readable_idf`).
    """

    user_id: str | None = None
    agent_id: str | None = None
    readers_any: tuple[str, ...] = ()
    active_only: bool = False
    note_type: str | None = None
    topic_tags: tuple[str, ...] = ()
    exclude_ids: tuple[str, ...] = ()
    only_ids: tuple[str, ...] = ()
    term: int | None = None


@dataclass(frozen=True, slots=True)
class Hit:
    """A scored point with its payload."""

    id: str
    score: float
    payload: dict[str, Any] = field(default_factory=dict)


TIMED_OPERATIONS = (
    "upsert",
    "set_payload",
    "delete",
    "delete_where",
    "drop_namespace",
    "compact",
    "maintain",
    "search_dense",
    "search_sparse",
    "search_hybrid",
    "retrieve",
    "scroll_ids",
    "count",
)
"""The adapters' calls timed as `memvault_index_seconds{operation}` (see memvault.observability)."""


@runtime_checkable
class VectorIndex(Protocol):
    """Dense + sparse vector storage partitioned into namespaces."""

    def upsert(self, namespace: str, points: Sequence[IndexPoint]) -> None:
        """Insert or replace points; creates the namespace on first use."""

    def set_payload(self, namespace: str, ids: Sequence[str], payload: dict[str, Any]) -> None:
        """Merge `payload` into the payload of each existing point."""

    def delete(self, namespace: str, ids: Sequence[str], *, user_id: str | None = None) -> None:
        """Delete points by id. Unknown ids are ignored. With `user_id`, only that user's
        points (Edge then visits that user's partition alone).

        The points are gone from every read at once; their bytes may stay in the store's files
        until `compact` (Edge) or the server's own vacuum (Qdrant).
        """

    def delete_where(self, namespace: str, where: PointFilter) -> None:
        """Delete every point matching `where`.

        Edge removes the files at once when `where` names a user (its partition is deleted, or
        rebuilt when `where` has more conditions); other deletes wait for `compact`.
        """

    def drop_namespace(self, namespace: str) -> None:
        """Remove a namespace and all its files. Unknown namespaces are ignored."""

    def compact(self, namespace: str) -> int:
        """Physically remove deleted (and replaced) points of `namespace` from the store's files.

        Returns how many partitions were rewritten (Edge); 0 when the store does it by itself
        (Qdrant server) or nothing was pending. Unknown namespaces give 0.
        """

    def compact_all(self) -> int:
        """`compact` every namespace; the total it returned (for the maintenance loop)."""

    def maintain(self, namespace: str) -> int:
        """The maintenance pass's share of `compact`: partitions with deleted points, and those
        whose replaced (updated) share passed the store's threshold; how many were rewritten."""

    def search_dense(
        self, namespace: str, vector: Sequence[float], where: PointFilter, limit: int
    ) -> list[Hit]:
        """Cosine nearest neighbours among points matching `where`, best first."""

    def search_sparse(
        self, namespace: str, vector: SparseVector, where: PointFilter, limit: int
    ) -> list[Hit]:
        """Sparse dot product, best first: no IDF modifier, the query carries the IDF weights."""

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
        """Prefetch `prefetch` dense and sparse candidates with `where`, fuse by RRF in-store.

        `weights` (dense, sparse) weigh each list in the fusion (Qdrant's weighted RRF): a rank
        `r` (1-based) of a list with weight `w` contributes `1 / (r / w + rrf_k - 1)`. The weight
        stretches ranks rather than scaling scores, so a small `rrf_k` is what lets a low weight
        actually demote a list.
        """

    def retrieve(
        self, namespace: str, ids: Sequence[str], *, user_id: str | None = None
    ) -> list[Hit]:
        """Points by id with payload (score 0). Missing ids are skipped. With `user_id`, only
        that user's points (Edge then visits that user's partition alone)."""

    def scroll_ids(self, namespace: str, where: PointFilter) -> list[str]:
        """Every point id matching `where`."""

    def count(self, namespace: str, where: PointFilter) -> int:
        """Exact count of points matching `where` (0 for an unknown namespace)."""

    def namespaces(self) -> list[str]:
        """Namespaces that exist."""

    def close(self) -> None:
        """Flush and release every resource."""


# Rules every adapter shares. They live beside the protocol so both adapters (and callers that
# build namespaces) agree on them.

NAMESPACE_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@~-]{0,200}")
"""A tenant id (Mode A) or `tenant~agent` (Mode B). Always matched whole (`fullmatch`)."""


def validate_namespace(namespace: str) -> str:
    """Return `namespace` if it matches `NAMESPACE_PATTERN` in full, else `InvalidRequest`.

    The whole value must match: `re.match` with `$` would admit a trailing newline.
    """
    if not isinstance(namespace, str) or not NAMESPACE_PATTERN.fullmatch(namespace):
        raise InvalidRequest(
            f"namespace must match ^{NAMESPACE_PATTERN.pattern}$ (the whole value)"
        )
    return namespace


def dense_vector(vector: Sequence[float], dense_dim: int) -> list[float]:
    """`vector` as plain floats; `InvalidRequest` unless it has `dense_dim` dimensions."""
    if len(vector) != dense_dim:
        raise InvalidRequest(f"dense vector must have {dense_dim} dimensions")
    return [float(x) for x in vector]


def canonical_point_id(point_id: str) -> str:
    """The canonical lowercase form of a UUID point id; `InvalidRequest` if it is not a UUID."""
    canonical = canonical_uuid(str(point_id))
    if canonical is None:
        raise InvalidRequest("point id must be a UUID")
    return canonical


def store_payload(payload: dict[str, Any]) -> dict[str, Any]:
    """A copy of `payload` with top-level booleans stored as 0/1.

    Flags are integers in every store because qdrant-edge 0.9.0 never matches `MatchValue(True)`
    against a stored boolean; doing it here keeps both adapters' payloads identical.
    """
    return {k: int(v) if isinstance(v, bool) else v for k, v in payload.items()}


@dataclass(frozen=True, slots=True)
class FilterTerms(Generic[C, F]):
    """How one store spells filter conditions (`C`) and a filter (`F`), for `build_filter`."""

    match: Callable[[str, str | int], C]
    """The payload field `key` equals `value`."""
    match_any: Callable[[str, list[str]], C]
    """The payload list `key` holds at least one of `values`."""
    has_id: Callable[[list[str]], C]
    """The point id is one of `ids` (canonical UUID strings)."""
    combine: Callable[[list[C] | None, list[C] | None], F]
    """The filter: every `must` condition holds and no `must_not` one does (`None`: no list)."""


def build_filter(where: PointFilter, terms: FilterTerms[C, F]) -> F | None:
    """The scope filter of `where` in one store's `terms`; `None` when it has no condition.

    The one place that says which payload field each `PointFilter` condition reads, so both
    adapters enforce the same scope inside their store.
    """
    must: list[C] = []
    if where.user_id is not None:
        must.append(terms.match("user_id", where.user_id))
    if where.agent_id is not None:
        must.append(terms.match("agent_id", where.agent_id))
    if where.readers_any:
        must.append(terms.match_any("readers", list(where.readers_any)))
    if where.active_only:
        # An int, not True: flags are stored as 0/1 (`store_payload`), and qdrant-edge turns
        # MatchValue(True) into 1, which would never match a stored bool anyway.
        must.append(terms.match("is_active", 1))
    if where.note_type is not None:
        must.append(terms.match("note_type", where.note_type))
    must.extend(terms.match("topic_tags", t) for t in where.topic_tags)
    if where.term is not None:
        must.append(terms.match("terms", where.term))
    if where.only_ids:
        must.append(terms.has_id([canonical_point_id(i) for i in where.only_ids]))
    must_not: list[C] = []
    if where.exclude_ids:
        must_not.append(terms.has_id([canonical_point_id(i) for i in where.exclude_ids]))
    if not must and not must_not:
        return None
    return terms.combine(must or None, must_not or None)


PayloadTest = Callable[[str, Mapping[str, Any]], bool]
"""Whether a point (canonical id, stored payload) passes a filter."""


def _holds(value: Any, wanted: object) -> bool:
    """An engine's match on one payload field: equal, or (a list) holding `wanted`."""
    if isinstance(value, list):
        return wanted in value
    return value is not None and value == wanted


def payload_test(where: PointFilter) -> PayloadTest:
    """`where` evaluated in Python on a point's stored payload, with the stores' semantics.

    Built by `build_filter` itself, so it reads the same fields with the same conditions as
    the stores do; the Edge adapter uses it to keep remembered counts right as points arrive.
    """

    def match(key: str, value: str | int) -> PayloadTest:
        return lambda _pid, payload: _holds(payload.get(key), value)

    def match_any(key: str, values: list[str]) -> PayloadTest:
        return lambda _pid, payload: any(_holds(payload.get(key), v) for v in values)

    def has_id(ids: list[str]) -> PayloadTest:
        wanted = frozenset(ids)
        return lambda pid, _payload: pid in wanted

    def combine(must: list[PayloadTest] | None, must_not: list[PayloadTest] | None) -> PayloadTest:
        def test(pid: str, payload: Mapping[str, Any]) -> bool:
            return all(c(pid, payload) for c in must or ()) and not any(
                c(pid, payload) for c in must_not or ()
            )

        return test

    built = build_filter(where, FilterTerms(match, match_any, has_id, combine))
    return built if built is not None else (lambda _pid, _payload: True)
