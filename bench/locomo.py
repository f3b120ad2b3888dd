"""LoCoMo as an LLM-free retrieval benchmark, driven through the vault as the API drives it.

Each of the ten conversations is one user (`Scope("locomo", "conv<i>", "agent")`); every turn
becomes one memory, `speaker: text` (`--captions` appends ` [image: caption]` to turns that
share a photo; that measured worse, see docs/retrieval.md), added with `add_many` in batches of
100 with no write screen. The 1,982 QA items with evidence are the queries; their cleaned
evidence turns are the relevant set.

Each mode runs in a FRESH vault (new data dir, re-ingested): in `full` mode every search raises
retrieval counts (heat), which would otherwise leak into the next mode's rankings. Document
embeddings are memoized across modes within one run (the model is the slow part, and a vector
does not depend on the vault), so only the first mode's ingest time includes embedding.

Run: `.venv/bin/python -m bench.locomo [--embedder use-m3] [--modes dense,sparse,hybrid,full]
[--limit-convs N] [--captions]`. Writes `bench/out/locomo-<embedder>[-captions].json`.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import random
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from bench._harness import OUT_DIR, arg_parser, write_json
from bench._retrieval_data import (
    CATEGORIES,
    Conversation,
    MetricTable,
    dedupe,
    hit_at,
    load_locomo,
    percentile,
    recall_at,
    reciprocal_rank,
)
from memvault.config import Settings
from memvault.embed import make_embedder
from memvault.embed.base import Embedder, Vectors, Wrapped
from memvault.index.base import RRF_K
from memvault.runtime.factory import Services, open_services
from memvault.scope import Scope
from memvault.vault.notes import SearchHit
from memvault.vault.service import NoteDraft, ScopedVault

MODES = ("dense", "sparse", "hybrid", "full")
TENANT = "locomo"
AGENT = "agent"
BATCH = 100
LIMIT = 10
RANDOM_TURNS_PER_QUESTION = 10


class MemoEmbedder(Wrapped):
    """An `Embedder` that memoizes vectors across fresh vaults and times the model.

    A vector does not depend on the vault, and the model is the slow part (e5 runs ~75
    sentences/s on an idle machine), so each document and query is embedded once per run.
    For latency, `last_query_seconds` is the model time of the latest query (remembered from
    its first embedding) and `last_query_spent` the time this call actually spent, so a search
    is reported as vault time (wall minus spent) plus model time, whichever mode runs first.
    """

    def __init__(self, inner: Embedder) -> None:
        super().__init__(inner)
        self.documents: dict[str, Vectors] = {}
        self.queries: dict[str, tuple[Vectors, float]] = {}
        self.document_seconds = 0.0
        self.last_query_seconds = 0.0
        self.last_query_spent = 0.0

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        """Embed the texts not seen before in one batch; return all rows in order."""
        missing = [t for t in dedupe(texts) if t not in self.documents]
        if missing:
            started = time.perf_counter()
            vectors = self.inner.embed_documents(missing)
            self.document_seconds += time.perf_counter() - started
            self.documents.update(zip(missing, vectors, strict=True))
        if not texts:
            return np.empty((0, self.dimension), dtype=np.float32)
        return np.stack([self.documents[t] for t in texts])

    def embed_query(self, text: str) -> Vectors:
        """Embed a query once (timed); later calls return the same vector at no cost."""
        started = time.perf_counter()
        known = self.queries.get(text)
        if known is None:
            vector = self.inner.embed_query(text)
            known = (vector, time.perf_counter() - started)
            self.queries[text] = known
        self.last_query_seconds = known[1]
        self.last_query_spent = time.perf_counter() - started
        return known[0]

    def start_query(self) -> None:
        """Forget the previous query's timings (a sparse search embeds nothing)."""
        self.last_query_seconds = 0.0
        self.last_query_spent = 0.0


def search(
    vault: ScopedVault, query: str, limit: int, mode: str, fusion: str | None = None
) -> list[SearchHit]:
    """One `vault.search` in `mode`, as the API runs it."""
    return vault.search(query, limit=limit, mode=mode, fusion=fusion)


def timed_search(
    embedder: MemoEmbedder,
    run: Callable[[], list[Any]],
    latencies: list[float],
    without: list[float],
) -> list[Any]:
    """Run one search; append its ms with and without the query's embedding to the two lists."""
    embedder.start_query()
    started = time.perf_counter()
    hits = run()
    vault_s = time.perf_counter() - started - embedder.last_query_spent
    latencies.append((vault_s + embedder.last_query_seconds) * 1e3)
    without.append(vault_s * 1e3)
    return hits


