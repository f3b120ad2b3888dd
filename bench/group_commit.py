"""Group commit on and off, interleaved in one run: K threads x M adds each, per round.

One vault (embedded default: SQLite, Edge shards, the real USE-m3 embedder, the screen, AES-GCM,
keyed BM25), K writer threads each in its own scope adding M distinct PII-free notes as fast as
they can. Rounds alternate group commit on and off on the same vault (`GroupCommitter.enabled`),
so load on the machine hits both alike. Per setting it prints adds/s (adds / summed round wall
time), p50/p99 add latency (ms), and, with group commit on, the mean batch size.

Run: .venv/bin/python -m bench.group_commit [--threads 8] [--adds 10] [--rounds 4]
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.hardening import sentence
from memvault.config import Settings
from memvault.embed import make_embedder
from memvault.runtime.factory import Services, open_services
from memvault.scope import Scope


def _round(services: Services, threads: int, adds: int, counter: Any) -> tuple[float, list[float]]:
    """K threads x M adds; the round's wall time and every add's latency (seconds)."""
    latencies: list[float] = []
    lock = threading.Lock()
    start = threading.Barrier(threads + 1)

    def writer(k: int) -> None:
        vault = services.vault.scoped(Scope("bench", f"user{k}", "agent"))
        mine: list[float] = []
        start.wait()
        for _ in range(adds):
            text = sentence(next(counter))
            t0 = time.perf_counter()
            vault.add(text)
            mine.append(time.perf_counter() - t0)
        with lock:
            latencies.extend(mine)

    workers = [threading.Thread(target=writer, args=(k,)) for k in range(threads)]
    for w in workers:
        w.start()
    start.wait()
    t0 = time.perf_counter()
    for w in workers:
        w.join()
    return time.perf_counter() - t0, latencies


def _pct(samples: Sequence[float], q: float) -> float:
    ordered = sorted(samples)
    return round(1000 * ordered[min(len(ordered) - 1, int(q * (len(ordered) - 1)))], 2)


def run(threads: int, adds: int, rounds: int, root: Path) -> dict[str, Any]:
    model = make_embedder("use-m3", data_dir=root)
    services = open_services(Settings(data_dir=root / "data", amem=False), embedder=model)
    try:
        services.tenants.create("bench")
        counter = itertools.count()
        committer = services.vault.group_commit
        _round(services, threads, 2, counter)  # warm: model, caches, corpus statistics
        wall = {"on": 0.0, "off": 0.0}
        samples: dict[str, list[float]] = {"on": [], "off": []}
        batches = jobs = 0
        for r in range(rounds):
            setting = "on" if r % 2 == 0 else "off"
            committer.enabled = setting == "on"
            before = committer.stats()
            seconds, latencies = _round(services, threads, adds, counter)
            after = committer.stats()
            wall[setting] += seconds
            samples[setting].extend(latencies)
            batches += after.batches - before.batches
            jobs += after.jobs - before.jobs
        result: dict[str, Any] = {"threads": threads, "adds_per_thread": adds, "rounds": rounds}
        for setting in ("on", "off"):
            result[setting] = {
                "adds_per_s": round(len(samples[setting]) / wall[setting], 1),
                "p50_ms": round(1000 * statistics.median(samples[setting]), 2),
                "p99_ms": _pct(samples[setting], 0.99),
            }
        result["on"]["mean_batch"] = round(jobs / batches, 2) if batches else None
        return result
    finally:
        services.close()


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--adds", type=int, default=10, help="adds per thread per round")
    parser.add_argument("--rounds", type=int, default=4, help="alternating on/off, on first")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        print(json.dumps(run(args.threads, args.adds, args.rounds, Path(tmp)), indent=2))


if __name__ == "__main__":
    main()
