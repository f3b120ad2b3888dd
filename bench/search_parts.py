"""Where a search spends its time, part by part, in a store `bench.peers` filled.

Opens the data directory `bench.peers` left behind, with the shared harness's USE-m3 object, and
runs the shared workload's queries (`--rounds` times each) as `bench.peers` does: limit 10, the
query-embedding cache cleared before each search. Each part is timed by wrapping the function
that does it; the report gives milliseconds per search:

- `embed_query`; `search_fused` (hybrid and full: the two Edge prefetches, fusion, rerank) or
  the Edge call of `dense`; `_full` (the hydration statement, heat, the graph walk and gate,
  decrypting the returned notes) or `hydrate` (dense, hybrid); `other` is the rest.

Run: .venv/bin/python -m bench.search_parts --data-dir /tmp/memvault-peers/memvault-T10-N5000

`--fill` measures in the process that wrote the store instead: it runs `bench.peers` in process
(filling `--data-dir` afresh, then its own searches) and times the parts before it closes the
store. A fresh process and the writing one differ (docs/performance.md): compare the two.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from bench import peers
from bench.add_parts import open_peer_store, print_parts, timed
from memvault.scope import Scope


def instrument(parts: Any) -> None:
    import memvault.vault.ranking as ranking
    import memvault.vault.retrieve as retrieve
    import memvault.vault.service as service

    timed(parts.embedder, "embed_query", "embed_query")
    timed(retrieve, "search_fused", "search_fused")
    timed(parts.index, "search_dense", "  edge dense")
    timed(parts.index, "search_sparse", "  edge sparse")
    timed(ranking, "fuse_scores", "  fuse")
    timed(ranking, "rerank", "  rerank")
    timed(retrieve.HybridRetriever, "_full", "_full")
    timed(service.ScopedVault, "note_of", "  decrypt")
    timed(service.ScopedVault, "hydrate", "hydrate")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, required=True, help="a bench.peers data dir")
    parser.add_argument("--mode", default="full", choices=("dense", "hybrid", "full"))
    parser.add_argument("--tenants", "-T", type=int, default=10, help="as the peers run")
    parser.add_argument("--memories", "-N", type=int, required=True, help="as the peers run")
    parser.add_argument("--queries", "-Q", type=int, default=50, help="as the peers run")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2, help="embedder threads (as peers)")
    parser.add_argument(
        "--fill", action="store_true", help="run bench.peers in process first (wipes --data-dir)"
    )
    a = parser.parse_args(argv)
    if not a.fill:
        services = open_peer_store(a.data_dir, a.threads)
        measure(a, services, "fresh process")
        services.close()
        return 0
    fill = [
        *("-T", str(a.tenants), "-N", str(a.memories), "-Q", str(a.queries)),
        *("--threads", str(a.threads)),
        *("--data-dir", str(a.data_dir), "--no-reopen"),
    ]
    peers.main(fill, before_close=lambda services: measure(a, services, "writing process"))
    return 0


def measure(a: argparse.Namespace, services: Any, where: str) -> None:
    """Time `a.rounds` passes of the workload's queries, part by part, and print them."""
    parts = services.vault.parts
    queries = peers.workload_queries(a.tenants, a.memories, a.queries)
    views: dict[tuple[str, str], Any] = {}

    def search(query: Any, text: str) -> None:
        key = (query.tenant_id, query.user_id)
        if key not in views:
            views[key] = services.vault.scoped(Scope(*key, peers.AGENT))
        parts.embedder.cache.clear()  # every search pays its embedding, as in bench.peers
        views[key].search(text, limit=10, mode=a.mode)

    for query in queries[:20]:  # open every shard, warm the caches
        search(query, query.text + " (warm-up)")
    instrument(parts)
    latencies = []
    for _ in range(a.rounds):
        for query in queries:
            start = time.perf_counter()
            search(query, query.text)
            latencies.append(time.perf_counter() - start)
    n = len(latencies)
    p50, mean = statistics.median(latencies), statistics.mean(latencies)
    print(
        f"{a.data_dir.name} {a.mode}, {where}: {n} searches, p50 {1000 * p50:.3f} ms,"
        f" mean {1000 * mean:.3f} ms"
    )
    print_parts(n, sum(latencies), "search")


if __name__ == "__main__":
    sys.exit(main())
