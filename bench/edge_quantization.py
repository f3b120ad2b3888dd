"""What int8 scalar quantization would give a search's dense call, on a store `bench.peers` filled.

Opens the data directory `bench.peers` left, embeds the shared workload's queries with the
service's own embedder and scope filters, closes it, then copies each user's partition (points,
vectors, payloads) into shards of each variant and runs every query's dense call (limit 50, the
hybrid prefetch, with the caller's scope filter and payloads) against each, rotating over the
users as the workload does:

- `stored`: the partitions as `bench.peers` left them, loaded in this process (not copied);
- `optimized`: a copy, optimized into one non-appendable segment without HNSW (`m=0`);
- `int8`: as `optimized`, with int8 scalar quantization, no rescoring;
- `int8+rescore`: the same shards, rescored with the original vectors (oversampling 1.5).

For each it prints the dense call's p50 and mean, how many queries' top 10 came in the same
order as `stored` and the mean overlap of the top 50, and the largest score difference on
shared hits. For the copies it also prints what `optimize()` took per partition and the longest
pause it caused a Python thread (the engine holds the GIL while it optimizes).

Run: .venv/bin/python -m bench.edge_quantization --data-dir /tmp/memvault-peers/memvault-T10-N5000
     -N 5000 [--rounds 3]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from qdrant_edge import (
    EdgeShard,
    Point,
    Query,
    QueryRequest,
    ScrollRequest,
    UpdateOperation,
)

from bench import peers
from bench._edge_optimize import RESCORE, optimized_config
from bench.add_parts import open_peer_store
from memvault.index._edge_convert import edge_filter
from memvault.index._edge_shards import _payload_indexes
from memvault.index.base import DENSE
from memvault.scope import Scope

PREFETCH = 50


def embed_queries(a: argparse.Namespace) -> list[tuple[Path, Any, list]]:
    """(partition folder, engine filter, query vector) per workload query, in workload order."""
    services = open_peer_store(a.data_dir, 2)
    parts = services.vault.parts
    out = []
    for q in peers.workload_queries(a.tenants, a.memories, a.queries):
        view = services.vault.scoped(Scope(q.tenant_id, q.user_id, peers.AGENT))
        where = view.point_filter()
        folder = parts.index.partition_path(view.namespace, where.user_id)
        vector = parts.embedder.embed_query(view.scope, q.text).tolist()
        out.append((folder, edge_filter(where), vector))
    services.close()
    return out


def read_points(folder: Path) -> list[Point]:
    shard = EdgeShard.load(str(folder))
    points: list[Point] = []
    offset: Any = None
    while True:
        records, offset = shard.scroll(
            ScrollRequest(offset=offset, limit=1000, with_payload=True, with_vector=True)
        )
        for r in records:
            vectors: Any = r.vector
            points.append(Point(id=r.id, vector={DENSE: vectors[DENSE]}, payload=r.payload))
        if offset is None:
            shard.close()
            return points


def optimized_copy(
    folder: Path, points: list[Point], quantize: bool
) -> tuple[EdgeShard, float, float]:
    """A shard of `points` optimized into one segment; (shard, optimize seconds, longest pause)."""
    first: Any = points[0].vector
    config = optimized_config(len(first[DENSE]), quantize=quantize, sparse=False)
    shard = EdgeShard.create(str(folder), config)
    for field, params in _payload_indexes().items():
        shard.update(UpdateOperation.create_field_index(field, params))
    for start in range(0, len(points), 500):
        shard.update(UpdateOperation.upsert_points(points[start : start + 500]))
    gaps: list[float] = []
    stop = threading.Event()

    def tick() -> None:  # a Python thread's longest wait for the GIL while the engine optimizes
        last = time.perf_counter()
        while not stop.is_set():
            now = time.perf_counter()
            gaps.append(now - last)
            last = now

    ticker = threading.Thread(target=tick)
    ticker.start()
    time.sleep(0.05)
    began = time.perf_counter()
    shard.optimize()
    took = time.perf_counter() - began
    stop.set()
    ticker.join()
    return shard, took, max(gaps)


def run_queries(shards: dict[Path, EdgeShard], queries: list, params: Any) -> tuple[list, list]:
    latencies, results = [], []
    for folder, flt, vector in queries:
        request = QueryRequest(
            limit=PREFETCH,
            query=Query.Nearest(vector, using=DENSE),
            filter=flt,
            with_payload=True,
            params=params,
        )
        began = time.perf_counter()
        found = shards[folder].query(request)
        latencies.append(time.perf_counter() - began)
        results.append([(str(p.id), p.score) for p in found])
    return latencies, results


def agreement(base: list, other: list) -> tuple[int, float, float]:
    same = sum(
        [i for i, _ in a[:10]] == [i for i, _ in b[:10]] for a, b in zip(base, other, strict=True)
    )
    overlap = statistics.mean(
        len({i for i, _ in a} & {i for i, _ in b}) / max(len(a), 1)
        for a, b in zip(base, other, strict=True)
    )
    diff = 0.0
    for a, b in zip(base, other, strict=True):
        scores = dict(a)
        diff = max([diff, *(abs(scores[i] - s) for i, s in b if i in scores)])
    return same, overlap, diff


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, required=True, help="a bench.peers data dir")
    parser.add_argument("--memories", "-N", type=int, required=True, help="as the peers run")
    parser.add_argument("--tenants", "-T", type=int, default=10, help="as the peers run")
    parser.add_argument("--queries", "-Q", type=int, default=50, help="as the peers run")
    parser.add_argument("--rounds", type=int, default=3)
    a = parser.parse_args(argv)
    queries = embed_queries(a)
    folders = list(dict.fromkeys(folder for folder, _, _ in queries))
    work = Path(tempfile.mkdtemp(prefix="memvault-quant-"))
    variants: dict[str, tuple[dict[Path, EdgeShard], Any]] = {"stored": ({}, None)}
    built: dict[str, list[tuple[float, float]]] = {"optimized": [], "int8": []}
    copies: dict[str, dict[Path, EdgeShard]] = {"optimized": {}, "int8": {}}
    try:
        for n, folder in enumerate(folders):
            points = read_points(folder)
            for name in copies:
                shard, took, pause = optimized_copy(work / f"{name}-{n}", points, name == "int8")
                copies[name][folder] = shard
                built[name].append((took, pause))
            variants["stored"][0][folder] = EdgeShard.load(str(folder))
        variants["optimized"] = (copies["optimized"], None)
        variants["int8"] = (copies["int8"], None)
        variants["int8+rescore"] = (copies["int8"], RESCORE)
        print(f"{len(queries)} queries over {len(folders)} partitions, dense limit {PREFETCH}")
        for name, runs in built.items():
            took = statistics.mean(t for t, _ in runs)
            pause = max(p for _, p in runs)
            print(
                f"  optimize() for {name}: {1000 * took:.0f} ms per partition,"
                f" longest pause {1000 * pause:.0f} ms"
            )
        base: list = []
        for round_ in range(a.rounds):
            for name, (shards, params) in variants.items():
                latencies, results = run_queries(shards, queries, params)
                if name == "stored" and not base:
                    base = results
                same, overlap, diff = agreement(base, results)
                p50, mean = statistics.median(latencies), statistics.mean(latencies)
                print(
                    f"round {round_ + 1} {name:13s} p50 {1000 * p50:.3f} ms, mean {1000 * mean:.3f}"
                    f" ms; top 10 in the same order {same}/{len(queries)}, top {PREFETCH} overlap"
                    f" {overlap:.4f}, score diff {diff:.2g}"
                )
    finally:
        for shards, _ in variants.values():
            for shard in shards.values():
                shard.close()
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
