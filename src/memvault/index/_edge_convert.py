"""Translation of `PointFilter`s, ids and sparse vectors into qdrant-edge's types."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from qdrant_edge import FieldCondition, Filter, HasIdCondition, MatchAny, MatchValue
from qdrant_edge import SparseVector as EdgeSparseVector

from memvault.index.base import (
    FilterTerms,
    PointFilter,
    SparseVector,
    build_filter,
    canonical_point_id,
)

if TYPE_CHECKING:
    from qdrant_edge import PointId


def edge_filter(where: PointFilter) -> Filter | None:
    """Translate a `PointFilter` into an edge `Filter`; `None` when it has no condition.

    A filter without id lists (a search's scope filter: the same for every search of a
    caller, and built for its dense and its sparse query) is translated once and reused; the
    engine only reads it.
    """
    if where.only_ids or where.exclude_ids:
        return build_filter(where, _EDGE_TERMS)
    return _scope_filter(where)


@functools.lru_cache(maxsize=1024)
def _scope_filter(where: PointFilter) -> Filter | None:
    return build_filter(where, _EDGE_TERMS)


def _match(key: str, value: str | int) -> FieldCondition:
    return FieldCondition(key=key, match=MatchValue(value))


def _match_any(key: str, values: list[str]) -> FieldCondition:
    return FieldCondition(key=key, match=MatchAny(values))


def _has_id(ids: list[str]) -> HasIdCondition:
    return HasIdCondition(set(ids))  # the binding insists on a set here, not a list


def _combine(must: list[Any] | None, must_not: list[Any] | None) -> Filter:
    return Filter(must=must, must_not=must_not)


_EDGE_TERMS: FilterTerms[Any, Filter] = FilterTerms(_match, _match_any, _has_id, _combine)


def point_ids(ids: Sequence[str]) -> list[PointId]:
    """Canonical UUID strings, typed as the binding wants them."""
    return [canonical_point_id(i) for i in ids]


def edge_sparse(vector: SparseVector) -> EdgeSparseVector:
    """The binding's sparse vector, with plain `int` indices and `float` values."""
    return EdgeSparseVector(
        indices=[int(i) for i in vector.indices], values=[float(v) for v in vector.values]
    )
