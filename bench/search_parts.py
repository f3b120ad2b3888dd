"""Where a search spends its time, part by part, in a store `bench.peers` filled.

Opens the data directory `bench.peers` left behind, with the shared harness's USE-m3 object, and
runs the shared workload's queries (`--rounds` times each) as `bench.peers` does: limit 10, the
query-embedding cache cleared before each search. Each part is timed by wrapping the function
that does it; the report gives milliseconds per search:

- `search_fused` (hybrid and full: the two Edge prefetches, fusion, rerank, and the query
  embedding, which a search asks for only after its BM25 prefetch) or, for `dense`,
  `embed_query` and the Edge call; `_full` (the hydration statement, heat, the graph walk and
  gate, decrypting the returned notes) or `hydrate` (dense, hybrid); `other` is the rest.

Run: .venv/bin/python -m bench.search_parts --data-dir /tmp/memvault-peers/memvault-T10-N5000

`--fill` measures in the process that wrote the store instead: it runs `bench.peers` in process
(filling `--data-dir` afresh, then its own searches) and times the parts before it closes the
store. A fresh process and the writing one differ (docs/performance.md): compare the two.
With `--fill`, `--then-reopen` measures again after closing every partition (they reopen on
the next search; `--trim` calls glibc's `malloc_trim` after closing, and the RSS is printed
before and after), and `--then-optimize` after a child process has optimized each closed
partition into one non-appendable segment without HNSW (and `--quantize`: with int8 scalar
quantization, searched with rescoring). The store stays so optimized: fill it afresh before
measuring it again.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

from bench import peers
from bench._edge_optimize import RESCORE
from bench._harness import rss_mib
from bench.add_parts import (
    TIMES,
    add_fill_options,
    fill_args,
    open_peer_store,
    peer_store_parser,
    print_parts,
    timed,
)
from memvault.scope import Scope


def instrument(parts: Any, mode: str) -> None:
    import memvault.vault.ranking as ranking
    import memvault.vault.retrieve as retrieve
    import memvault.vault.service as service

    # hybrid and full embed the query inside `search_fused`, after the sparse prefetch
    timed(parts.embedder, "embed_query", "embed_query" if mode == "dense" else "  embed_query")
    timed(retrieve, "search_fused", "search_fused")
    timed(parts.index, "search_dense", "  edge dense")
    timed(parts.index, "search_sparse", "  edge sparse")
    timed(ranking, "fuse_scores", "  fuse")
    timed(ranking, "rerank", "  rerank")
    timed(retrieve.HybridRetriever, "_full", "_full")
    timed(service.ScopedVault, "note_of", "  decrypt")
    timed(service.ScopedVault, "hydrate", "hydrate")


def main(argv: list[str] | None = None) -> int:
    parser = peer_store_parser(__doc__, rounds=2)
    parser.add_argument("--mode", default="full", choices=("dense", "hybrid", "full"))
    add_fill_options(parser)
    parser.add_argument("--then-reopen", action="store_true", help="with --fill")
    parser.add_argument(
        "--trim", action="store_true", help="with --then-reopen: malloc_trim after closing"
    )
    parser.add_argument("--then-optimize", action="store_true", help="with --fill")
    parser.add_argument("--quantize", action="store_true", help="with --then-optimize")
    a = parser.parse_args(argv)
    if a.trim and not a.then_reopen:
        raise SystemExit("--trim needs --then-reopen")
    if (a.then_reopen or a.then_optimize) and not a.fill:
        raise SystemExit("--then-reopen and --then-optimize need --fill")
    if not a.fill:
        services = open_peer_store(a.data_dir, a.threads)
        instrument(services.vault.parts, a.mode)
        measure(a, services, "fresh process")
        services.close()
        return 0
    peers.main(fill_args(a), before_close=lambda services: measure_writer(a, services))
    return 0


def measure_writer(a: argparse.Namespace, services: Any) -> None:
    """The parts in the writing process; then, as asked, after reopening or optimizing."""
    instrument(services.vault.parts, a.mode)
    first = measure(a, services, "writing process")
    index = services.vault.parts.index

    def same_as_first(results: list[list[str]]) -> None:
        same = sum(x == y for x, y in zip(first, results, strict=True))
        print(f"  results as in the writing process: {same}/{len(first)} queries")

    if a.then_reopen:
        print(f"  RSS before closing: {rss_mib():.1f} MiB")
        index.close()  # every partition reopens on its next search
        if a.trim:
            ctypes.CDLL("libc.so.6").malloc_trim(0)  # give the freed heap back to the system
        print(f"  RSS after closing{' and malloc_trim' if a.trim else ''}: {rss_mib():.1f} MiB")
        same_as_first(measure(a, services, "writing process, partitions reopened"))
        print(f"  RSS with the partitions reopened: {rss_mib():.1f} MiB")
    if a.then_optimize:
        folders = [str(index.shard_path(ns) / part) for ns, part in index.open_partitions()]
        index.close()
        began = time.perf_counter()
        child = [sys.executable, "-c", OPTIMIZE, str(a.quantize), str(index.dense_dim)]
        subprocess.run([*child, *folders], check=True, cwd=PROJECT)
        took = time.perf_counter() - began
        print(f"a child process optimized {len(folders)} partitions in {took:.1f} s")
        label = "quantized" if a.quantize else "optimized"
        with rescoring(a.quantize):
            same_as_first(measure(a, services, f"writing process, partitions {label} in a child"))


OPTIMIZE = (
    "import sys; from bench._edge_optimize import optimize_in_place; "
    "optimize_in_place(sys.argv[3:], int(sys.argv[2]), sys.argv[1] == 'True')"
)
"""A child's work (`_edge_optimize.optimize_in_place`), run from the project's root."""
PROJECT = Path(__file__).resolve().parents[1]


def measure(a: argparse.Namespace, services: Any, where: str) -> list[list[str]]:
    """Time `a.rounds` passes of the workload's queries, part by part, and print them; return
    each query's result ids (of the last pass)."""
    parts = services.vault.parts
    queries = peers.workload_queries(a.tenants, a.memories, a.queries)
    views: dict[tuple[str, str], Any] = {}

    def search(query: Any, text: str) -> list[str]:
        key = (query.tenant_id, query.user_id)
        if key not in views:
            views[key] = services.vault.scoped(Scope(*key, peers.AGENT))
        parts.embedder.cache.clear()  # every search pays its embedding, as in bench.peers
        return [hit.note.id for hit in views[key].search(text, limit=10, mode=a.mode)]

    for query in queries[:20]:  # open every shard, warm the caches
        search(query, query.text + " (warm-up)")
    TIMES.clear()  # the warm-up's times go
    latencies = []
    results: list[list[str]] = []
    for _ in range(a.rounds):
        results = []
        for query in queries:
            start = time.perf_counter()
            results.append(search(query, query.text))
            latencies.append(time.perf_counter() - start)
    n = len(latencies)
    p50, mean = statistics.median(latencies), statistics.mean(latencies)
    print(
        f"{a.data_dir.name} {a.mode}, {where}: {n} searches, p50 {1000 * p50:.3f} ms,"
        f" mean {1000 * mean:.3f} ms"
    )
    print_parts(n, sum(latencies), "search")
    return results


@contextlib.contextmanager
def rescoring(on: bool) -> Iterator[None]:
    """While open (and `on`), the index's engine queries rescore quantized candidates with the
    float vectors (`_edge_optimize.RESCORE`), as a quantized store would have to."""
    import memvault.index._edge_search as edge_search

    if not on:
        yield
        return
    plain = edge_search.QueryRequest

    def with_rescoring(*args: Any, **kwargs: Any) -> Any:
        return plain(*args, **{**kwargs, "params": RESCORE})

    with mock.patch.object(edge_search, "QueryRequest", with_rescoring):
        yield


if __name__ == "__main__":
    sys.exit(main())
