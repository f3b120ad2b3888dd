"""Hybrid retrieval inside the caller's scopes: dense + keyed BM25 fused by scores,
heat with time decay, and a gated 2-hop walk over note links.

Modes: `dense`, `sparse` (BM25 only), `hybrid` (both, fused by scores and re-ranked: see
`memvault.vault.ranking`; RRF on request), `full` (hybrid + heat + graph).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Literal

from memvault.embed.cache import PendingQuery
from memvault.errors import InvalidRequest
from memvault.index.base import Hit, PointFilter
from memvault.store.models import NoteRow
from memvault.store.records import NoteRecord
from memvault.text import SparseEncoder, heat_boost
from memvault.vault.links import linked_ids
from memvault.vault.notes import SearchHit
from memvault.vault.ranking import FUSION_METHODS, Fusion, search_fused
from memvault.vault.readable_idf import weigh_by_readable_idf
from memvault.vault.relations import Timeline, apply_timeline
from memvault.vault.rerank import pool_reranker

if TYPE_CHECKING:
    from memvault.vault.scoped_reads import ScopedReads

SearchMode = Literal["dense", "sparse", "hybrid", "full"]
SEARCH_MODES: tuple[SearchMode, ...] = ("dense", "sparse", "hybrid", "full")

GRAPH_HOPS = 2
GRAPH_MAX_EXTRA = 8
HEAT_CANDIDATES = 3
"""`full` mode fetches limit x this many fused candidates so heat can reorder them."""

GRAPH_GATE_BY_MODEL: dict[str, float] = {
    # Cosine of query vs an admitted neighbour. The seed's 0.25 was set for
    # paraphrase-multilingual-MiniLM; models spread cosines differently. Each value is the point
    # that best separates LoCoMo evidence turns from random turns (Youden): about 3 in 4
    # evidence turns pass and 1 in 5 random ones (docs/retrieval.md).
    "use-m3": 0.30,
    "minilm-l6-int8": 0.35,
    "e5-small-q4": 0.81,
}
DEFAULT_GRAPH_GATE = 0.25


FUSION_BY_MODEL: dict[str, Fusion] = {
    # Chosen on LoCoMo conversations 0-4 (the best sum of overall and multi-hop R@10 over a
    # grid) and confirmed on 5-9: `bench.locomo_tune`, docs/retrieval.md. The dense share of
    # the convex combination, the predecessor's and successor's shares, and the date bonus.
    # Chinese queries (mostly Han): USE-m3's dense list is weaker still (CMRC dense R@1 .70 vs
    # BM25 .96), and the English share .4 cost R@1 .959 -> .941; 0.1 and 0.2 both give .964.
    "use-m3": Fusion(dense_weight=0.4, dense_weight_han=0.2, prev=0.4, next=1.2, date=0.1),
    # e5-small (the quality option): same grid and rule; LoCoMo R@10 .795, multi-hop .443.
    "e5-small-q4": Fusion(dense_weight=0.4, prev=0.6, next=1.5, date=0.1),
}
DEFAULT_FUSION = Fusion()


def fusion_for(model_id: str, method: str | None = None) -> Fusion:
    """The hybrid fusion settings for an embedding model; `method` overrides score vs rrf."""
    if method is not None and method not in FUSION_METHODS:
        raise InvalidRequest(f"fusion must be one of {', '.join(FUSION_METHODS)}")
    fusion = FUSION_BY_MODEL.get(model_id, DEFAULT_FUSION)
    if method is None or method == fusion.method:
        return fusion
    return replace(fusion, method="rrf" if method == "rrf" else "score")


def graph_gate(model_id: str) -> float:
    """The graph walk's relevance threshold for an embedding model."""
    return GRAPH_GATE_BY_MODEL.get(model_id, DEFAULT_GRAPH_GATE)


