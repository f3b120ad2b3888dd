"""EdgeIndex figures: upsert throughput (batches of 100, with and without a flush per write),
exact search latency at 10k points (dim 512) with a user filter matching 1% and 50%, and the
threads an open shard costs.

Run: .venv/bin/python bench/index_latency.py [--points 10000] [--queries 300]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable
from functools import partial
from pathlib import Path

import numpy as np

from memvault.index import EdgeIndex, IndexPoint, PointFilter, SparseVector

DIM = 512
BATCH = 100


def make_points(
    n: int, rng: np.random.Generator, user_of: Callable[[int], str] | None = None
) -> list[IndexPoint]:
    """Random unit vectors with 12 random words each; the `i`-th point belongs to `user_of(i)`.

    By default half the points belong to user "big" and the rest to users of 1% each.
    """
    vectors = rng.standard_normal((n, DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    per_small_user = max(n // 100, 1)
    points = []
    for i in range(n):
        if user_of is not None:
            user = user_of(i)
        else:
            user = "big" if i % 2 == 0 else f"u{(i // 2) // per_small_user}"
        tokens = sorted(set(int(t) for t in rng.integers(0, 5000, size=12)))
        points.append(
            IndexPoint(
                id=str(uuid.uuid4()),
                dense=vectors[i].tolist(),
                sparse=SparseVector(indices=tuple(tokens), values=tuple([1.0] * len(tokens))),
                payload={
                    "user_id": user,
                    "agent_id": "a1",
                    "readers": ["a1"],
                    "is_active": 1,
                    "note_type": "fact",
                    "topic_tags": [],
                    "created_at": 1_700_000_000 + i,
                    "model": "bench-512",
                },
            )
        )
    return points


def timed_ms(fn: Callable[[list[float]], object], queries: list[list[float]]) -> list[float]:
    samples = []
    for q in queries:
        start = time.perf_counter()
        fn(q)
        samples.append((time.perf_counter() - start) * 1000)
    return samples


def p(samples: list[float], q: float) -> float:
    return statistics.quantiles(samples, n=100)[int(q) - 1] if len(samples) > 1 else samples[0]


def upsert_rate(
    root: Path, points: list[IndexPoint], flush_every_write: bool, batch: int = BATCH
) -> float:
    index = EdgeIndex(root, DIM, flush_every_write=flush_every_write)
    start = time.perf_counter()
    for i in range(0, len(points), batch):
        index.upsert("bench", points[i : i + batch])
    elapsed = time.perf_counter() - start
    index.close()
    return len(points) / elapsed


def thread_count() -> int:
    return len(os.listdir("/proc/self/task"))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--points", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=300)
    args = parser.parse_args()
    rng = np.random.default_rng(7)
    points = make_points(args.points, rng)
    queries = rng.standard_normal((args.queries, DIM)).astype(np.float32)
    query_list = [q.tolist() for q in queries]
    sparse_q = SparseVector(indices=(11, 222, 3333), values=(1.0, 1.0, 1.0))

    with tempfile.TemporaryDirectory() as tmp:
        no_flush = upsert_rate(Path(tmp) / "a", points, flush_every_write=False)
        with_flush = upsert_rate(Path(tmp) / "b", points, flush_every_write=True)
        print(f"upsert, batches of {BATCH}, {args.points} points, dim {DIM}:")
        print(f"  WAL only          {no_flush:8.0f} points/s")
        print(f"  flush every write {with_flush:8.0f} points/s")
        singles = points[:500]
        one_no_flush = upsert_rate(Path(tmp) / "c", singles, flush_every_write=False, batch=1)
        one_flush = upsert_rate(Path(tmp) / "d", singles, flush_every_write=True, batch=1)
        print("upsert, one point per call (the API's path), 500 points:")
        print(
            f"  WAL only          {one_no_flush:8.0f} points/s ({1000 / one_no_flush:.2f} ms each)"
        )
        print(f"  flush every write {one_flush:8.0f} points/s ({1000 / one_flush:.2f} ms each)")

        index = EdgeIndex(Path(tmp) / "a", DIM)
        cases = {
            "no filter": PointFilter(),
            "user 50%": PointFilter(user_id="big", active_only=True),
            "user 1%": PointFilter(user_id="u3", active_only=True),
        }
        for name, where in cases.items():
            index.search_dense("bench", query_list[0], where, 10)  # open + warm
            dense = timed_ms(
                partial(index.search_dense, "bench", where=where, limit=10), query_list
            )
            hybrid = timed_ms(
                partial(
                    index.search_hybrid,
                    "bench",
                    sparse=sparse_q,
                    where=where,
                    limit=10,
                    prefetch=50,
                ),
                query_list,
            )
            print(
                f"exact search, {args.points} points, {name:9s}: dense p50 {p(dense, 50):6.2f} ms"
                f" p95 {p(dense, 95):6.2f} ms | hybrid p50 {p(hybrid, 50):6.2f} ms"
                f" p95 {p(hybrid, 95):6.2f} ms"
            )
        index.close()

        before = thread_count()
        many = EdgeIndex(Path(tmp) / "many", 8)
        for n in range(10):
            many.upsert(f"t{n}", [IndexPoint(id=str(uuid.uuid4()), dense=[1.0] * 8, payload={})])
            many.search_dense(f"t{n}", [1.0] * 8, PointFilter(), 1)
        opened = thread_count()
        many.close()
        print(
            f"threads: {before} before, {opened} with 10 open shards "
            f"({(opened - before) / 10:.1f} per shard), {thread_count()} after close"
        )


if __name__ == "__main__":
    main()
