"""LoCoMo with and without A-MEM, through the vault (`bench.locomo --amem` in the issue).

For each setting, every conversation is ingested into a fresh vault exactly as `bench.locomo`
does (one user per conversation, turns with their session and date). With A-MEM, each add runs
construction, relating (restatements, newer versions, expansions, conflicts), evolution and
linking with the offline HeuristicJudge, and every conversation is consolidated afterwards. A
restatement counts as found when the canonical note that lists it (`duplicates`) is found; a
superseded turn counts only when itself is shown. Reported: R@10 overall and multi-hop (the 2-hop
graph walk has links to walk only with A-MEM), relations by kind, the ingest rate, and the p50
of single adds with and without A-MEM.

Run: `.venv/bin/python -m bench.locomo_amem [--limit-convs N] [--convs 5:10] [--modes full]
[--no-single-adds]`. Writes `bench/out/locomo-amem.json`. `--suite temporal` runs the temporal
suite instead (`bench/_amem_temporal.py`: facts that change across sessions, asked now and
`as_of`, through REST), written to `bench/out/amem-temporal.json`.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

from sqlalchemy import func, select

from bench._harness import arg_parser, write_json
from bench._retrieval_data import (
    CATEGORIES,
    MetricTable,
    dedupe,
    load_locomo,
    percentile,
    recall_at,
)
from bench.locomo import (
    AGENT,
    LIMIT,
    OUT_DIR,
    TENANT,
    MemoEmbedder,
    fresh_services,
    turn_drafts,
)
from memvault.embed import make_embedder
from memvault.scope import Scope
from memvault.store.models import LinkRow

BATCH = 100
SINGLE_ADDS = 200


def shown_ids(hits: Any) -> list[str]:
    """Each result's id, then the restatements it lists (`duplicates`), in rank order."""
    out: list[str] = []
    for hit in hits:
        out.append(hit.note.id)
        out.extend(hit.note.relations.get("duplicates", ()))
    return out


def run(embedder: MemoEmbedder, convs: list[Any], amem_on: bool, mode: str) -> dict[str, Any]:
    """Ingest (A-MEM on or off), consolidate (on), then every question in `mode`."""
    table = MetricTable()
    with fresh_services(embedder, "locomo-amem-") as services:
        amem = None
        if amem_on:
            from memvault.amem.wiring import install

            amem = install(services, worker=False, scheduler=False)
        vaults = []
        started = time.perf_counter()
        turns = 0
        for i, conv in enumerate(convs):
            vault = services.vault.scoped(Scope(TENANT, f"conv{i}", AGENT))
            drafts = turn_drafts(conv, captions=False, sessions=True)
            ids: list[str] = []
            for start in range(0, len(drafts), BATCH):
                for note in vault.add_many(drafts[start : start + BATCH]):
                    ids.append(note.id)
            turns += len(drafts)
            vaults.append((vault, dict(zip((t.dia_id for t in conv.turns), ids, strict=True))))
        ingest_s = time.perf_counter() - started
        consolidated = 0
        if amem is not None:
            from memvault.amem.maintenance import consolidate

            for vault, _ in vaults:
                consolidated += consolidate(amem, vault).related
        for (vault, note_of), conv in zip(vaults, convs, strict=True):
            for q in conv.questions:
                hits = vault.search(q.text, limit=LIMIT, mode=mode)
                ranked = dedupe(shown_ids(hits[:LIMIT]))
                relevant = {note_of[d] for d in q.evidence}
                table.add(
                    (CATEGORIES[q.category], "overall"),
                    {"recall@10": recall_at(ranked, relevant, 10)},
                )
        live = sum(vault.list_notes(limit=1)[1] for vault, _ in vaults)
        with services.db.session(TENANT) as sess:
            kinds = dict(
                sess.execute(select(LinkRow.kind, func.count()).group_by(LinkRow.kind)).all()
            )
    metrics = table.as_dict()
    return {
        "mode": mode,
        "amem": amem_on,
        "r@10": metrics["overall"]["recall@10"],
        "multi_hop_r@10": metrics["multi-hop"]["recall@10"],
        "by_category": {k: v["recall@10"] for k, v in metrics.items()},
        "turns": turns,
        "notes_live": live,
        "relations_by_consolidation": consolidated,
        "links": {str(k): int(v) for k, v in kinds.items()},
        "ingest_notes_per_s": turns / ingest_s,
    }


def single_add_p50(embedder: MemoEmbedder, conv: Any, amem_on: bool) -> float:
    """p50 of one-note adds (a conversation's first turns, with sessions), in ms."""
    with fresh_services(embedder, "locomo-amem-adds-") as services:
        if amem_on:
            from memvault.amem.wiring import install

            install(services, worker=False, scheduler=False)
        vault = services.vault.scoped(Scope(TENANT, "adds", AGENT))
        drafts = turn_drafts(conv, captions=False, sessions=True)[: SINGLE_ADDS + 20]
        vault.add_many(drafts[:20])  # warm up
        times = []
        for draft in drafts[20:]:
            started = time.perf_counter()
            vault.add_many([draft])
            times.append((time.perf_counter() - started) * 1e3)
    return percentile(times, 50)


def main() -> None:
    parser = arg_parser(__doc__)
    parser.add_argument("--suite", choices=["locomo", "temporal"], default="locomo")
    parser.add_argument("--limit-convs", type=int, default=0)
    parser.add_argument(
        "--convs", default="", help="a slice of the conversations, e.g. 5:10 (the held-out half)"
    )
    parser.add_argument("--modes", default="hybrid,full")
    parser.add_argument("--no-single-adds", action="store_true", help="skip the add p50s")
    from bench import _amem_temporal

    _amem_temporal.add_arguments(parser)
    args = parser.parse_args()
    if args.suite == "temporal":
        write_json(OUT_DIR / "amem-temporal.json", _amem_temporal.main(args))
        return
    convs = load_locomo()
    if args.convs:
        start, _, stop = args.convs.partition(":")
        convs = convs[int(start or 0) : int(stop) if stop else None]
    if args.limit_convs:
        convs = convs[: args.limit_convs]
    results: dict[str, Any] = {"runs": []}
    with tempfile.TemporaryDirectory(prefix="locomo-models-") as models:
        embedder = MemoEmbedder(make_embedder("use-m3", data_dir=Path(models)))
        embedder.inner.embed_query("warm up")
        for mode in args.modes.split(","):
            for amem_on in (False, True):
                r = run(embedder, convs, amem_on, mode)
                results["runs"].append(r)
                print(
                    f"{mode:6s} A-MEM {'on ' if amem_on else 'off'}: R@10 {r['r@10']:.3f} "
                    f"multi-hop {r['multi_hop_r@10']:.3f}; {r['notes_live']} live notes of "
                    f"{r['turns']} turns, links and relations {r['links']} "
                    f"({r['relations_by_consolidation']} by consolidation); "
                    f"ingest {r['ingest_notes_per_s']:.0f} notes/s",
                    flush=True,
                )
        for amem_on in (False, True) if not args.no_single_adds else ():
            p50 = single_add_p50(embedder, convs[0], amem_on)
            results[f"add_p50_ms_amem_{'on' if amem_on else 'off'}"] = p50
            print(f"single add p50, A-MEM {'on' if amem_on else 'off'}: {p50:.1f} ms", flush=True)
    out = OUT_DIR / "locomo-amem.json"
    write_json(out, results)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