class HybridRetriever:
    """Runs one search for a scoped view. Every store query carries the view's scope filter."""

    def __init__(self, view: ScopedReads) -> None:
        self._view = view
        self._parts = view.vault.parts
        self._as_of: float | None = None
        self._history = False

    def search(
        self,
        query: str,
        limit: int,
        topics: Sequence[str] | None,
        mode: str,
        fusion_method: str | None = None,
        *,
        as_of: float | None = None,
        include_history: bool = False,
    ) -> list[SearchHit]:
        """Search; by default only current notes (`memvault.vault.relations`): `as_of`, what
        was valid then; `include_history`, superseded and invalidated notes too."""
        if mode not in SEARCH_MODES:
            raise InvalidRequest(f"mode must be one of {', '.join(SEARCH_MODES)}")
        self._as_of, self._history = as_of, include_history
        with SEARCHES.entered() as running:
            return self._search(query, limit, topics, mode, fusion_method, alone=running == 1)

    def _search(
        self,
        query: str,
        limit: int,
        topics: Sequence[str] | None,
        mode: str,
        fusion_method: str | None,
        alone: bool,
    ) -> list[SearchHit]:
        scope = self._view.scope
        namespace = self._view.namespace
        where = self._view.point_filter(topics)
        embedder = self._parts.embedder
        index = self._parts.index
        fetch = limit * HEAT_CANDIDATES if mode == "full" else limit
        # The query vector is asked for first and taken last: with the model in its own process
        # (`EMBED_PROCESS`), the BM25 encoding and search below run while it embeds, and a full
        # search reads its BM25 candidates' records meanwhile (`_RowsAhead`) when it is the
        # process's only search: with others running, the wait is not idle (they use the GIL),
        # and reading ahead costs more CPU than reading after fusion.
        pending = embedder.begin_query(scope, query) if mode != "sparse" else None
        dense = _QueryVector(pending) if pending is not None else None
        ahead = (
            _RowsAhead(self._view)
            if alone and mode == "full" and pending and pending.elsewhere
            else None
        )
        sparse = (
            weigh_by_readable_idf(
                index,
                namespace,
                where,
                SparseEncoder(self._parts.keyring.index_key(scope.tenant).token_id).encode_query(
                    query
                ),
            )
            if mode != "dense"
            else None
        )
        if mode == "dense" or (sparse is not None and not sparse.indices and dense is not None):
            assert dense is not None
            hits = index.search_dense(namespace, dense.get(), where, fetch)
        elif mode == "sparse":
            assert sparse is not None
            hits = index.search_sparse(namespace, sparse, where, fetch) if sparse.indices else []
        else:
            assert dense is not None and sparse is not None
            fusion = fusion_for(embedder.model_id, fusion_method).for_query(query)
            ranges = query_ranges(query, self._parts.clock()) if fusion.date else []
            hits = search_fused(
                index,
                namespace,
                dense.get,
                sparse,
                where,
                fetch,
                fusion,
                ranges,
                meanwhile=ahead.read if ahead else None,
                reorder=pool_reranker(self._view, query, embedder.model_id),
            )
        self._view.check_hits(hits)
        timeline = Timeline.load(self._view, [h.id for h in hits])
        hits = timeline.resolve(hits, self._as_of, self._history)
        if mode == "full":
            results = self._full(hits, limit, dense.get() if dense else [], where, ahead)
        else:
            results = self._view.hydrate(hits)
        results = apply_timeline(self._view, results, timeline, self._as_of, self._history)
        self._parts.retrievals.record(scope.tenant, [r.note.id for r in results])
        return results[: limit + GRAPH_MAX_EXTRA]

    def _full(
        self,
        hits: Sequence[Hit],
        limit: int,
        dense: Sequence[float],
        where: PointFilter,
        ahead: _RowsAhead | None = None,
    ) -> list[SearchHit]:
        """Heat and the graph walk; decrypts only what is returned.

        One statement on the driver loads the fused candidates' records (their heat fields
        ride along) and whether each has links; heat reorders them and only the top `limit`
        are decrypted. With `ahead`, most records were read while the query was embedded, and
        the statement asks only for the rest. When some of the top have links, the walk costs
        one statement per hop in one transaction, each returning the readable, live rows of the
        linked notes, so the admitted ones need no second read.
        """
        view = self._view
        view.check_hits(hits)
        if not hits:
            return []
        ids = [h.id for h in hits]
        rows = ahead.records(ids) if ahead else view.live_records(ids, with_links=True)
        ranked = reheat(hits, rows, self._parts.clock())[:limit]
        top = [row.id for row, _ in ranked]
        frontier = [i for i in top if rows[i].has_links]
        hop_of: dict[str, int] = {}
        reached: dict[str, NoteRow] = {}
        if dense and frontier:
            with self._parts.db.session(view.scope.tenant) as sess:
                hop_of, reached = self._walk(sess, top, frontier)
        results = [SearchHit(view.note_of(row), score) for row, score in ranked]
        if hop_of:
            admitted = self._gate(hop_of, dense, where)
            view.check_hits(admitted)
            results += [SearchHit(view.note_of(reached[h.id]), h.score, "graph") for h in admitted]
        return results

    def _walk(
        self, sess: Any, start: list[str], frontier: list[str]
    ) -> tuple[dict[str, int], dict[str, NoteRow]]:
        """Breadth-first over links up to 2 hops from `start`: each reached id's hop, and its row.

        `frontier` is the part of `start` that has links at all: empty, and no hop statement
        runs. The walk passes only through notes the caller may read: an unreadable note is
        neither admitted nor a bridge to its own neighbours.
        """
        scope = self._view.scope
        seen = set(start)
        hop_of: dict[str, int] = {}
        reached: dict[str, NoteRow] = {}
        for hop in range(1, GRAPH_HOPS + 1):
            if not frontier:
                break
            linked = linked_ids(scope.tenant, scope.user, frontier)
            found = {k: r for k, r in self._view.live_rows(sess, linked).items() if k not in seen}
            if not found:
                break
            frontier = sorted(found)
            seen.update(frontier)
            reached.update(found)
            hop_of.update(dict.fromkeys(frontier, hop))
        return hop_of, reached

    def _gate(
        self, hop_of: dict[str, int], dense: Sequence[float], where: PointFilter
    ) -> list[Hit]:
        """Admit at most 8 reached notes whose cosine to the query passes the model's gate:
        nearer hops first, then the more similar."""
        candidates = list(hop_of)
        gate = graph_gate(self._parts.embedder.model_id)
        gated = self._parts.index.search_dense(
            self._view.namespace, dense, gate_filter(where, candidates), len(candidates)
        )
        passing = [h for h in gated if h.score >= gate and h.id in hop_of]
        passing.sort(key=lambda h: (hop_of.get(h.id, GRAPH_HOPS + 1), -h.score))
        return passing[:GRAPH_MAX_EXTRA]


