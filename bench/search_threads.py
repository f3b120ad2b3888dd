"""Concurrent searches in one process: T threads, distinct queries, a fixed duration.

Opens a data directory `bench.peers` left, with the service's own USE-m3 embedder, BLAS
threads and cap (so concurrent queries share model calls as in `memvault serve`), and runs
`--threads` searchers for `--seconds`, each asking the shared workload's queries of its own
users with a serial number appended, so every query is new to the query-embedding cache.
Prints searches/s, process CPU per search, latency percentiles and the queries per embedding
model call.

Run: .venv/bin/python -m bench.search_threads --data-dir /tmp/memvault-peers/memvault-T10-N2000
     -N 2000 [--threads 8] [--seconds 20] [--mode full]
A/B: run it alternately with `PYTHONPATH=/tmp/old/src` (another source tree) and without.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

from bench import peers
from bench._harness import open_vault
from bench.load import client_cpu_seconds, percentile
from memvault.scope import Scope


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, required=True, help="a bench.peers data dir")
    parser.add_argument("--memories", "-N", type=int, required=True, help="as the peers run")
    parser.add_argument("--tenants", "-T", type=int, default=10, help="as the peers run")
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--mode", default="full", choices=("dense", "hybrid", "full"))
    a = parser.parse_args(argv)
    if not (1 <= a.threads <= 64 and 1 <= a.seconds <= 600):
        raise SystemExit("--threads must be 1-64 and --seconds 1-600")
    from memvault.config import Settings
    from memvault.embed import UseEmbedder
    from memvault.embed.blas import cap_blas_threads

    threads = Settings().embed_threads  # as `memvault serve`: its thread count, a process cap
    blas_cap = cap_blas_threads(threads)
    embedder = UseEmbedder(threads=threads)
    embedder.load()
    services = open_vault(a.data_dir / "vault", embedder)
    queries = peers.workload_queries(a.tenants, a.memories)
    views: dict[tuple[str, str], Any] = {}
    for q in queries:
        key = (q.tenant_id, q.user_id)
        if key not in views:
            views[key] = services.vault.scoped(Scope(*key, peers.AGENT))
            views[key].search(q.text + " (warm-up)", limit=10, mode=a.mode)
    latencies: list[float] = []
    lock = threading.Lock()
    start = threading.Barrier(a.threads + 1)
    until = [0.0]

    def searcher(k: int) -> None:
        mine = queries[k :: a.threads]
        own: list[float] = []
        start.wait()
        n = 0
        while time.monotonic() < until[0]:
            q = mine[n % len(mine)]
            began = time.perf_counter()
            views[(q.tenant_id, q.user_id)].search(f"{q.text} {k}-{n}", limit=10, mode=a.mode)
            own.append(time.perf_counter() - began)
            n += 1
        with lock:
            latencies.extend(own)

    threads = [threading.Thread(target=searcher, args=(k,)) for k in range(a.threads)]
    for t in threads:
        t.start()
    until[0] = time.monotonic() + a.seconds
    cpu0, wall0 = client_cpu_seconds(), time.monotonic()
    batcher = getattr(embedder, "_queries", None)  # absent in trees before query batching
    batches0 = batcher.stats() if batcher is not None else None
    start.wait()
    for t in threads:
        t.join()
    wall, cpu = time.monotonic() - wall0, client_cpu_seconds() - cpu0
    n = len(latencies)
    ordered = sorted(latencies)
    per_call = "n/a"
    if batcher is not None and batches0 is not None:
        batches = batcher.stats()
        calls = batches.batches - batches0.batches
        per_call = f"{(batches.jobs - batches0.jobs) / max(calls, 1):.2f}"
    print(
        f"{a.threads} threads, {a.mode}, {wall:.1f} s: {n / wall:.1f} searches/s, "
        f"CPU {1000 * cpu / max(n, 1):.2f} ms/search ({cpu / wall:.2f} cores), "
        f"p50 {1000 * statistics.median(ordered):.1f} ms, "
        f"p95 {1000 * percentile(ordered, 0.95):.1f} ms, "
        f"queries per model call {per_call}"
    )
    services.close()
    blas_cap.restore_original_limits()
    return 0


if __name__ == "__main__":
    sys.exit(main())