def turn_drafts(conv: Conversation, *, captions: bool, sessions: bool) -> list[NoteDraft]:
    """One draft per turn; with `sessions`, its session id and the session's date, as a chat
    client that knows its conversation would send them (the note is then context-keyed)."""
    return [
        NoteDraft(
            t.memory_text(captions=captions),
            source=t.dia_id,
            session_id=f"s{conv.session_of(t)}" if sessions else None,
            occurred_at=conv.occurred_at(t) if sessions else None,
        )
        for t in conv.turns
    ]


def open_bench_services(embedder: Embedder, data_dir: Path) -> Services:
    """A fresh embedded vault (SQLite + Edge shards + keystore) under `data_dir`, no screen."""
    return open_services(Settings(data_dir=data_dir), embedder=embedder, screen=None)


@contextmanager
def fresh_services(embedder: Embedder, prefix: str) -> Iterator[Services]:
    """`open_bench_services` in a new temporary directory; closed and removed on exit."""
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        services = open_bench_services(embedder, Path(tmp))
        try:
            yield services
        finally:
            services.close()


def add_in_batches(
    vault: ScopedVault, drafts: Sequence[NoteDraft], batch: int = BATCH
) -> list[str]:
    """Add drafts with `add_many` in batches; the note id each draft got (duplicates merge)."""
    ids: list[str] = []
    for start in range(0, len(drafts), batch):
        ids.extend(note.id for note in vault.add_many(drafts[start : start + batch]))
    if len(ids) != len(drafts):
        raise RuntimeError(f"add_many returned {len(ids)} notes for {len(drafts)} drafts")
    return ids


@dataclass
class Anomalies:
    """Things in search results that should not happen; counted, never fatal."""

    unsorted_results: int = 0
    non_finite_scores: int = 0
    over_limit_results: int = 0
    graph_hits: int = 0
    queries_with_graph_hits: int = 0
    examples: list[str] = field(default_factory=list)

    def check(self, hits: Sequence[SearchHit], limit: int, label: str) -> None:
        """Record score-order, score-value and result-count oddities of one result list."""
        scores = [h.score for h in hits if h.via == "search"]
        if any(a < b - 1e-9 for a, b in itertools.pairwise(scores)):
            self.unsorted_results += 1
            if len(self.examples) < 5:
                self.examples.append(f"{label}: search scores not descending")
        if any(not math.isfinite(h.score) for h in hits):
            self.non_finite_scores += 1
        if len(hits) > limit:
            self.over_limit_results += 1
        graph = sum(1 for h in hits if h.via == "graph")
        self.graph_hits += graph
        self.queries_with_graph_hits += int(graph > 0)


@dataclass
class SearchLog:
    """A run's searches: their ms with and without the query's embedding, and anomalies."""

    embedder: MemoEmbedder
    latencies: list[float] = field(default_factory=list)
    without_embedding: list[float] = field(default_factory=list)
    anomalies: Anomalies = field(default_factory=Anomalies)

    def search(self, run: Callable[[], list[SearchHit]], limit: int, label: str) -> list[SearchHit]:
        """Run one search, time it (`timed_search`) and check its results (`Anomalies`)."""
        hits = timed_search(self.embedder, run, self.latencies, self.without_embedding)
        self.anomalies.check(hits, limit, label)
        return hits

    def search_ms(self) -> dict[str, float]:
        """The count and percentiles of the search latencies, in ms."""
        return {
            "queries": len(self.latencies),
            "p50": percentile(self.latencies, 50),
            "p95": percentile(self.latencies, 95),
            "p50_without_query_embedding": percentile(self.without_embedding, 50),
            "p95_without_query_embedding": percentile(self.without_embedding, 95),
        }


