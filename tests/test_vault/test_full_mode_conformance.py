"""Full-mode ranking is what it was before issue 10 (item 3), over the fused candidates.

`ReferenceRetriever` keeps the previous implementation: hydrate (decrypt) every fused
candidate from ORM rows read in a session, multiply each score by `heat_boost` of the
decrypted note, sort, then walk the links with one neighbours query and one readable-ids query
per hop, gate by cosine and hydrate the admitted notes. On a seeded corpus with links (some
through unreadable bridges), retrieval counts, access ages and knowledge notes, the
production retriever must return the same notes, in the same order, with the same scores
and the same `via`, for every query and limit.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

import pytest
from sqlalchemy import update

from memvault.errors import NotFound, PermissionDenied
from memvault.index.base import Hit, PointFilter
from memvault.runtime.factory import Services
from memvault.scope import Scope
from memvault.store.models import NoteRow
from memvault.text import SparseEncoder, heat_boost
from memvault.vault.links import neighbours
from memvault.vault.notes import SearchHit
from memvault.vault.ranking import search_fused
from memvault.vault.readable_idf import weigh_by_readable_idf
from memvault.vault.retrieve import (
    GRAPH_HOPS,
    GRAPH_MAX_EXTRA,
    HEAT_CANDIDATES,
    HybridRetriever,
    fusion_for,
    graph_gate,
    query_ranges,
)
from tests.conftest import ServicesFactory

NOW = 1_900_000_000.0
PEOPLE = ["Alice", "Bruno", "Chiara", "Dmitri", "Emeka", "Farah"]
THINGS = ["spare key", "bicycle", "passport", "guitar", "tax papers", "garden hose"]
PLACES = ["blue flower pot", "garage", "attic", "kitchen drawer", "car trunk", "shed"]
QUERIES = [
    "Where does Alice keep the spare key?",
    "Where is the bicycle?",
    "Who put the passport in the attic?",
    "What is in the kitchen drawer?",
    "Bruno guitar",
    "Where are the tax papers?",
    "garden hose shed",
    "Which things are in the car trunk?",
]


class ReferenceRetriever(HybridRetriever):
    """Full mode exactly as implemented before issue 10 (the reference formula)."""

    def search(
        self,
        query: str,
        limit: int,
        topics: Sequence[str] | None,
        mode: str,
        fusion_method: str | None = None,
    ) -> list[SearchHit]:
        scope = self._view.scope
        where = self._view.point_filter(topics)
        fetch = limit * HEAT_CANDIDATES
        dense = self._parts.embedder.embed_query(scope, query).tolist()
        token_id = self._parts.keyring.index_key(scope.tenant).token_id
        # BM25's query weights are IDF over the readable set since issue 32 (both sides alike).
        sparse = weigh_by_readable_idf(
            self._parts.index,
            self._view.namespace,
            where,
            SparseEncoder(token_id).encode_query(query),
        )
        if not sparse.indices:
            hits = self._parts.index.search_dense(self._view.namespace, dense, where, fetch)
        else:
            fusion = fusion_for(self._parts.embedder.model_id, fusion_method)
            ranges = query_ranges(query, self._parts.clock())
            hits = search_fused(
                self._parts.index, self._view.namespace, dense, sparse, where, fetch, fusion, ranges
            )
        results = self._orm_hydrate(hits)
        now = self._parts.clock()
        boosted = [
            SearchHit(
                r.note,
                r.score
                * heat_boost(
                    r.note.retrieval_count,
                    (now - r.note.last_accessed) / 86_400,
                    note_type=r.note.note_type,
                ),
                r.via,
            )
            for r in results
        ]
        results = sorted(boosted, key=lambda r: r.score, reverse=True)[:limit]
        results += self._reference_expand(results, dense, where)
        return results[: limit + GRAPH_MAX_EXTRA]

    def _reference_expand(
        self, results: list[SearchHit], dense: Sequence[float], where: PointFilter
    ) -> list[SearchHit]:
        if not results:
            return []
        scope = self._view.scope
        seen = {r.note.id for r in results}
        frontier = list(seen)
        hop_of: dict[str, int] = {}
        for hop in range(1, GRAPH_HOPS + 1):
            with self._parts.db.session(scope.tenant) as sess:
                found = neighbours(sess, scope.tenant, scope.user, frontier) - seen
            seen.update(found)
            found = self._view.readable_ids(sorted(found))
            if not found:
                break
            frontier = sorted(found)
            hop_of.update(dict.fromkeys(frontier, hop))
        candidates = list(hop_of)
        if not candidates:
            return []
        gated = self._parts.index.search_dense(
            self._view.namespace,
            dense,
            PointFilter(
                user_id=where.user_id,
                readers_any=where.readers_any,
                active_only=True,
                topic_tags=where.topic_tags,
                only_ids=tuple(candidates),
            ),
            len(candidates),
        )
        gate = graph_gate(self._parts.embedder.model_id)
        passing = [h for h in gated if h.score >= gate]
        passing.sort(key=lambda h: (hop_of.get(h.id, GRAPH_HOPS + 1), -h.score))
        return self._orm_hydrate(passing[:GRAPH_MAX_EXTRA], via="graph")

    def _orm_hydrate(self, hits: Sequence[Hit], via: str = "search") -> list[SearchHit]:
        """Hydration as it was: the readable live rows as ORM objects in a session."""
        with self._parts.db.session(self._view.scope.tenant) as sess:
            rows = self._view.live_rows(sess, [h.id for h in hits])
        return [
            SearchHit(self._view.note_of(rows[h.id]), h.score, via) for h in hits if h.id in rows
        ]


def seed_corpus(services: Services, rng: random.Random) -> None:
    """Notes of two agents of one user (some unreadable by the searcher), links among them,
    and varied heat: retrieval counts up to 3000, ages from hours to 90 days, knowledge notes."""
    services.tenants.create("t1")
    planner = services.vault.scoped(Scope("t1", "alice", "planner"))
    coder = services.vault.scoped(Scope("t1", "alice", "coder"))
    ids: list[str] = []
    for i in range(72):
        text = (
            f"{rng.choice(PEOPLE)} put the {rng.choice(THINGS)} in the {rng.choice(PLACES)} "
            f"on day {i}"
        )
        note_type, topics = ("knowledge", ["household"]) if i % 7 == 0 else ("memory", None)
        if i % 3 == 0:  # the coder's: readable by the planner two times in three
            readers = ["planner"] if i % 9 else []
            ids.append(coder.add(text, readers=readers, note_type=note_type, topics=topics).id)
        else:
            ids.append(planner.add(text, readers=["coder"], note_type=note_type, topics=topics).id)
    for _ in range(90):
        a, b = rng.sample(ids, 2)
        for writer in (coder, planner):  # whichever may write `a` and read `b`
            try:
                writer.link(a, b)
                break
            except (NotFound, PermissionDenied):
                continue
    with services.db.session("t1") as sess:
        for note_id in ids:
            sess.execute(
                update(NoteRow)
                .where(NoteRow.tenant_id == "t1", NoteRow.id == note_id)
                .values(
                    retrieval_count=rng.choice([0, 0, 1, 5, 40, 400, 3000]),
                    last_accessed=NOW - rng.choice([0.1, 0.9, 1.5, 4, 30, 90]) * 86_400,
                )
            )


def ranked(hits: list[SearchHit]) -> list[tuple[str, str, float]]:
    return [(h.note.id, h.via, h.score) for h in hits]


@pytest.mark.parametrize("seed", [3, 11])
def test_full_mode_orders_results_as_the_reference_formula(
    make_services: ServicesFactory,
    backend: str,
    seed: int,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    services = make_services(backend)
    seed_corpus(services, random.Random(seed))
    parts = services.vault.parts
    monkeypatch.setattr(parts, "clock", lambda: NOW)  # heat ages fixed between the two runs
    monkeypatch.setattr(parts.retrievals, "record", lambda *a, **k: None)  # counts fixed too
    # The formula is compared without the re-ranking stage that follows fusion (it came later,
    # and tests/test_vault/test_rerank.py checks it over this retriever).
    monkeypatch.setattr("memvault.vault.retrieve.pool_reranker", lambda *a, **k: None)
    view = services.vault.scoped(Scope("t1", "alice", "planner"))
    reference = ReferenceRetriever(view)
    reordered = graph_admitted = 0
    for query in QUERIES:
        for limit in (1, 3, 5, 10):
            expected = reference.search(query, limit, None, "full")
            got = HybridRetriever(view).search(query, limit, None, "full")
            assert ranked(got) == ranked(expected), (query, limit)
            assert [h.note.text for h in got] == [h.note.text for h in expected]
            hybrid = [h.note.id for h in view.search(query, limit=limit, mode="hybrid")]
            reordered += hybrid != [h.note.id for h in got if h.via == "search"]
            graph_admitted += any(h.via == "graph" for h in got)
    # The comparison is not vacuous: heat reorders some lists and the walk admits notes.
    assert reordered > 0
    assert graph_admitted > 0
