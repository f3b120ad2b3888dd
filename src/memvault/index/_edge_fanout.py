"""Searches without a `user_id` over several partitions of one namespace, merged in Python.

Every query the vault sends names a user, and then exactly one partition answers in the engine
(fusion included). Operations tooling may search a whole namespace: then each partition answers
its own top candidates and they are merged here. Dense scores (cosine) merge exactly. Sparse
scores carry each partition's own IDF, so a multi-partition sparse ranking is per-user IDF, not
namespace IDF. Hybrid search merges the dense and the sparse candidate lists first, then fuses
them by the same weighted RRF the engine applies (`1 / (rank / weight + k - 1)`, rank from 1).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from qdrant_edge import ScoredPoint

from memvault.index.base import Hit


def hit(point: ScoredPoint) -> Hit:
    """A `Hit` from an engine result: string id, float score, a copy of the payload."""
    return Hit(id=str(point.id), score=float(point.score), payload=dict(point.payload or {}))


def merge(lists: Iterable[Sequence[ScoredPoint]], limit: int) -> list[Hit]:
    """The best `limit` hits of several partitions' results, best first (stable on ties)."""
    hits = [hit(p) for points in lists for p in points]
    hits.sort(key=lambda h: h.score, reverse=True)
    return hits[: max(limit, 0)]


def fuse_rrf(
    dense: Sequence[Hit], sparse: Sequence[Hit], weights: tuple[float, float], k: int, limit: int
) -> list[Hit]:
    """Weighted RRF of two ranked lists: rank `r` (from 1) of weight `w` adds `1/(r/w + k - 1)`."""
    scores: dict[str, float] = {}
    payloads: dict[str, dict] = {}
    for weight, ranked in zip(weights, (dense, sparse), strict=True):
        if weight <= 0:
            continue
        for rank, h in enumerate(ranked, start=1):
            scores[h.id] = scores.get(h.id, 0.0) + 1.0 / (rank / weight + k - 1)
            payloads.setdefault(h.id, h.payload)
    ordered = sorted(scores.items(), key=lambda item: item[1], reverse=True)
    return [Hit(id=i, score=s, payload=payloads[i]) for i, s in ordered[: max(limit, 0)]]
