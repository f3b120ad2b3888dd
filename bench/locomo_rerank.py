"""Choose the re-ranking stage's weights on LoCoMo conversations 0-4, confirm them on 5-9, and
measure through `search()` what the stage adds (recall, and milliseconds in the same run).

Each conversation is ingested through the vault as `bench.locomo_tune` does (one user each,
`session_id` and the session's date on every turn), so every note carries the shape flags
sealed at ingest (`memvault.vault.rerank.note_flags`). For every question the two scoped
prefetches are fused with `memvault.vault.ranking` (the model's `FUSION_BY_MODEL`), and the
pool's shapes are read the way search reads them (`PoolReranker.load`: the pool's attribute
envelopes decrypted in the caller's scope). Every weight setting is then scored with
`rerank.reorder`, the function search runs, so a row is what the vault returns.

Then (`--search`, default on) every question runs through `ScopedVault.search(mode=...)`
twice in the same vault, the stage off and on, alternating, so the added latency is a ratio
measured in one run under the same load. Latency excludes the query embedding (memoized).

Run: `.venv/bin/python -m bench.locomo_rerank [--embedder use-m3] [--reuse] [--no-search]`.
Writes `bench/out/locomo-rerank-<embedder>.json`.
"""

from __future__ import annotations

import argparse
import json
import pickle
import random
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

from bench._retrieval_data import CATEGORIES, Conversation, load_locomo, percentile, recall_at
from bench.locomo import AGENT, OUT_DIR, TENANT, MemoEmbedder, add_in_batches, open_bench_services
from bench.locomo_tune import drafts_of
from memvault.embed import make_embedder
from memvault.runtime.factory import Services
from memvault.scope import Scope
from memvault.text import SparseEncoder
from memvault.text.dates import parse_time_ranges
from memvault.vault import rerank as rr
from memvault.vault.ranking import Scored, fuse_scores, rerank
from memvault.vault.retrieve import fusion_for
from memvault.vault.service import ScopedVault

TRAIN = range(0, 5)
LIMIT = 10
SPACE: dict[str, tuple[float, ...]] = {
    "speaker": (0.2, 0.25, 0.3, 0.35),
    "question": (0.2, 0.3, 0.4),
    "length": (0.2, 0.3, 0.4),
    "first": (0.05, 0.1, 0.15, 0.2),
    "same_session": (0.05, 0.1, 0.15, 0.2),
    "session_best": (0.0, 0.05, 0.1, 0.15, 0.2),
    "session_count": (0.0, 0.02, 0.05),
    "bm25": (0.0, 0.1),
    "dense": (0.0, 0.1),
}
DRAWS = 220
SEED = 0


@dataclass(frozen=True, slots=True)
class Case:
    """One question: its fused pool (best first), the pool's shapes, what counts as found."""

    conv: int
    category: str
    query: str
    relevant: frozenset[str]
    pool: tuple[Scored, ...]
    shapes: dict[str, rr.NoteShape]


def ingest(services: Services, convs: Sequence[Conversation]) -> list[dict[str, str]]:
    """Add every conversation (one user each); each conversation's dia_id -> note id."""
    maps = []
    for i, conv in enumerate(convs):
        vault = services.vault.scoped(Scope(TENANT, f"conv{i}", AGENT))
        ids = add_in_batches(vault, drafts_of(conv, sessions=True))
        maps.append(dict(zip((t.dia_id for t in conv.turns), ids, strict=True)))
    return maps


def collect(
    services: Services,
    embedder: MemoEmbedder,
    convs: Sequence[Conversation],
    maps: Sequence[dict[str, str]],
) -> list[Case]:
    """Each question's fused pool, and its shapes as the search stage reads them."""
    cases: list[Case] = []
    parts = services.vault.parts
    fusion = fusion_for(embedder.model_id)
    weights = rr.Rerank()
    encoder = SparseEncoder(parts.keyring.index_key(TENANT).token_id)
    for i, conv in enumerate(convs):
        vault = services.vault.scoped(Scope(TENANT, f"conv{i}", AGENT))
        where = vault.point_filter()
        now = max(conv.session_dates.values()) + 86_400
        for q in conv.questions:
            dense = parts.index.search_dense(
                vault.namespace, embedder.embed_query(q.text).tolist(), where, fusion.prefetch
            )
            sparse_q = encoder.encode_query(q.text)
            sparse = (
                parts.index.search_sparse(vault.namespace, sparse_q, where, fusion.prefetch)
                if sparse_q.indices
                else []
            )
            ranges = [(r.start, r.end) for r in parse_time_ranges(q.text, now)]
            f = fusion.for_query(q.text)
            pool = rerank(fuse_scores(dense, sparse, f.dense_weight), f, ranges)
            shapes = rr.PoolReranker(vault, q.text, weights).load([s.hit for s in pool])
            relevant = frozenset(maps[i][d] for d in q.evidence)
            cases.append(Case(i, CATEGORIES[q.category], q.text, relevant, tuple(pool), shapes))
    return cases


