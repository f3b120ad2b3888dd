"""Translation of `PointFilter`s, ids and sparse vectors into qdrant-edge's types."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from qdrant_edge import FieldCondition, Filter, HasIdCondition, MatchAny, MatchValue
from qdrant_edge import SparseVector as EdgeSparseVector

from memvault.index.base import PointFilter, SparseVector, canonical_point_id

if TYPE_CHECKING:
    from qdrant_edge import PointId


def edge_filter(where: PointFilter) -> Filter | None:
    """Translate a `PointFilter` into an edge `Filter`; `None` when it has no condition.

    A filter without id lists (a search's scope filter: the same for every search of a
    caller, and built for its dense and its sparse query) is translated once and reused; the
    engine only reads it.
    """
    if where.only_ids or where.exclude_ids:
        return _translate(where)
    return _translate_scope(where)


@functools.lru_cache(maxsize=1024)
def _translate_scope(where: PointFilter) -> Filter | None:
    return _translate(where)


def _translate(where: PointFilter) -> Filter | None:
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


def point_ids(ids: Sequence[str]) -> list[PointId]:
    """Canonical UUID strings, typed as the binding wants them."""
    return [canonical_point_id(i) for i in ids]


def edge_sparse(vector: SparseVector) -> EdgeSparseVector:
    """The binding's sparse vector, with plain `int` indices and `float` values."""
    return EdgeSparseVector(
        indices=[int(i) for i in vector.indices], values=[float(v) for v in vector.values]
    )