def run_mode(
    embedder: MemoEmbedder,
    conversations: Sequence[Conversation],
    mode: str,
    captions: bool,
    sessions: bool = True,
    fusion: str | None = None,
) -> dict[str, Any]:
    """Ingest every conversation into a fresh vault, run every question in `mode`, score it."""
    table = MetricTable()
    log = SearchLog(embedder)
    embedded_before = embedder.document_seconds
    with fresh_services(embedder, "locomo-") as services:
        vaults: list[tuple[ScopedVault, dict[str, str]]] = []
        notes = 0
        started = time.perf_counter()
        for i, conv in enumerate(conversations):
            vault = services.vault.scoped(Scope(TENANT, f"conv{i}", AGENT))
            drafts = turn_drafts(conv, captions=captions, sessions=sessions)
            ids = add_in_batches(vault, drafts)
            notes += len(set(ids))
            vaults.append((vault, dict(zip((t.dia_id for t in conv.turns), ids, strict=True))))
        ingest_s = time.perf_counter() - started
        for (vault, note_of), conv in zip(vaults, conversations, strict=True):
            for q_no, q in enumerate(conv.questions):
                hits = log.search(
                    lambda: search(vault, q.text, LIMIT, mode, fusion),  # noqa: B023
                    LIMIT,
                    f"{conv.sample_id} q{q_no}",
                )
                ranked = dedupe(h.note.id for h in hits)
                relevant = {note_of[d] for d in q.evidence}
                table.add(
                    (CATEGORIES[q.category], "overall"),
                    {
                        "recall@5": recall_at(ranked, relevant, 5),
                        "recall@10": recall_at(ranked, relevant, 10),
                        "hit@10": hit_at(ranked, relevant, 10),
                        "mrr@10": reciprocal_rank(ranked, relevant, 10),
                    },
                )
    turns = sum(len(c.turns) for c in conversations)
    return {
        "metrics": table.as_dict(),
        "ingest": {
            "turns": turns,
            "notes": notes,
            "seconds": ingest_s,
            "turns_per_s": turns / ingest_s,
            "embedding_seconds": embedder.document_seconds - embedded_before,
        },
        "search_ms": log.search_ms(),
        "anomalies": dict(vars(log.anomalies)),
    }


def cosine_distribution(
    embedder: MemoEmbedder, conversations: Sequence[Conversation], captions: bool
) -> dict[str, Any]:
    """Cosine of each question with its evidence turns vs random other turns of its conversation.

    Uses the vectors the vault stored (document side) and searched with (query side), so the
    figures are the ones a graph gate sees. Proposes gate thresholds from them.
    """
    rng = random.Random(4)
    evidence: list[float] = []
    others: list[float] = []
    best_evidence: list[float] = []
    for conv in conversations:
        texts = [t.memory_text(captions=captions) for t in conv.turns]
        docs = embedder.embed_documents(texts)
        row = {t.dia_id: i for i, t in enumerate(conv.turns)}
        for q in conv.questions:
            vector = embedder.embed_query(q.text)
            cosines = docs @ vector
            wanted = [row[d] for d in q.evidence]
            ev = [float(cosines[i]) for i in wanted]
            evidence.extend(ev)
            best_evidence.append(max(ev))
            pool = [i for i in range(len(texts)) if i not in set(wanted)]
            sample = rng.sample(pool, min(RANDOM_TURNS_PER_QUESTION, len(pool)))
            others.extend(float(cosines[i]) for i in sample)
    points = (5, 10, 25, 50, 75, 90, 95, 99)
    grid = np.linspace(-0.2, 1.0, 241)
    ev_arr, other_arr = np.array(evidence), np.array(others)
    youden = max(grid, key=lambda t: float((ev_arr >= t).mean() - (other_arr >= t).mean()))

    def passing(threshold: float) -> dict[str, float]:
        return {
            "threshold": round(float(threshold), 3),
            "evidence_pass": float((ev_arr >= threshold).mean()),
            "random_pass": float((other_arr >= threshold).mean()),
        }

    return {
        "evidence": {f"p{p}": percentile(evidence, p) for p in points} | {"n": len(evidence)},
        "best_evidence_per_question": {f"p{p}": percentile(best_evidence, p) for p in points},
        "random": {f"p{p}": percentile(others, p) for p in points} | {"n": len(others)},
        "gate_at_random_p90": passing(percentile(others, 90)),
        "gate_at_random_p95": passing(percentile(others, 95)),
        "gate_youden": passing(float(youden)),
    }


