"""Fusion by scores and the re-ranking of the fused candidates, from the index's own output.

`hybrid` retrieval prefetches the top `prefetch` dense and sparse (BM25) candidates, each with
the caller's scope filter inside the store, and ranks their union by a linear model of features
that need no SQL and no decryption:

- `bm25`: the BM25 score over the best BM25 score of the list (0 when absent from it);
- `dense`: the cosine, min-max normalised over the dense list (0 when absent);
- `prev` and `next`: the fused scores of the note's predecessor and successor in its session
  (the predecessor id rides in the point's payload, except for a note that stands alone:
  `memvault.text.standalone`). A successor is indexed with its predecessor's text, so a turn
  whose successor matches the query gains most;
- `date`: 1 when the note's event time falls in a time the query names ("in May 2023",
  "last week", 上个月), else 0.

Qdrant Edge fuses by RRF (weighted) or DBSF (unweighted) only, so the fusion runs here, over the
two scoped prefetches, on every adapter alike; RRF stays selectable (`method="rrf"`, inside the
store). Weights are per embedding model, chosen on LoCoMo conversations 0-4 and confirmed on
5-9 (docs/retrieval.md).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Literal

from memvault.index.base import RRF_K, Hit, PointFilter, SparseVector, VectorIndex

FusionMethod = Literal["score", "rrf"]
FUSION_METHODS: tuple[FusionMethod, ...] = ("score", "rrf")


@dataclass(frozen=True, slots=True)
class Fusion:
    """How dense and BM25 candidates become one ranking.

    `score`: `(1 - dense_weight) x bm25 + dense_weight x dense`, plus `prev x` the
    predecessor's and `next x` the successor's fused scores, plus `date` when the note's event
    time falls in a time the query names.
    `rrf`: the store's weighted RRF with constant `k` and weights (`dense_weight`, 1).
    """

    method: FusionMethod = "score"
    dense_weight: float = 0.3
    dense_weight_han: float | None = None
    """The dense share for a query written mostly in Han characters (None: `dense_weight`)."""
    prev: float = 0.0
    next: float = 0.0
    date: float = 0.0
    k: int = RRF_K
    prefetch: int = 50

    @property
    def rrf_weights(self) -> tuple[float, float]:
        return (self.dense_weight, 1.0)

    def for_query(self, query: str) -> Fusion:
        """These settings for `query`: its script may pick another dense share."""
        if self.dense_weight_han is None or not mostly_han(query):
            return self
        return replace(self, dense_weight=self.dense_weight_han)


def mostly_han(text: str) -> bool:
    """True when at least half of the letters of `text` are Han characters."""
    han = letters = 0
    for ch in text[:2_000]:
        if "\u4e00" <= ch <= "\u9fff" or "\u3400" <= ch <= "\u4dbf":
            han += 1
            letters += 1
        elif ch.isalpha():
            letters += 1
    return letters > 0 and han * 2 >= letters


@dataclass(frozen=True, slots=True)
class Scored:
    """A fused candidate: its hit (payload included) and its features."""

    hit: Hit
    bm25: float
    dense: float
    fused: float = 0.0
    score: float = 0.0


def fuse_scores(
    dense_hits: Sequence[Hit], sparse_hits: Sequence[Hit], dense_weight: float
) -> list[Scored]:
    """The convex combination of normalised BM25 and dense scores over both lists' union, best
    first (ties: BM25 list order, then dense list order)."""
    top_bm25 = max((h.score for h in sparse_hits), default=0.0)
    cosines = [h.score for h in dense_hits]
    low, high = (min(cosines), max(cosines)) if cosines else (0.0, 0.0)
    span = high - low
    features: dict[str, list[float]] = {}
    hits: dict[str, Hit] = {}
    for h in sparse_hits:
        hits.setdefault(h.id, h)
        features.setdefault(h.id, [0.0, 0.0])[0] = h.score / top_bm25 if top_bm25 > 0 else 0.0
    for h in dense_hits:
        hits.setdefault(h.id, h)
        features.setdefault(h.id, [0.0, 0.0])[1] = (h.score - low) / span if span > 0 else 1.0
    scored = [
        Scored(
            hits[i],
            bm25,
            dense,
            fused := (1.0 - dense_weight) * bm25 + dense_weight * dense,
            fused,
        )
        for i, (bm25, dense) in features.items()
    ]
    scored.sort(key=lambda s: s.score, reverse=True)  # stable: insertion order breaks ties
    return scored


def rerank(
    candidates: Sequence[Scored],
    fusion: Fusion,
    ranges: Sequence[tuple[float, float]] = (),
) -> list[Scored]:
    """Add the neighbour and date features to each candidate's fused score, best first."""
    fused = {c.hit.id: c.fused for c in candidates}
    following: dict[str, float] = {}
    for c in candidates:
        prev = c.hit.payload.get("prev")
        if isinstance(prev, str):
            following[prev] = max(following.get(prev, 0.0), c.fused)
    out = []
    for c in candidates:
        score = c.fused
        prev = c.hit.payload.get("prev")
        if fusion.prev and isinstance(prev, str):
            score += fusion.prev * fused.get(prev, 0.0)
        if fusion.next:
            score += fusion.next * following.get(c.hit.id, 0.0)
        if fusion.date and ranges:
            at = c.hit.payload.get("occurred_at")
            if isinstance(at, int | float) and any(lo <= at < hi for lo, hi in ranges):
                score += fusion.date
        out.append(Scored(c.hit, c.bm25, c.dense, c.fused, score))
    out.sort(key=lambda s: s.score, reverse=True)
    return out


def search_fused(
    index: VectorIndex,
    namespace: str,
    dense: Sequence[float] | Callable[[], Sequence[float]],
    sparse: SparseVector,
    where: PointFilter,
    limit: int,
    fusion: Fusion,
    ranges: Sequence[tuple[float, float]] = (),
    meanwhile: Callable[[Sequence[Hit]], None] | None = None,
    reorder: Callable[[list[Scored]], list[Scored]] | None = None,
) -> list[Hit]:
    """Hybrid search on any adapter: the two scoped prefetches, fused and re-ranked here
    (`score`), or the store's weighted RRF (`rrf`). Hits carry the final score.

    `dense` is the query vector, or a function giving it: the function is called after the
    BM25 prefetch, so a vector being computed elsewhere (the embedding process) is awaited only
    then. `meanwhile`, when given, is called with the BM25 candidates between the two (`score`
    fusion only): work on them that fills the wait for the vector. `reorder`, when given,
    re-ranks the whole fused pool before it is cut to `limit` (`memvault.vault.rerank`).
    """
    prefetch = max(fusion.prefetch, limit)
    if fusion.method == "rrf":
        return index.search_hybrid(
            namespace,
            _vector(dense),
            sparse,
            where,
            limit,
            prefetch=prefetch,
            weights=fusion.rrf_weights,
            rrf_k=fusion.k,
        )
    sparse_hits = index.search_sparse(namespace, sparse, where, prefetch) if sparse.indices else []
    if meanwhile is not None:
        meanwhile(sparse_hits)
    dense_hits = index.search_dense(namespace, _vector(dense), where, prefetch)
    ranked = rerank(fuse_scores(dense_hits, sparse_hits, fusion.dense_weight), fusion, ranges)
    if reorder is not None:
        ranked = reorder(ranked)
    return [Hit(s.hit.id, s.score, s.hit.payload) for s in ranked[:limit]]


def _vector(dense: Sequence[float] | Callable[[], Sequence[float]]) -> Sequence[float]:
    return dense() if callable(dense) else dense
