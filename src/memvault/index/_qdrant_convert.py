"""Translation of `PointFilter`s, sparse vectors and results to and from qdrant-client's types."""

from __future__ import annotations

from qdrant_client import models

from memvault.index.base import Hit, PointFilter, SparseVector, canonical_point_id


def payload_indexes() -> dict[str, models.PayloadSchemaParams | models.PayloadSchemaType]:
    """Payload fields indexed on a server. `user_id` is the tenant key inside a collection."""
    return {
        "user_id": models.KeywordIndexParams(type=models.KeywordIndexType.KEYWORD, is_tenant=True),
        "agent_id": models.PayloadSchemaType.KEYWORD,
        "readers": models.PayloadSchemaType.KEYWORD,
        "note_type": models.PayloadSchemaType.KEYWORD,
        "topic_tags": models.PayloadSchemaType.KEYWORD,
        "is_active": models.PayloadSchemaType.INTEGER,
    }


def qdrant_filter(where: PointFilter) -> models.Filter | None:
    """Translate a `PointFilter` into a qdrant-client `Filter`; `None` when it has no condition."""
    must: list[models.Condition] = []
    if where.user_id is not None:
        must.append(
            models.FieldCondition(key="user_id", match=models.MatchValue(value=where.user_id))
        )
    if where.agent_id is not None:
        must.append(
            models.FieldCondition(key="agent_id", match=models.MatchValue(value=where.agent_id))
        )
    if where.readers_any:
        must.append(
            models.FieldCondition(key="readers", match=models.MatchAny(any=list(where.readers_any)))
        )
    if where.active_only:
        must.append(models.FieldCondition(key="is_active", match=models.MatchValue(value=1)))
    if where.note_type is not None:
        must.append(
            models.FieldCondition(key="note_type", match=models.MatchValue(value=where.note_type))
        )
    must.extend(
        models.FieldCondition(key="topic_tags", match=models.MatchValue(value=t))
        for t in where.topic_tags
    )
    if where.only_ids:
        must.append(models.HasIdCondition(has_id=[canonical_point_id(i) for i in where.only_ids]))
    must_not: list[models.Condition] = []
    if where.exclude_ids:
        must_not.append(
            models.HasIdCondition(has_id=[canonical_point_id(i) for i in where.exclude_ids])
        )
    if not must and not must_not:
        return None
    return models.Filter(must=must or None, must_not=must_not or None)


def qdrant_sparse(vector: SparseVector) -> models.SparseVector:
    return models.SparseVector(
        indices=[int(i) for i in vector.indices], values=[float(v) for v in vector.values]
    )


def to_hit(point: models.ScoredPoint | models.Record, score: float | None = None) -> Hit:
    value = score if score is not None else float(getattr(point, "score", 0.0))
    return Hit(id=str(point.id), score=value, payload=dict(point.payload or {}))
