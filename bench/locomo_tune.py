"""Choose the hybrid ranking's weights on LoCoMo conversations 0-4 and confirm them on 5-9.

Each conversation is ingested through the vault (one user each, with `session_id` and the
session's date as `occurred_at`, so notes are context-keyed as the API would index them). For
every question the vault's own two scoped prefetches (dense and BM25, top 50 each) are taken
from the index once; every weight setting is then re-ranked with `memvault.vault.ranking`, the
same code `ScopedVault.search(mode="hybrid")` runs, so a row here is what the vault returns.

Run: `.venv/bin/python -m bench.locomo_tune [--embedder use-m3] [--no-sessions]`.
Writes `bench/out/locomo-tune-<embedder>[-nosessions].json` and prints the best settings.
"""

from __future__ import annotations

import itertools
import pickle
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench._harness import arg_parser, write_json
from bench._retrieval_data import CATEGORIES, Conversation, load_locomo, recall_at
from bench.locomo import (
    AGENT,
    OUT_DIR,
    TENANT,
    MemoEmbedder,
    add_in_batches,
    fresh_services,
    turn_drafts,
)
from memvault.embed import make_embedder
from memvault.index.base import Hit
from memvault.scope import Scope
from memvault.text import SparseEncoder
from memvault.text.dates import parse_time_ranges
from memvault.vault.ranking import Fusion, fuse_scores, rerank
from memvault.vault.readable_idf import weigh_by_readable_idf

PREFETCH = 50
TRAIN = range(0, 5)
DENSE_WEIGHTS = (0.0, 0.3, 0.4, 0.5)
PREVS = (0.0, 0.2, 0.4, 0.6)
NEXTS = (0.0, 0.4, 0.8, 1.0, 1.2, 1.5, 2.0)
DATES = (0.0, 0.1)


@dataclass(frozen=True, slots=True)
class Case:
    """One question's prefetched candidates and what counts as found."""

    conv: int
    category: str
    relevant: frozenset[str]
    dense: tuple[Hit, ...]
    sparse: tuple[Hit, ...]
    ranges: tuple[tuple[float, float], ...]


def collect(embedder: MemoEmbedder, convs: Sequence[Conversation], sessions: bool) -> list[Case]:
    """Ingest every conversation and take each question's two prefetches from the index."""
    cases: list[Case] = []
    with fresh_services(embedder, "locomo-tune-") as services:
        started = time.perf_counter()
        for i, conv in enumerate(convs):
            vault = services.vault.scoped(Scope(TENANT, f"conv{i}", AGENT))
            ids = add_in_batches(vault, turn_drafts(conv, captions=False, sessions=sessions))
            note_of = dict(zip((t.dia_id for t in conv.turns), ids, strict=True))
            where = vault.point_filter()
            index = services.vault.parts.index
            encoder = SparseEncoder(services.vault.parts.keyring.index_key(TENANT).token_id)
            now = max(conv.session_dates.values()) + 86_400
            for q in conv.questions:
                dense_q = embedder.embed_query(q.text).tolist()
                sparse_q = weigh_by_readable_idf(
                    index, vault.namespace, where, encoder.encode_query(q.text)
                )
                ranges = tuple((r.start, r.end) for r in parse_time_ranges(q.text, now))
                cases.append(
                    Case(
                        i,
                        CATEGORIES[q.category],
                        frozenset(note_of[d] for d in q.evidence),
                        tuple(index.search_dense(vault.namespace, dense_q, where, PREFETCH)),
                        tuple(
                            index.search_sparse(vault.namespace, sparse_q, where, PREFETCH)
                            if sparse_q.indices
                            else ()
                        ),
                        ranges,
                    )
                )
        print(f"ingest + prefetch: {time.perf_counter() - started:.0f} s, {len(cases)} questions")
    return cases


def rrf_ranking(dense: Sequence[Hit], sparse: Sequence[Hit], fusion: Fusion) -> list[str]:
    """The store's weighted RRF: a 1-based rank r in a list of weight w adds 1/(r/w + k - 1)."""
    scores: dict[str, float] = {}
    for hits, weight in ((dense, fusion.dense_weight), (sparse, 1.0)):
        for rank, hit in enumerate(hits, start=1):
            scores[hit.id] = scores.get(hit.id, 0.0) + 1.0 / (rank / weight + fusion.k - 1)
    return sorted(scores, key=lambda i: -scores[i])