def print_mode(mode: str, result: dict[str, Any]) -> None:
    """One mode's table: R@5, R@10, MRR@10 per category and overall, ingest and latency."""
    ingest, lat, metrics = result["ingest"], result["search_ms"], result["metrics"]
    print(
        f"\n== mode {mode}: ingest {ingest['turns']} turns ({ingest['notes']} notes) in "
        f"{ingest['seconds']:.1f} s = {ingest['turns_per_s']:.0f} turns/s "
        f"(embedding {ingest['embedding_seconds']:.1f} s); search p50 {lat['p50']:.1f} ms "
        f"p95 {lat['p95']:.1f} ms (without query embedding p50 "
        f"{lat['p50_without_query_embedding']:.1f} / p95 {lat['p95_without_query_embedding']:.1f})"
    )
    print(f"{'category':12s} {'n':>5s} {'R@5':>6s} {'R@10':>6s} {'MRR':>6s}")
    for group in [*CATEGORIES.values(), "overall"]:
        if group in metrics:
            m = metrics[group]
            print(
                f"{group:12s} {m['n']:5d} {m['recall@5']:6.3f} {m['recall@10']:6.3f} "
                f"{m['mrr@10']:6.3f}"
            )
    odd = result["anomalies"]
    if odd["unsorted_results"] or odd["non_finite_scores"] or odd["over_limit_results"]:
        print(f"anomalies: {odd}")
    if odd["graph_hits"]:
        print(f"graph hits: {odd['graph_hits']} in {odd['queries_with_graph_hits']} queries")


def print_cosines(cos: dict[str, Any]) -> None:
    """Percentiles of query-evidence and query-random cosines and the proposed gates."""
    print("\n== cosine(question, turn)")
    for name in ("evidence", "best_evidence_per_question", "random"):
        row = " ".join(f"{k}={v:.3f}" for k, v in cos[name].items() if k != "n")
        print(f"{name:27s} {row}")
    for name in ("gate_at_random_p90", "gate_at_random_p95", "gate_youden"):
        g = cos[name]
        print(
            f"{name:27s} threshold {g['threshold']:.3f}: evidence passes "
            f"{g['evidence_pass']:.1%}, random passes {g['random_pass']:.1%}"
        )


FUSION_DEPTH = 50  # the vault's hybrid prefetch depth
DENSE_WEIGHTS = (0.0, 0.01, 0.03, 0.1, 0.25, 0.5, 1.0)
FUSION_KS = (5, RRF_K)
FUSION_FORMULAS = ("textbook", "qdrant")


def weighted_rrf(
    rankings: Sequence[tuple[Sequence[str], float]], k: int = RRF_K, formula: str = "textbook"
) -> list[str]:
    """Ids ordered by fused score over the given rankings (rank counted from 1).

    `textbook`: sum of weight / (k + rank). `qdrant`: sum of 1 / (k - 1 + rank / weight), which is
    what Qdrant Edge's `Fusion.Rrf(k, weights)` was measured to compute (the weight stretches the
    rank instead of scaling the contribution). A zero weight drops the ranking.
    """
    scores: dict[str, float] = {}
    for ranking, weight in rankings:
        if weight <= 0:
            continue
        for rank, item in enumerate(ranking, start=1):
            qdrant = formula == "qdrant"
            add = 1.0 / (k - 1 + rank / weight) if qdrant else weight / (k + rank)
            scores[item] = scores.get(item, 0.0) + add
    return sorted(scores, key=lambda item: -scores[item])


def fusion_study(
    embedder: MemoEmbedder, conversations: Sequence[Conversation], captions: bool
) -> dict[str, Any]:
    """What-if: re-fuse the vault's own dense and sparse top-50 with other weights, k and formula.

    The `qdrant` formula at k=60 and weight 1.0 reproduces `hybrid` (same prefetch depth), so
    the table shows what another fusion setting would buy without changing anything else.
    A query without BM25 tokens falls back to the dense list, as the vault does. One fresh
    vault, no heat.
    """
    grid = [(f, k, w) for f in FUSION_FORMULAS for k in FUSION_KS for w in DENSE_WEIGHTS]
    tables = {key: MetricTable() for key in grid}
    with fresh_services(embedder, "locomo-fusion-") as services:
        for i, conv in enumerate(conversations):
            vault = services.vault.scoped(Scope(TENANT, f"conv{i}", AGENT))
            drafts = [NoteDraft(t.memory_text(captions=captions)) for t in conv.turns]
            ids = add_in_batches(vault, drafts)
            note_of = dict(zip((t.dia_id for t in conv.turns), ids, strict=True))
            for q in conv.questions:
                dense = [h.note.id for h in search(vault, q.text, FUSION_DEPTH, "dense")]
                sparse = [h.note.id for h in search(vault, q.text, FUSION_DEPTH, "sparse")]
                relevant = {note_of[d] for d in q.evidence}
                for (formula, k, w), table in tables.items():
                    ranked = (
                        weighted_rrf([(dense, w), (sparse, 1.0)], k, formula) if sparse else dense
                    )
                    table.add(
                        (CATEGORIES[q.category], "overall"),
                        {
                            "recall@5": recall_at(ranked, relevant, 5),
                            "recall@10": recall_at(ranked, relevant, 10),
                            "mrr@10": reciprocal_rank(ranked, relevant, 10),
                        },
                    )
    return {f"{f} k={k} w={w}": t.as_dict() for (f, k, w), t in tables.items()}


