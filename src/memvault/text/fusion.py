"""`rrf`: Reciprocal Rank Fusion, computed the way the vector store computes it."""

from __future__ import annotations

from collections.abc import Sequence

from memvault.text.vectors import RRF_K


def rrf(rankings: Sequence[Sequence[str]], k: int = RRF_K) -> list[tuple[str, float]]:
    """Fuse rankings (ids, best first) into one: score(id) = Σ 1/(k + position).

    `position` is 0-based, as in Qdrant's fusion (`1/(k + pos)`), so this reproduces the
    store's in-engine order and explains it. An id repeated within one ranking counts at its
    first position only. Ties keep the order in which ids were first seen (ranking by
    ranking), so the result is deterministic. Returns (id, score) best first.
    """
    if k < 1:
        raise ValueError("RRF k must be at least 1")
    scores: dict[str, float] = {}
    for ranking in rankings:
        seen: set[str] = set()
        for position, item in enumerate(ranking):
            if item in seen:
                continue
            seen.add(item)
            scores[item] = scores.get(item, 0.0) + 1.0 / (k + position)
    return sorted(scores.items(), key=lambda pair: pair[1], reverse=True)