def ranked_ids(case: Case, fusion: Fusion) -> list[str]:
    """The top 10 the vault's hybrid mode returns under `fusion`."""
    if fusion.method == "rrf":
        return rrf_ranking(case.dense, case.sparse, fusion)[:10]
    fused = fuse_scores(case.dense, case.sparse, fusion.dense_weight)
    return [s.hit.id for s in rerank(fused, fusion, case.ranges)[:10]]


def evaluate(cases: Sequence[Case], fusion: Fusion) -> dict[str, dict[str, float]]:
    """R@10 per split (train 0-4, held-out 5-9) overall and per category."""
    sums: dict[str, dict[str, list[float]]] = {}
    for case in cases:
        split = "train" if case.conv in TRAIN else "held_out"
        r = recall_at(ranked_ids(case, fusion), case.relevant, 10)
        for group in (case.category, "overall"):
            sums.setdefault(split, {}).setdefault(group, []).append(r)
            sums.setdefault("all", {}).setdefault(group, []).append(r)
    return {s: {g: sum(v) / len(v) for g, v in groups.items()} for s, groups in sums.items()}


def main() -> None:
    parser = arg_parser(__doc__)
    parser.add_argument("--embedder", default="use-m3")
    parser.add_argument("--no-sessions", action="store_true")
    parser.add_argument(
        "--reuse", action="store_true", help="reuse the prefetches of the last run (no ingest)"
    )
    args = parser.parse_args()
    suffix = "-nosessions" if args.no_sessions else ""
    cache = OUT_DIR / f"locomo-tune-{args.embedder}{suffix}.cases.pickle"
    if args.reuse and cache.is_file():
        cases = pickle.loads(cache.read_bytes())  # written by this script, below
    else:
        with tempfile.TemporaryDirectory(prefix="locomo-models-") as models:
            embedder = MemoEmbedder(make_embedder(args.embedder, data_dir=Path(models)))
            cases = collect(embedder, load_locomo(), not args.no_sessions)
        OUT_DIR.mkdir(exist_ok=True)
        cache.write_bytes(pickle.dumps(cases))
    grid = [
        Fusion(dense_weight=w, prev=p, next=n, date=d)
        for w, p, n, d in itertools.product(DENSE_WEIGHTS, PREVS, NEXTS, DATES)
    ]
    results: list[dict[str, Any]] = []
    for fusion in grid:
        scores = evaluate(cases, fusion)
        results.append(
            {
                "dense_weight": fusion.dense_weight,
                "prev": fusion.prev,
                "next": fusion.next,
                "date": fusion.date,
                **scores,
            }
        )
    for k in (5, 60):
        for w in (0.1, 0.3, 1.0):
            fusion = Fusion(method="rrf", dense_weight=w, k=k)
            results.append({"rrf_k": k, "dense_weight": w, **evaluate(cases, fusion)})
    best = max((r for r in results if "rrf_k" not in r), key=lambda r: r["train"]["overall"])
    sparse_only = next(
        r
        for r in results
        if r.get("dense_weight") == 0.0 and not (r.get("prev") or r.get("next") or r.get("date"))
    )
    print(
        f"BM25 only: train {sparse_only['train']['overall']:.3f} "
        f"held-out {sparse_only['held_out']['overall']:.3f}"
    )
    for r in sorted(results, key=lambda r: -r["train"]["overall"])[:12]:
        label = {k: v for k, v in r.items() if k not in ("train", "held_out", "all")}
        print(
            f"{label}: train {r['train']['overall']:.3f} held-out "
            f"{r['held_out']['overall']:.3f} all {r['all']['overall']:.3f} "
            f"(multi-hop {r['all'].get('multi-hop', 0):.3f}, "
            f"temporal {r['all'].get('temporal', 0):.3f})"
        )
    print(f"best on train: {best}")
    out = OUT_DIR / f"locomo-tune-{args.embedder}{suffix}.json"
    write_json(out, {"best": best, "results": results})
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