def print_fusion(study: dict[str, Any]) -> None:
    """R@10 overall and multi-hop, and MRR, per fusion setting."""
    print("\n== fusion study: dense top-50 (weight w) fused with sparse top-50 (weight 1)")
    print(f"{'setting':24s} {'R@5':>6s} {'R@10':>6s} {'MRR':>6s} {'multi-hop R@10':>15s}")
    for setting, table in study.items():
        o, mh = table["overall"], table["multi-hop"]
        print(
            f"{setting:24s} {o['recall@5']:6.3f} {o['recall@10']:6.3f} {o['mrr@10']:6.3f} "
            f"{mh['recall@10']:15.3f}"
        )


def save_report(out: Path, fields: dict[str, Any], modes: dict[str, Any]) -> None:
    """Merge `fields` and `modes` into the JSON report at `out` (earlier modes are kept).

    Called after every mode, so a crash or an interrupted run keeps what was measured.
    """
    previous = json.loads(out.read_text()) if out.is_file() else {}
    write_json(out, {**previous, **fields, "modes": {**previous.get("modes", {}), **modes}})


def main(argv: Sequence[str] | None = None) -> int:
    parser = arg_parser(__doc__)
    parser.add_argument("--embedder", default="use-m3", choices=["use-m3", "e5-small", "minilm"])
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--limit-convs", type=int, default=0)
    parser.add_argument(
        "--fusion-study", action="store_true", help="also try RRF with a down-weighted dense list"
    )
    parser.add_argument(
        "--captions", action="store_true", help="append ' [image: caption]' to photo turns"
    )
    parser.add_argument(
        "--no-sessions",
        action="store_true",
        help="add turns without session_id/occurred_at (each note indexed on its own)",
    )
    parser.add_argument("--fusion", choices=["score", "rrf"], default=None)
    args = parser.parse_args(argv)
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    unknown = set(modes) - set(MODES)
    if unknown:
        parser.error(f"unknown modes: {sorted(unknown)}")
    captions = args.captions
    conversations = load_locomo()
    if args.limit_convs:
        conversations = conversations[: args.limit_convs]
    questions = sum(len(c.questions) for c in conversations)
    suffix = "-captions" if captions else ""
    suffix += "-nosessions" if args.no_sessions else ""
    suffix += f"-{args.fusion}" if args.fusion else ""
    if args.limit_convs:
        suffix += f"-{args.limit_convs}convs"
    out = OUT_DIR / f"locomo-{args.embedder}{suffix}.json"
    with tempfile.TemporaryDirectory(prefix="locomo-models-") as models:
        embedder = MemoEmbedder(make_embedder(args.embedder, data_dir=Path(models)))
        embedder.inner.embed_query("warm up")  # load the model outside every timing
        load1 = os.getloadavg()[0]
        print(
            f"LoCoMo: {len(conversations)} conversations, {questions} questions; embedder "
            f"{args.embedder} ({embedder.model_id}); captions {'on' if captions else 'off'}; "
            f"{os.cpu_count()} CPUs, load average {load1:.1f}"
        )
        header = {
            "embedder": args.embedder,
            "model_id": embedder.model_id,
            "captions": captions,
            "sessions": not args.no_sessions,
            "fusion": args.fusion or "model default",
            "conversations": len(conversations),
            "questions": questions,
            "measured_at": time.strftime("%Y-%m-%d %H:%M"),
            "cpus": os.cpu_count(),
            "load_average_at_start": load1,
        }
        for mode in modes:
            result = run_mode(
                embedder, conversations, mode, captions, not args.no_sessions, args.fusion
            )
            print_mode(mode, result)
            save_report(out, header, {mode: result})
        cosines = cosine_distribution(embedder, conversations, captions)
        print_cosines(cosines)
        save_report(out, {"cosine": cosines}, {})
        if args.fusion_study:
            study = fusion_study(embedder, conversations, captions)
            print_fusion(study)
            save_report(out, {"fusion_study": study}, {})
    print(f"\nwrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
