"""Translation of `PointFilter`s, sparse vectors and results to and from qdrant-client's types."""

from __future__ import annotations

from qdrant_client import models

from memvault.index.base import (
    FilterTerms,
    Hit,
    PointFilter,
    SparseVector,
    build_filter,
)


def payload_indexes() -> dict[str, models.PayloadSchemaParams | models.PayloadSchemaType]:
    """Payload fields indexed on a server. `user_id` is the tenant key inside a collection."""
    return {
        "user_id": models.KeywordIndexParams(type=models.KeywordIndexType.KEYWORD, is_tenant=True),
        "agent_id": models.PayloadSchemaType.KEYWORD,
        "readers": models.PayloadSchemaType.KEYWORD,
        "note_type": models.PayloadSchemaType.KEYWORD,
        "topic_tags": models.PayloadSchemaType.KEYWORD,
        "is_active": models.PayloadSchemaType.INTEGER,
        "terms": models.PayloadSchemaType.INTEGER,  # keyed token ids: readable-set IDF
    }


def qdrant_filter(where: PointFilter) -> models.Filter | None:
    """Translate a `PointFilter` into a qdrant-client `Filter`; `None` when it has no condition."""
    return build_filter(where, _QDRANT_TERMS)


def _match(key: str, value: str | int) -> models.Condition:
    return models.FieldCondition(key=key, match=models.MatchValue(value=value))


def _match_any(key: str, values: list[str]) -> models.Condition:
    return models.FieldCondition(key=key, match=models.MatchAny(any=values))


def _has_id(ids: list[str]) -> models.Condition:
    return models.HasIdCondition(has_id=[*ids])


def _combine(
    must: list[models.Condition] | None, must_not: list[models.Condition] | None
) -> models.Filter:
    return models.Filter(must=must, must_not=must_not)


_QDRANT_TERMS: FilterTerms[models.Condition, models.Filter] = FilterTerms(
    _match, _match_any, _has_id, _combine
)


def qdrant_sparse(vector: SparseVector) -> models.SparseVector:
    return models.SparseVector(
        indices=[int(i) for i in vector.indices], values=[float(v) for v in vector.values]
    )


def to_hit(point: models.ScoredPoint | models.Record, score: float | None = None) -> Hit:
    value = score if score is not None else float(getattr(point, "score", 0.0))
    return Hit(id=str(point.id), score=value, payload=dict(point.payload or {}))