def evaluate(cases: Sequence[Case], weights: rr.Rerank | None) -> dict[str, dict[str, float]]:
    """R@10 per split (train 0-4, held_out 5-9, all) overall and per category."""
    sums: dict[str, dict[str, list[float]]] = {}
    for case in cases:
        pool = list(case.pool)
        ranked = pool if weights is None else rr.reorder(pool, case.shapes, case.query, weights)
        r = recall_at([s.hit.id for s in ranked[:LIMIT]], case.relevant, LIMIT)
        for split in ("train" if case.conv in TRAIN else "held_out", "all"):
            for group in (case.category, "overall"):
                sums.setdefault(split, {}).setdefault(group, []).append(r)
    return {s: {g: sum(v) / len(v) for g, v in groups.items()} for s, groups in sums.items()}


def objective(scores: dict[str, dict[str, float]]) -> float:
    """The rule the fusion grid used: overall + multi-hop R@10 on conversations 0-4."""
    return scores["train"]["overall"] + scores["train"]["multi-hop"]


def tune(cases: Sequence[Case]) -> tuple[rr.Rerank, list[dict[str, Any]]]:
    """Random search (seeded) over `SPACE`, and the study's weights, on 0-4 only: the best
    sum of overall and multi-hop R@10 there (the rule the fusion grid used)."""
    train = [c for c in cases if c.conv in TRAIN]
    best = rr.Rerank()
    best_obj = objective(evaluate(train, best))
    trail = []
    draw = random.Random(SEED)
    for _ in range(DRAWS):
        change: dict[str, Any] = {k: draw.choice(v) for k, v in SPACE.items()}
        trial = replace(rr.Rerank(), **change)
        obj = objective(evaluate(train, trial))
        trail.append({**weights_of(trial), "objective": round(obj, 4)})
        if obj > best_obj + 1e-4:
            best, best_obj = trial, obj
    return best, trail


def weights_of(weights: rr.Rerank) -> dict[str, float]:
    """The five weights of a setting, by name."""
    return {f.name: getattr(weights, f.name) for f in fields(weights) if f.name in SPACE}


def alternate(
    services: Services,
    embedder: MemoEmbedder,
    convs: Sequence[Conversation],
    maps: Sequence[dict[str, str]],
    mode: str,
    weights: rr.Rerank,
) -> dict[str, Any]:
    """Every question through `search()`, the stage off then on, in the same vault."""
    model = embedder.model_id
    saved = rr.RERANK_BY_MODEL.get(model)
    ms: dict[str, list[float]] = {"off": [], "on": []}
    recall: dict[str, dict[str, list[float]]] = {"off": {}, "on": {}}
    try:
        for i, conv in enumerate(convs):
            vault: ScopedVault = services.vault.scoped(Scope(TENANT, f"conv{i}", AGENT))
            for q in conv.questions:
                for label, setting in (("off", None), ("on", weights)):
                    rr.RERANK_BY_MODEL[model] = setting
                    embedder.start_query()
                    started = time.perf_counter()
                    hits = vault.search(q.text, limit=LIMIT, mode=mode)
                    ms[label].append(
                        (time.perf_counter() - started - embedder.last_query_spent) * 1e3
                    )
                    got = recall_at(
                        [h.note.id for h in hits], {maps[i][d] for d in q.evidence}, LIMIT
                    )
                    for group in (CATEGORIES[q.category], "overall"):
                        recall[label].setdefault(group, []).append(got)
    finally:
        rr.RERANK_BY_MODEL[model] = saved
    out: dict[str, Any] = {}
    for label in ("off", "on"):
        out[label] = {
            "recall@10": {g: sum(v) / len(v) for g, v in recall[label].items()},
            "p50_ms": percentile(ms[label], 50),
            "p95_ms": percentile(ms[label], 95),
            "mean_ms": sum(ms[label]) / len(ms[label]),
        }
    diffs = [b - a for a, b in zip(ms["off"], ms["on"], strict=True)]
    out["added_ms"] = {"p50": percentile(diffs, 50), "mean": sum(diffs) / len(diffs)}
    return out


