"""Chinese retrieval check on CMRC2018 dev, through the vault.

The 848 paragraphs are stored as memories of one user, split into chunks of whole sentences of
at most `--chunk-chars` characters (0 = whole paragraphs; see docs/retrieval.md for the choice).
Each of the 3,219 questions succeeds when a chunk of the paragraph that holds its answer is
retrieved: hits are mapped to their paragraphs (first occurrence wins) and recall@1, recall@5
and MRR@5 are computed on that paragraph ranking. Each mode runs in a fresh vault (heat).

Run: `.venv/bin/python -m bench.cmrc [--embedder use-m3] [--modes dense,sparse,hybrid,full]
[--chunk-chars 150] [--limit-paragraphs N]`. Writes
`bench/out/cmrc-<embedder>-c<chunk-chars>[-<N>p].json`.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench._harness import arg_parser
from bench._retrieval_data import (
    CmrcParagraph,
    MetricTable,
    dedupe,
    load_cmrc,
    recall_at,
    reciprocal_rank,
    split_chunks,
)
from bench.locomo import (
    MODES,
    OUT_DIR,
    MemoEmbedder,
    SearchLog,
    add_in_batches,
    fresh_services,
    save_report,
    search,
)
from memvault.embed import make_embedder
from memvault.scope import Scope
from memvault.text import tokenize
from memvault.vault.service import NoteDraft

SCOPE = Scope("cmrc", "reader", "agent")
DEFAULT_CHUNK_CHARS = 150
CHUNK_SEARCH_LIMIT = 20  # enough chunks to rank 5 distinct paragraphs
PARAGRAPH_SEARCH_LIMIT = 5


def chunk_drafts(
    paragraphs: Sequence[CmrcParagraph], chunk_chars: int
) -> tuple[list[NoteDraft], list[str]]:
    """One draft per chunk, and the paragraph id of each draft."""
    drafts: list[NoteDraft] = []
    owners: list[str] = []
    for p in paragraphs:
        for n, chunk in enumerate(split_chunks(p.context, chunk_chars)):
            drafts.append(NoteDraft(chunk, source=f"{p.id}#{n}"))
            owners.append(p.id)
    return drafts, owners


def run_mode(
    embedder: MemoEmbedder, paragraphs: Sequence[CmrcParagraph], mode: str, chunk_chars: int
) -> dict[str, Any]:
    """Ingest the chunks into a fresh vault and score every question in `mode`."""
    drafts, owners = chunk_drafts(paragraphs, chunk_chars)
    limit = CHUNK_SEARCH_LIMIT if chunk_chars else PARAGRAPH_SEARCH_LIMIT
    table = MetricTable()
    log = SearchLog(embedder)
    embedded_before = embedder.document_seconds
    with fresh_services(embedder, "cmrc-") as services:
        vault = services.vault.scoped(SCOPE)
        started = time.perf_counter()
        ids = add_in_batches(vault, drafts)
        ingest_s = time.perf_counter() - started
        paragraphs_of: dict[str, list[str]] = {}
        for note_id, owner in zip(ids, owners, strict=True):
            paragraphs_of.setdefault(note_id, []).append(owner)
        for p in paragraphs:
            for q_no, question in enumerate(p.questions):
                hits = log.search(
                    lambda: search(vault, question, limit, mode),  # noqa: B023
                    limit,
                    f"{p.id} q{q_no}",
                )
                ranked = dedupe(pid for h in hits for pid in paragraphs_of.get(h.note.id, ()))
                gold = {p.id}
                table.add(
                    ("overall",),
                    {
                        "recall@1": recall_at(ranked, gold, 1),
                        "recall@5": recall_at(ranked, gold, 5),
                        "mrr@5": reciprocal_rank(ranked, gold, 5),
                    },
                )
    return {
        "metrics": table.as_dict()["overall"],
        "ingest": {
            "chunks": len(drafts),
            "notes": len(set(ids)),
            "seconds": ingest_s,
            "chunks_per_s": len(drafts) / ingest_s,
            "embedding_seconds": embedder.document_seconds - embedded_before,
        },
        "search_limit": limit,
        "search_ms": log.search_ms(),
        "anomalies": dict(vars(log.anomalies)),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = arg_parser(__doc__)
    parser.add_argument("--embedder", default="use-m3", choices=["use-m3", "e5-small", "minilm"])
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--chunk-chars", type=int, default=DEFAULT_CHUNK_CHARS)
    parser.add_argument(
        "--limit-paragraphs", type=int, default=0, help="only the first N paragraphs (quick run)"
    )
    args = parser.parse_args(argv)
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    if set(modes) - set(MODES):
        parser.error(f"unknown modes: {sorted(set(modes) - set(MODES))}")
    paragraphs = load_cmrc()
    if args.limit_paragraphs:
        paragraphs = paragraphs[: args.limit_paragraphs]
    questions = [q for p in paragraphs for q in p.questions]
    # BM25 must see words, not whole sentences: jieba splits each question into several tokens.
    tokens_per_question = statistics.mean(len(tokenize(q)) for q in questions)
    chunks = len(chunk_drafts(paragraphs, args.chunk_chars)[0])
    with tempfile.TemporaryDirectory(prefix="cmrc-models-") as models:
        embedder = MemoEmbedder(make_embedder(args.embedder, data_dir=Path(models)))
        embedder.inner.embed_query("warm up")
        load1 = os.getloadavg()[0]
        print(
            f"CMRC2018 dev: {len(paragraphs)} paragraphs -> {chunks} chunks "
            f"(chunk-chars {args.chunk_chars}), {len(questions)} questions, "
            f"{tokens_per_question:.1f} BM25 tokens per question; embedder {args.embedder}; "
            f"{os.cpu_count()} CPUs, load average {load1:.1f}"
        )
        print(
            f"{'mode':7s} {'R@1':>6s} {'R@5':>6s} {'MRR':>6s} {'ingest/s':>9s} {'p50':>7s} "
            f"{'p95':>7s} {'p50-emb':>8s}"
        )
        subset = f"-{args.limit_paragraphs}p" if args.limit_paragraphs else ""
        out = OUT_DIR / f"cmrc-{args.embedder}-c{args.chunk_chars}{subset}.json"
        header = {
            "embedder": args.embedder,
            "model_id": embedder.model_id,
            "chunk_chars": args.chunk_chars,
            "chunks": chunks,
            "questions": len(questions),
            "bm25_tokens_per_question": tokens_per_question,
            "measured_at": time.strftime("%Y-%m-%d %H:%M"),
            "cpus": os.cpu_count(),
            "load_average_at_start": load1,
        }
        for mode in modes:
            r = run_mode(embedder, paragraphs, mode, args.chunk_chars)
            save_report(out, header, {mode: r})
            m, lat = r["metrics"], r["search_ms"]
            print(
                f"{mode:7s} {m['recall@1']:6.3f} {m['recall@5']:6.3f} {m['mrr@5']:6.3f} "
                f"{r['ingest']['chunks_per_s']:9.0f} {lat['p50']:7.1f} {lat['p95']:7.1f} "
                f"{lat['p50_without_query_embedding']:8.1f}"
            )
            odd = r["anomalies"]
            if odd["unsorted_results"] or odd["non_finite_scores"] or odd["over_limit_results"]:
                print(f"        anomalies: {odd}")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
