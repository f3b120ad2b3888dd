"""Where full-mode search spends its time, and what it costs next to dense and hybrid.

One tenant holds `--users` users with `--notes` notes each, `--links` links per user and
retrieval counts spread over a third of the notes (last accessed up to 60 days ago). Every
query runs, interleaved in rotating order: dense, hybrid, full (today's `HybridRetriever`) and
`full-legacy` (the implementation before issue 10, kept below verbatim as `LegacyRetriever`),
so the before/after ratio comes from one run on one corpus. Each query is embedded once
before its four searches (timed apart), so the rows compare the search paths themselves.
`--profile` adds a cProfile of each full variant.

Run: .venv/bin/python -m bench.search_profile [--users 10] [--notes 1000] [--queries 300]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import random
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from sqlalchemy import update

from bench._harness import Latency, TextMaker, open_vault, peak_rss_mib
from memvault.embed import make_embedder
from memvault.index.base import PointFilter
from memvault.runtime.factory import Services
from memvault.scope import Scope
from memvault.store.models import NoteRow
from memvault.text import SparseEncoder, heat_boost
from memvault.vault.links import neighbours
from memvault.vault.notes import SearchHit
from memvault.vault.retrieve import (
    GRAPH_HOPS,
    GRAPH_MAX_EXTRA,
    HEAT_CANDIDATES,
    HybridRetriever,
    graph_gate,
)
from memvault.vault.service import NoteDraft, ScopedVault

TENANT = "bench"
AGENT = "a1"


class LegacyRetriever(HybridRetriever):
    """Full mode as it was before issue 10: hydrate (decrypt) 3 x limit candidates, reheat
    the decrypted notes, then a walk with a links query and a readable-ids query per hop, a
    gate search and a second hydration. Kept for the before/after timing only."""

    def search(
        self, query: str, limit: int, topics: Sequence[str] | None, mode: str
    ) -> list[SearchHit]:
        assert mode == "full"
        scope = self._view.scope
        where = self._view.point_filter(topics)
        embedder = self._parts.embedder
        fetch = limit * HEAT_CANDIDATES
        dense = embedder.embed_query(scope, query).tolist()
        token_id = self._parts.keyring.index_key(scope.tenant).token_id
        sparse = SparseEncoder(token_id).encode_query(query)
        if not sparse.indices:
            hits = self._parts.index.search_dense(self._view.namespace, dense, where, fetch)
        else:
            fusion = self._fusion()
            hits = self._parts.index.search_hybrid(
                self._view.namespace,
                dense,
                sparse,
                where,
                fetch,
                prefetch=max(fetch, 50),
                weights=fusion.weights,
                rrf_k=fusion.k,
            )
        results = self._view.hydrate(hits)
        results = self._legacy_reheat(results)[:limit]
        results += self._legacy_expand(results, dense, where)
        self._parts.retrievals.record(scope.tenant, [r.note.id for r in results])
        return results[: limit + GRAPH_MAX_EXTRA]

    def _fusion(self):  # type: ignore[no-untyped-def]
        from memvault.vault.retrieve import fusion_for

        return fusion_for(self._parts.embedder.model_id)

    def _legacy_reheat(self, results: list[SearchHit]) -> list[SearchHit]:
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
        return sorted(boosted, key=lambda r: r.score, reverse=True)

    def _legacy_expand(
        self, results: list[SearchHit], dense: Sequence[float], where: PointFilter
    ) -> list[SearchHit]:
        if not results or not dense:
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
        passing = [h for h in gated if h.score >= graph_gate(self._parts.embedder.model_id)]
        passing.sort(key=lambda h: (hop_of.get(h.id, GRAPH_HOPS + 1), -h.score))
        return self._view.hydrate(passing[:GRAPH_MAX_EXTRA], via="graph")


def build(services: Services, users: int, notes: int, links: int, seed: int) -> list[str]:
    """Fill the tenant; returns the user ids."""
    rng = random.Random(seed)
    maker = TextMaker(seed)
    services.tenants.create(TENANT)
    names = [f"u{i}" for i in range(users)]
    now = time.time()
    for user in names:
        view = services.vault.scoped(Scope(TENANT, user, AGENT))
        ids: list[str] = []
        for start in range(0, notes, 100):
            batch = [NoteDraft(maker.memory()) for _ in range(min(100, notes - start))]
            ids += [n.id for n in view.add_many(batch)]
        for _ in range(links):
            a, b = rng.sample(ids, 2)
            view.link(a, b)
        with services.db.session(TENANT) as sess:
            for note_id in rng.sample(ids, len(ids) // 3):
                sess.execute(
                    update(NoteRow)
                    .where(NoteRow.tenant_id == TENANT, NoteRow.id == note_id)
                    .values(
                        retrieval_count=rng.randint(1, 40),
                        last_accessed=now - rng.uniform(0, 60 * 86_400),
                    )
                )
    return names


def runners(view: ScopedVault) -> dict[str, Callable[[str], object]]:
    legacy = LegacyRetriever(view)
    return {
        "dense": lambda q: view.search(q, limit=5, mode="dense"),
        "hybrid": lambda q: view.search(q, limit=5, mode="hybrid"),
        "full": lambda q: view.search(q, limit=5, mode="full"),
        "full-legacy": lambda q: legacy.search(q, 5, None, "full"),
    }


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=10)
    parser.add_argument("--notes", type=int, default=1000, help="notes per user")
    parser.add_argument("--links", type=int, default=300, help="links per user")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--seed", type=int, default=10)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="memvault-search-") as tmp:
        root = Path(tmp)
        embedder = make_embedder("use-m3", data_dir=root / "models")
        services = open_vault(root / "data", embedder)
        try:
            start = time.perf_counter()
            users = build(services, args.users, args.notes, args.links, args.seed)
            print(
                f"corpus: {args.users} users x {args.notes} notes, {args.links} links/user, "
                f"built in {time.perf_counter() - start:.0f} s"
            )
            services.vault.parts.retrievals.record = lambda *a, **k: None  # type: ignore[method-assign]
            maker = TextMaker(args.seed + 1)
            views = [services.vault.scoped(Scope(TENANT, u, AGENT)) for u in users]
            run = [runners(v) for v in views]
            for i in range(20):  # warm every shard, statement cache and page
                for fn in run[i % len(run)].values():
                    fn(maker.question())
            samples: dict[str, list[float]] = {name: [] for name in run[0]}
            names = list(samples)
            cached = services.vault.parts.embedder
            embed: list[float] = []
            for i in range(args.queries):
                query = maker.question()
                fns = run[i % len(run)]
                t0 = time.perf_counter()  # embedded once here; every mode then hits the cache
                cached.embed_query(views[i % len(views)].scope, query)
                embed.append((time.perf_counter() - t0) * 1000)
                for name in names[i % len(names) :] + names[: i % len(names)]:
                    t0 = time.perf_counter()
                    fns[name](query)
                    samples[name].append((time.perf_counter() - t0) * 1000)
            for name, s in samples.items():
                summary = Latency(s).summary()
                print(
                    f"{name:12s} p50 {summary['p50_ms']:7.3f} ms  p95 {summary['p95_ms']:7.3f} ms"
                )
            print(f"{'embed query':12s} p50 {Latency(embed).p50:7.3f} ms (not in the rows above)")
            dense = Latency(samples["dense"]).p50
            legacy = Latency(samples["full-legacy"]).p50
            full = Latency(samples["full"]).p50
            print(
                f"full/dense p50 {full / dense:.2f}x (legacy {legacy / dense:.2f}x); "
                f"full/legacy {full / legacy:.2f}x; peak RSS {peak_rss_mib():.0f} MiB"
            )
            if args.profile:
                for name in ("full-legacy", "full"):
                    prof = cProfile.Profile()
                    prof.enable()
                    for i in range(100):
                        query = maker.question()
                        cached.embed_query(views[i % len(views)].scope, query)
                        run[i % len(run)][name](query)
                    prof.disable()
                    out = io.StringIO()
                    pstats.Stats(prof, stream=out).sort_stats("cumulative").print_stats(25)
                    print(f"--- {name} (100 queries)\n{out.getvalue()}")
        finally:
            services.close()


if __name__ == "__main__":
    main()
