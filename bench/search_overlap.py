"""Search latency with the model in its own process: the query vector awaited last, or first.

The service embeds in a child process (`EMBED_PROCESS`, on by default), so a search sends its
query to the child and runs its BM25 half (tokenizing, keyed hashes, the Edge sparse search)
while the child embeds; it waits for the vector only before the dense search. This benchmark
measures what that overlap saves, against the previous order (the vector awaited before
anything else), in one process on a store `bench.peers` filled:

- the workload's queries (limit 10), `--rounds` passes, every search paying its embedding (the
  query cache is cleared before each, as `bench.peers` does);
- each query runs in both arms back to back, the arm that goes first alternating;
- per mode: p50 and mean milliseconds per arm, their ratio, and how many searches returned the
  same ids in both arms (all of them, or the overlap changed a result).

Run: .venv/bin/python -m bench.search_overlap -N 5000 \
    --data-dir /tmp/memvault-peers/memvault-T10-N5000
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from unittest import mock

from bench import peers
from bench._harness import open_vault
from bench.add_parts import peer_store_parser
from memvault.scope import Scope
from memvault.vault.embed import CachedEmbedder, Vectors
from memvault.vault.embed.process import ProcessEmbedder

ARMS = ("awaited last (now)", "awaited first (before)")


def awaited_first(self: CachedEmbedder, scope: Scope, text: str) -> Callable[[], Vectors]:
    """The previous order: the vector is computed (and waited for) before the search goes on."""
    vector = self.embed_query(scope, text)
    return lambda: vector


@contextlib.contextmanager
def arm(name: str) -> Iterator[None]:
    if name == ARMS[0]:
        yield
        return
    with mock.patch.object(CachedEmbedder, "begin_query", awaited_first):
        yield


def main(argv: list[str] | None = None) -> int:
    parser = peer_store_parser(__doc__, rounds=3)
    parser.add_argument("--modes", default="full,hybrid,dense")
    parser.add_argument("--threads", type=int, default=1, help="model threads (EMBED_THREADS)")
    a = parser.parse_args(argv)
    modes = a.modes.split(",")
    with tempfile.TemporaryDirectory() as models:
        embedder = ProcessEmbedder("use-m3", data_dir=Path(models), threads=a.threads)
        embedder.load()
        services = open_vault(a.data_dir / "vault", embedder, screen=True)
        try:
            run(a, services, modes)
        finally:
            services.close()
            embedder.close()
    return 0


def run(a: argparse.Namespace, services: Any, modes: list[str]) -> None:
    cache = services.vault.parts.embedder.cache
    queries = peers.workload_queries(a.tenants, a.memories, a.queries)
    views: dict[tuple[str, str], Any] = {}

    def search(query: Any, text: str, mode: str) -> tuple[float, list[str]]:
        key = (query.tenant_id, query.user_id)
        if key not in views:
            views[key] = services.vault.scoped(Scope(*key, peers.AGENT))
        cache.clear()  # every search pays its embedding, as in bench.peers
        start = time.perf_counter()
        ids = [hit.note.id for hit in views[key].search(text, limit=10, mode=mode)]
        return time.perf_counter() - start, ids

    for query in queries[:20]:  # open every partition, start the child's model
        for mode in modes:
            search(query, query.text + " (warm-up)", mode)
    times: dict[tuple[str, str], list[float]] = {(m, x): [] for m in modes for x in ARMS}
    same = dict.fromkeys(modes, 0)
    turn = 0
    began = time.perf_counter()
    for round_ in range(a.rounds):
        for query in queries:
            for mode in modes:
                order = ARMS if turn % 2 == 0 else ARMS[::-1]
                turn += 1
                ids = {}
                for name in order:
                    with arm(name):
                        seconds, ids[name] = search(query, query.text, mode)
                    times[(mode, name)].append(seconds)
                same[mode] += ids[ARMS[0]] == ids[ARMS[1]]
        took = time.perf_counter() - began
        print(f"round {round_ + 1}/{a.rounds} done, {took:.0f} s", flush=True)
    n = a.rounds * len(queries)
    print(f"{a.data_dir.name}: {n} searches per mode and arm, model threads {a.threads}")
    for mode in modes:
        now, before = (times[(mode, x)] for x in ARMS)
        p50_now, p50_before = statistics.median(now), statistics.median(before)
        print(
            f"  {mode:6s} p50 {1000 * p50_now:.3f} vs {1000 * p50_before:.3f} ms"
            f" (ratio {p50_now / p50_before:.3f}), mean {1000 * statistics.mean(now):.3f} vs"
            f" {1000 * statistics.mean(before):.3f} ms, same ids {same[mode]}/{n}"
        )


if __name__ == "__main__":
    sys.exit(main())
