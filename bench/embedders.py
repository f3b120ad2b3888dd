"""Load time, single-sentence latency and batch throughput of each embedder on this machine.

Texts are LoCoMo turns when ../shared/data is present (everyday conversation, the shape of
real memories), else generated sentences. Run: `.venv/bin/python bench/embedders.py`.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from memvault.embed import Embedder, make_embedder

LOCOMO = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo" / "locomo10.json"
BATCH_TEXTS = 512
BATCH_SIZE = 64
SINGLE_RUNS = 50


def sample_texts() -> tuple[list[str], str]:
    if LOCOMO.is_file():
        texts: list[str] = []
        for conversation in json.loads(LOCOMO.read_text(encoding="utf-8")):
            sessions = conversation["conversation"]
            for key in sorted(sessions):
                if key.startswith("session_") and isinstance(sessions[key], list):
                    texts.extend(f"{t['speaker']}: {t['text']}" for t in sessions[key])
        return texts[:BATCH_TEXTS], "LoCoMo turns"
    words = [
        "garden",
        "tomato",
        "violin",
        "lesson",
        "flight",
        "lisbon",
        "peanut",
        "allergy",
        "lease",
        "march",
    ]
    generated = [" ".join(words[(i + j) % len(words)] for j in range(12)) for i in range(512)]
    return generated, "generated sentences"


def timed(fn: Callable[[], object]) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def bench(name: str, data_dir: Path, texts: list[str]) -> None:
    embedder: Embedder = make_embedder(name, data_dir=data_dir)
    load_s = timed(lambda: embedder.embed_query("warm up"))  # first call loads the model
    singles = [timed(lambda i=i: embedder.embed_query(texts[i % len(texts)])) for i in range(50)]
    batches = [texts[i : i + BATCH_SIZE] for i in range(0, len(texts), BATCH_SIZE)]
    batch_s = timed(lambda: [embedder.embed_documents(batch) for batch in batches])
    singles.sort()
    print(
        f"{name:9s} {embedder.model_id:15s} dim={embedder.dimension:3d}  "
        f"load={load_s:6.2f}s  single p50={statistics.median(singles) * 1e3:6.1f}ms "
        f"p95={singles[int(0.95 * len(singles)) - 1] * 1e3:6.1f}ms  "
        f"batch({BATCH_SIZE})={len(texts) / batch_s:7.0f} texts/s"
    )


def main() -> int:
    texts, source = sample_texts()
    names = sys.argv[1:] or ["use-m3", "e5-small", "minilm"]
    load1, _, _ = os.getloadavg()
    print(
        f"{len(texts)} {source}, {os.cpu_count()} CPUs, load average {load1:.1f}; "
        "load = import + first embedding"
    )
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            bench(name, Path(tmp), texts)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
