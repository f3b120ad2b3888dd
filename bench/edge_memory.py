"""What a loaded Edge partition costs in RSS, by memory placement and payload indexes.

Builds `--partitions` shards of `--points` points each (512-d random unit vectors, two BM25
words, memvault's payload fields), one point per update as the add path writes, in two
layouts:

- `before`: the engine's default placement (dense vectors `Cached`) and seven keyword/integer
  payload indexes (`user_id`, `agent_id`, `readers`, `note_type`, `topic_tags`, `is_active`,
  `alias_of`): memvault's shards until 2026-12-02;
- `now`: `ShardFactory`'s configuration (dense vectors `Cold`, the four indexes of a search's
  scope filter).

Then, in a fresh child process per layout and round (layouts alternated), loads every
partition, runs `--queries` filtered dense searches on each, and reports the RSS the load
added, the RSS after the searches, where it sits (`/proc/self/smaps`, by file), the search
p50, and a digest of the results (equal digests: the same hits in the same order).

Run: .venv/bin/python -m bench.edge_memory [--partitions 5] [--points 5000] [--rounds 2]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import qdrant_edge as edge

from bench._harness import rss_mib, smaps_mib
from memvault.vault.index._edge_convert import edge_filter
from memvault.vault.index._edge_shards import ShardFactory, _payload_indexes
from memvault.vault.index.base import DENSE, SPARSE, PointFilter

DIM = 512
USER = "u" * 32
READERS = ["a" * 32, "*"]


def before_config() -> edge.EdgeConfig:
    """memvault's shard configuration before this change (the engine's default placement)."""
    return edge.EdgeConfig(
        vectors={DENSE: edge.EdgeVectorParams(size=DIM, distance=edge.Distance.Cosine)},
        sparse_vectors={SPARSE: edge.EdgeSparseVectorParams(modifier=edge.Modifier.Idf)},
        max_search_threads=1,
        wal_enabled=True,
    )


def before_indexes() -> dict[str, Any]:
    return {
        "user_id": edge.KeywordIndexParams(is_tenant=True),
        "agent_id": edge.KeywordIndexParams(),
        "readers": edge.KeywordIndexParams(),
        "note_type": edge.KeywordIndexParams(),
        "topic_tags": edge.KeywordIndexParams(),
        "is_active": edge.IntegerIndexParams(lookup=True, range=False),
        "alias_of": edge.KeywordIndexParams(),
    }


def layout(name: str) -> tuple[edge.EdgeConfig, dict[str, Any]]:
    if name == "before":
        return before_config(), before_indexes()
    return ShardFactory(DIM).config(), _payload_indexes()


def build(root: Path, name: str, partitions: int, points: int) -> float:
    """Write the partitions; return microseconds per single-point upsert."""
    config, indexes = layout(name)
    rng = np.random.default_rng(42)
    spent = 0.0
    for p in range(partitions):
        folder = root / name / f"u-{p}"
        folder.mkdir(parents=True)
        shard = edge.EdgeShard.create(str(folder), config)
        for field, params in indexes.items():
            shard.update(edge.UpdateOperation.create_field_index(field, params))
        vectors = rng.standard_normal((points, DIM)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        for i in range(points):
            payload = {
                "user_id": USER,
                "agent_id": READERS[0],
                "readers": READERS[: 1 + i % 2],
                "is_active": 1,
                "note_type": "memory",
                "topic_tags": [f"t{i % 5}"],
                "created_at": 1_800_000_000 + i,
            }
            point = edge.Point(
                id=i + 1,
                vector={
                    DENSE: vectors[i].tolist(),
                    SPARSE: edge.SparseVector(indices=[i % 97, 100 + i % 13], values=[1.0, 0.5]),
                },
                payload=payload,
            )
            began = time.perf_counter()
            shard.update(edge.UpdateOperation.upsert_points([point]))
            spent += time.perf_counter() - began
        shard.flush()
        shard.close()
    return spent / (partitions * points) * 1e6


def _segment_file(rel: str) -> str:
    """A partition file's kind: `u-N/segments/<id>/FILE` gives FILE, `u-N/wal/…` gives `wal`."""
    parts = Path(rel).parts
    return parts[3] if parts[1] == "segments" and len(parts) > 3 else parts[1]


def _rss_by_file(root: Path) -> dict[str, float]:
    """RSS of the mappings of files under `root`, by file kind (segment file or WAL)."""
    return {
        name.removeprefix("data:"): mib
        for name, mib in smaps_mib(root, _segment_file).items()
        if name.startswith("data:")
    }


def measure(root: Path, name: str, queries: int) -> dict[str, Any]:
    """The child's part: load every partition of one layout, search, report."""
    config, _ = layout(name)
    start = rss_mib()
    shards = [edge.EdgeShard.load(str(d), config) for d in sorted((root / name).iterdir())]
    loaded = rss_mib()
    rng = np.random.default_rng(7)
    flt = edge_filter(PointFilter(user_id=USER, readers_any=(READERS[0], "*"), active_only=True))
    digest = hashlib.sha256()
    latencies = []
    for shard in shards:
        for _ in range(queries):
            q = rng.standard_normal(DIM)
            request = edge.QueryRequest(
                limit=30,
                query=edge.Query.Nearest((q / np.linalg.norm(q)).tolist(), using=DENSE),
                filter=flt,
                with_payload=True,
            )
            began = time.perf_counter()
            hits = shard.query(request)
            latencies.append(time.perf_counter() - began)
            digest.update(repr([(h.id, round(h.score, 6)) for h in hits]).encode())
    return {
        "load_rss_mib": round(loaded - start, 1),
        "after_search_rss_mib": round(rss_mib() - start, 1),
        "by_file": _rss_by_file(root / name),
        "search_p50_ms": round(statistics.median(latencies) * 1000, 3),
        "digest": digest.hexdigest()[:12],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", type=int, default=5)
    parser.add_argument("--points", type=int, default=5000)
    parser.add_argument("--queries", type=int, default=200, help="searches per partition")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--measure", nargs=2, metavar=("ROOT", "LAYOUT"), help=argparse.SUPPRESS)
    a = parser.parse_args(argv)
    if a.measure:
        print(json.dumps(measure(Path(a.measure[0]), a.measure[1], a.queries)))
        return 0
    with tempfile.TemporaryDirectory(prefix="edge-memory-") as tmp:
        root = Path(tmp)
        for name in ("before", "now"):
            micros = build(root, name, a.partitions, a.points)
            print(f"{name:6s} built {a.partitions} x {a.points} points: {micros:.0f} µs per upsert")
        for r in range(a.rounds):
            for name in ("before", "now"):
                child = [sys.executable, "-m", "bench.edge_memory", "--measure", str(root), name]
                out = subprocess.run(
                    [*child, "--queries", str(a.queries)],
                    check=True,
                    capture_output=True,
                    text=True,
                )
                got = json.loads(out.stdout)
                print(
                    f"round {r + 1} {name:6s} load +{got['load_rss_mib']} MiB, after searches"
                    f" +{got['after_search_rss_mib']} MiB, search p50 {got['search_p50_ms']} ms,"
                    f" results {got['digest']}"
                )
                print(f"    by file (MiB): {got['by_file']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
