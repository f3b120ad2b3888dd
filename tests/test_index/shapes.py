"""Small hand-made points (dimension 8) for the index tests."""

from __future__ import annotations

import math
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from memvault.index import IndexPoint, SparseVector

DIM = 8


def new_id() -> str:
    return str(uuid.uuid4())


def axis(i: int, weight: float = 1.0) -> list[float]:
    """The unit vector along axis `i`, scaled by `weight`."""
    v = [0.0] * DIM
    v[i] = weight
    return v


def mix(*parts: tuple[int, float]) -> list[float]:
    """A unit vector with the given (axis, weight) components."""
    v = [0.0] * DIM
    for i, w in parts:
        v[i] += w
    norm = math.sqrt(sum(x * x for x in v))
    return [x / norm for x in v]


def sparse(weights: Mapping[int, float]) -> SparseVector:
    items = sorted(weights.items())
    return SparseVector(indices=tuple(i for i, _ in items), values=tuple(w for _, w in items))


def payload(user: str = "u1", agent: str = "a1", **extra: Any) -> dict[str, Any]:
    """A payload like the vault writes: ids, int flags, blind tags; never text."""
    base: dict[str, Any] = {
        "user_id": user,
        "agent_id": agent,
        "readers": [agent],
        "is_active": 1,
        "note_type": "fact",
        "topic_tags": [],
        "created_at": 1_700_000_000,
        "model": "test-8d",
    }
    base.update(extra)
    return base


def point(
    dense: Sequence[float],
    *,
    pid: str | None = None,
    words: Mapping[int, float] | None = None,
    **fields: Any,
) -> IndexPoint:
    body = payload(**fields)
    if words is not None:  # as the vault writes it: the sparse vector's token ids (readable IDF)
        body.setdefault("terms", sorted(words))
    return IndexPoint(
        id=pid or new_id(),
        dense=list(dense),
        payload=body,
        sparse=sparse(words) if words is not None else None,
    )