def choose(cases: Sequence[Case]) -> dict[str, Any]:
    """The baseline, the study's weights and the weights chosen on 0-4, each scored."""
    base = evaluate(cases, None)
    print(line("fused (stage off)", base))
    study = evaluate(cases, rr.Rerank())
    print(line("study's five weights", study))
    best, trail = tune(cases)
    chosen = evaluate(cases, best)
    print(line(f"chosen on 0-4 {weights_of(best)}", chosen))
    return {
        "baseline": base,
        "study": study,
        "chosen": chosen,
        "weights": weights_of(best),
        "trail": trail,
    }


def line(label: str, scores: dict[str, dict[str, float]]) -> str:
    """One printed row: R@10 on 0-4, 5-9 and all, multi-hop and temporal on all."""
    return (
        f"{label}: 0-4 {scores['train']['overall']:.3f}  5-9 {scores['held_out']['overall']:.3f}"
        f"  all {scores['all']['overall']:.3f}  multi-hop {scores['all']['multi-hop']:.3f}"
        f" (0-4 {scores['train']['multi-hop']:.3f}, 5-9 {scores['held_out']['multi-hop']:.3f})"
        f"  temporal {scores['all']['temporal']:.3f}"
    )


@dataclass
class Run:
    """The services of one bench run and what was ingested."""

    services: Services
    maps: list[dict[str, str]]


def open_run(embedder: MemoEmbedder, convs: Sequence[Conversation], tmp: Path) -> Iterator[Run]:
    """Open a fresh vault and ingest every conversation (a generator: closes on exhaustion)."""
    services = open_bench_services(embedder, tmp)
    try:
        started = time.perf_counter()
        maps = ingest(services, convs)
        print(f"ingest: {time.perf_counter() - started:.0f} s")
        yield Run(services, maps)
    finally:
        services.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--embedder", default="use-m3")
    parser.add_argument("--modes", default="hybrid,full", help="modes timed through search()")
    parser.add_argument("--no-search", action="store_true")
    parser.add_argument(
        "--reuse", action="store_true", help="tune on the pools of the last run (no ingest)"
    )
    args = parser.parse_args()
    convs = load_locomo()
    report: dict[str, Any] = {"embedder": args.embedder}
    cache = OUT_DIR / f"locomo-rerank-{args.embedder}.cases.pickle"
    if args.reuse and cache.is_file():
        report.update(choose(pickle.loads(cache.read_bytes())))  # written by this script
        args.no_search = True
    else:
        run_all(args, convs, cache, report)
    OUT_DIR.mkdir(exist_ok=True)
    out = OUT_DIR / f"locomo-rerank-{args.embedder}.json"
    out.write_text(json.dumps(report, indent=1))
    print(f"wrote {out}")


def run_all(
    args: argparse.Namespace, convs: Sequence[Conversation], cache: Path, report: dict[str, Any]
) -> None:
    """Ingest, collect the pools, tune, and time search() with the stage off and on."""
    with tempfile.TemporaryDirectory(prefix="locomo-rerank-") as tmp:
        embedder = MemoEmbedder(make_embedder(args.embedder, data_dir=Path(tmp) / "models"))
        for run in open_run(embedder, convs, Path(tmp) / "data"):
            cases = collect(run.services, embedder, convs, run.maps)
            OUT_DIR.mkdir(exist_ok=True)
            cache.write_bytes(pickle.dumps(cases))  # ids, scores, questions; no note text
            report.update(choose(cases))
            best = rr.Rerank(**report["weights"])
            if not args.no_search:
                for mode in args.modes.split(","):
                    result = alternate(run.services, embedder, convs, run.maps, mode, best)
                    report[f"search_{mode}"] = result
                    print(
                        f"search({mode}): R@10 off {result['off']['recall@10']['overall']:.3f}"
                        f" on {result['on']['recall@10']['overall']:.3f} (multi-hop"
                        f" {result['off']['recall@10']['multi-hop']:.3f} ->"
                        f" {result['on']['recall@10']['multi-hop']:.3f}); vault ms p50 off"
                        f" {result['off']['p50_ms']:.2f} on {result['on']['p50_ms']:.2f},"
                        f" added p50 {result['added_ms']['p50']:.2f} mean"
                        f" {result['added_ms']['mean']:.2f}"
                    )


if __name__ == "__main__":
    main()
