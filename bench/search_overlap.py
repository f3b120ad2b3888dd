"""Search latency with the model in its own process: what a search does while it embeds.

The service embeds in a child process (`EMBED_PROCESS`, on by default), so a search sends its
query to the child and runs its BM25 half (tokenizing, keyed hashes, the Edge sparse search)
while the child embeds; a full-mode search also reads the records of its top BM25 candidates
then (`retrieve._RowsAhead`); it waits for the vector only before the dense search. This
benchmark measures what each step saves, in one process on a store `bench.peers` filled, in
three arms:

- `now`: the vector awaited last, records read ahead (full mode);
- `no rows ahead`: the vector awaited last, every record read after fusion;
- `awaited first`: the vector awaited before anything else (the order before either).

- the workload's queries (limit 10), `--rounds` passes, every search paying its embedding (the
  query cache is cleared before each, as `bench.peers` does);
- each query runs in every arm back to back, the order rotating;
- per mode and arm: p50 and mean milliseconds, the ratio of p50s to `now`'s, the mean CPU time
  of the searching thread (the child's not included), and how many
  searches returned the same ids as `now` (all of them, or the step changed a result).

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
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

from bench import peers
from bench._harness import open_vault
from bench.add_parts import peer_store_parser
from memvault.embed import CachedEmbedder, PendingQuery
from memvault.embed.process import ProcessEmbedder
from memvault.scope import Scope

ARMS = ("now", "no rows ahead", "awaited first")
_BEGIN_QUERY = CachedEmbedder.begin_query


def no_rows_ahead(self: CachedEmbedder, scope: Scope, text: str) -> PendingQuery:
    """The vector awaited last, but the search is not told it is computed elsewhere, so a
    full search reads every record after fusion."""
    return PendingQuery(_BEGIN_QUERY(self, scope, text), elsewhere=False)


def awaited_first(self: CachedEmbedder, scope: Scope, text: str) -> PendingQuery:
    """The first order: the vector is computed (and waited for) before the search goes on."""
    vector = self.embed_query(scope, text)
    return PendingQuery(lambda: vector, elsewhere=False)


@contextlib.contextmanager
def arm(name: str) -> Iterator[None]:
    if name == ARMS[0]:
        yield
        return
    begin = no_rows_ahead if name == ARMS[1] else awaited_first
    with mock.patch.object(CachedEmbedder, "begin_query", begin):
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

    def search(query: Any, text: str, mode: str) -> tuple[float, float, list[str]]:
        key = (query.tenant_id, query.user_id)
        if key not in views:
            views[key] = services.vault.scoped(Scope(*key, peers.AGENT))
        cache.clear()  # every search pays its embedding, as in bench.peers
        start, start_cpu = time.perf_counter(), time.thread_time()
        ids = [hit.note.id for hit in views[key].search(text, limit=10, mode=mode)]
        return time.perf_counter() - start, time.thread_time() - start_cpu, ids

    for query in queries[:20]:  # open every partition, start the child's model
        for mode in modes:
            search(query, query.text + " (warm-up)", mode)
    times: dict[tuple[str, str], list[float]] = {(m, x): [] for m in modes for x in ARMS}
    cpu: dict[tuple[str, str], list[float]] = {(m, x): [] for m in modes for x in ARMS}
    same = {(m, x): 0 for m in modes for x in ARMS}
    turn = 0
    began = time.perf_counter()
    for round_ in range(a.rounds):
        for query in queries:
            for mode in modes:
                order = ARMS[turn % len(ARMS) :] + ARMS[: turn % len(ARMS)]
                turn += 1
                ids = {}
                for name in order:
                    with arm(name):
                        seconds, on_cpu, ids[name] = search(query, query.text, mode)
                    times[(mode, name)].append(seconds)
                    cpu[(mode, name)].append(on_cpu)
                for name in ARMS:
                    same[(mode, name)] += ids[name] == ids[ARMS[0]]
        took = time.perf_counter() - began
        print(f"round {round_ + 1}/{a.rounds} done, {took:.0f} s", flush=True)
    n = a.rounds * len(queries)
    print(f"{a.data_dir.name}: {n} searches per mode and arm, model threads {a.threads}")
    for mode in modes:
        base = statistics.median(times[(mode, ARMS[0])])
        for name in ARMS:
            xs = times[(mode, name)]
            p50 = statistics.median(xs)
            print(
                f"  {mode:6s} {name:13s} p50 {1000 * p50:.3f} ms (ratio to now"
                f" {p50 / base:.3f}), mean {1000 * statistics.mean(xs):.3f} ms, CPU mean"
                f" {1000 * statistics.mean(cpu[(mode, name)]):.3f} ms,"
                f" same ids as now {same[(mode, name)]}/{n}"
            )


if __name__ == "__main__":
    sys.exit(main())