def gate_filter(where: PointFilter, candidates: Sequence[str]) -> PointFilter:
    """The graph gate's filter: the search's scope (user, readers, topics; live points only)
    narrowed to the notes the walk reached."""
    return PointFilter(
        user_id=where.user_id,
        readers_any=where.readers_any,
        active_only=True,
        topic_tags=where.topic_tags,
        only_ids=tuple(candidates),
    )


class InFlight:
    """How many searches this process is running now (its GIL is what they share)."""

    def __init__(self) -> None:
        self._count = 0
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def entered(self) -> Iterator[int]:
        """Count one more search while the block runs; gives the count, this one included."""
        with self._lock:
            self._count += 1
            count = self._count
        try:
            yield count
        finally:
            with self._lock:
                self._count -= 1


SEARCHES = InFlight()
"""The process's searches in flight: a full search reads its rows ahead only when alone."""


class _RowsAhead:
    """A full search's records, read ahead: while the embedding process computes the query
    vector, the records of every BM25 candidate are read (the fused candidates are all among
    them in most searches), so after fusion only the dense list's newcomers, if any, cost a
    statement.

    Only when the vector is computed in another process (`PendingQuery.elsewhere`), and only
    for a lone search (`SEARCHES`): with the model in process there is no wait to fill, and
    under concurrent searches the wait is not idle, while reading all 50 BM25 candidates'
    records costs about 0.4 ms more CPU than reading the fused ones after (docs/performance.md).
    """

    __slots__ = ("_asked", "_found", "_view")

    def __init__(self, view: ScopedReads) -> None:
        self._view = view
        self._asked: set[str] = set()
        self._found: dict[str, NoteRecord] = {}

    def read(self, sparse_hits: Sequence[Hit]) -> None:
        """Read the records of the BM25 candidates (after their exit check)."""
        hits = sparse_hits
        self._view.check_hits(hits)
        ids = [h.id for h in hits]
        self._found = self._view.live_records(ids, with_links=True)
        self._asked = set(ids)

    def records(self, ids: Sequence[str]) -> dict[str, NoteRecord]:
        """`live_records(ids, with_links=True)`, reading only the ids not read ahead."""
        rows = {i: self._found[i] for i in ids if i in self._found}
        rest = [i for i in ids if i not in self._asked]
        rows.update(self._view.live_records(rest, with_links=True))
        return rows


class _QueryVector:
    """A query's vector, asked for once (`CachedEmbedder.begin_query`), as a list of floats."""

    __slots__ = ("_pending", "_vector")

    def __init__(self, pending: PendingQuery) -> None:
        self._pending = pending
        self._vector: list[float] | None = None

    def get(self) -> list[float]:
        if self._vector is None:
            self._vector = self._pending().tolist()
        return self._vector


def query_ranges(query: str, now: float) -> list[tuple[float, float]]:
    """The time ranges a query names, as (start, end) epoch seconds."""
    from memvault.text.dates import parse_time_ranges

    return [(r.start, r.end) for r in parse_time_ranges(query, now)]


def reheat(
    hits: Sequence[Hit], rows: Mapping[str, NoteRecord], now: float
) -> list[tuple[NoteRecord, float]]:
    """The fused hits that have a live row, each with its score times its heat boost, best
    first (a stable sort: ties keep the store's order). Heat reads the row's retrieval count,
    last access and type, so it needs no decryption."""
    boosted = []
    for hit in hits:
        row = rows.get(hit.id)
        if row is None:  # derived index lagging the source of truth: skip, never widen
            continue
        boost = heat_boost(
            row.retrieval_count,
            (now - row.last_accessed) / 86_400,
            note_type="knowledge" if row.note_type == "knowledge" else "memory",
        )
        boosted.append((row, hit.score * boost))
    return sorted(boosted, key=lambda pair: pair[1], reverse=True)
