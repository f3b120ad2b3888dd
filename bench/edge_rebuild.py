"""EdgeIndex physical erasure costs: rebuilding one user's partition, and dropping one.

For each size (1k and 10k points of dimension 512, each with a sparse vector of 12 words), one
user's partition is filled and flushed, 1% of its points are deleted by id (a purge), and
`compact` rebuilds it (the figure: live points scrolled with vectors and payload into a fresh
shard, flushed, closed, swapped in, the old folder deleted). Then `delete_where(user_id=...)`
drops the partition (close and delete the folder). Each figure is the median of `--repeat` runs
on fresh folders.

Run: .venv/bin/python -m bench.edge_rebuild [--sizes 1000 10000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from bench import index_latency
from memvault.index import EdgeIndex, IndexPoint, PointFilter

DIM = index_latency.DIM
BATCH = 500
NS = "bench-tenant"
USER = "bench-user"


def make_points(n: int, rng: np.random.Generator) -> list[IndexPoint]:
    """`n` points of one user with random unit vectors and 12 random words each."""
    return index_latency.make_points(n, rng, user_of=lambda _i: USER)


def one_run(points: list[IndexPoint]) -> tuple[float, float]:
    """(rebuild seconds, drop seconds) on a fresh root."""
    with tempfile.TemporaryDirectory() as tmp:
        index = EdgeIndex(Path(tmp), DIM)
        for start in range(0, len(points), BATCH):
            index.upsert(NS, points[start : start + BATCH])
        index.flush()
        index.delete(NS, [p.id for p in points[: max(len(points) // 100, 1)]])
        start = time.perf_counter()
        rebuilt = index.compact(NS)
        rebuild_s = time.perf_counter() - start
        assert rebuilt == 1
        expected = len(points) - max(len(points) // 100, 1)
        assert index.count(NS, PointFilter(user_id=USER)) == expected
        start = time.perf_counter()
        index.delete_where(NS, PointFilter(user_id=USER))
        drop_s = time.perf_counter() - start
        assert not index.partition_path(NS, USER).exists()
        index.close()
    return rebuild_s, drop_s


def main() -> None:
    """Print the median rebuild and drop times per partition size."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    rng = np.random.default_rng(7)
    print(f"EdgeIndex partition rebuild and drop, dim {DIM}, median of {args.repeat} runs")
    print(f"{'points':>8} {'rebuild s':>10} {'points/s':>10} {'drop ms':>9}")
    for size in args.sizes:
        points = make_points(size, rng)
        runs = [one_run(points) for _ in range(args.repeat)]
        rebuild = statistics.median(r for r, _ in runs)
        drop = statistics.median(d for _, d in runs)
        live = size - max(size // 100, 1)
        print(f"{size:>8} {rebuild:>10.3f} {live / rebuild:>10.0f} {drop * 1000:>9.1f}")


if __name__ == "__main__":
    main()
