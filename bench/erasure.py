"""How long an erase takes, and what it does to the tenant's searches while it runs.

One tenant of `--total` notes (100,000 by default) on the embedded default (SQLite + Edge, one
index partition per user): a user with 10k notes, a user with 1k notes, and the rest spread
over users of 1k. It measures, each as a signed-receipt erase job (count, revoke, shred,
vectors, rows, scrub, verify, sign):
- erasing the 1k user, and the 10k user (the user's partition folder is deleted);
- erasing one agent holding half of a 2k user (that partition is rebuilt without it);
- the tenant's search p50/p95 (another user, dense and full modes) while the 10k erase runs,
  against the same searches just before (a ratio from one run).

Run: .venv/bin/python -m bench.erasure [--total 100000] [--batch 500]
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from bench._harness import arg_parser, open_vault, percentile, sentence
from memvault.compliance.wiring import install
from memvault.embed import make_embedder
from memvault.runtime.factory import Services
from memvault.scope import Scope
from memvault.vault.drafts import NoteDraft

QUERIES = ("violet garden plan", "winter ticket", "piano by the river", "orange lamp harbor")


def fill(services: Services, user: str, agents: tuple[str, ...], count: int, batch: int) -> None:
    """Add `count` notes for `user`, spread over `agents`, in batches of `batch`."""
    done = 0
    while done < count:
        size = min(batch, count - done)
        agent = agents[(done // batch) % len(agents)]
        view = services.vault.scoped(Scope("bench", user, agent))
        view.add_many([NoteDraft(f"{user} {sentence(done + i)}") for i in range(size)])
        done += size


def search_latencies(services: Services, stop: threading.Event, out: list[float]) -> None:
    view = services.vault.scoped(Scope("bench", "reader", "a1"))
    i = 0
    while not stop.is_set():
        start = time.perf_counter()
        view.search(QUERIES[i % len(QUERIES)], limit=10, mode="full")
        out.append((time.perf_counter() - start) * 1000)
        i += 1


def timed_erase(services: Services, user: str, agent: str | None) -> tuple[float, dict[str, Any]]:
    jobs = install(services).erasures
    start = time.perf_counter()
    receipt = jobs.run("bench", jobs.start("bench", user, agent, "bench"))
    return time.perf_counter() - start, receipt


def searches_during(services: Services, user: str, agent: str | None) -> dict[str, Any]:
    """Search p50/p95 for 3 s before, then while erasing `user`; the erase time."""
    before: list[float] = []
    stop = threading.Event()
    worker = threading.Thread(target=search_latencies, args=(services, stop, before))
    worker.start()
    time.sleep(3.0)
    stop.set()
    worker.join()
    during: list[float] = []
    stop = threading.Event()
    worker = threading.Thread(target=search_latencies, args=(services, stop, during))
    worker.start()
    seconds, receipt = timed_erase(services, user, agent)
    stop.set()
    worker.join()
    return {
        "erase_s": round(seconds, 3),
        "verified": receipt["receipt"]["verified"],
        "search_before_p50_ms": round(statistics.median(before), 2),
        "search_before_p95_ms": round(percentile(before, 95), 2),
        "search_during_p50_ms": round(statistics.median(during), 2) if during else None,
        "search_during_p95_ms": round(percentile(during, 95), 2) if during else None,
        "searches_during": len(during),
    }


def main(argv: list[str] | None = None) -> int:
    parser = arg_parser(__doc__)
    parser.add_argument("--total", type=int, default=100_000)
    parser.add_argument("--batch", type=int, default=500)
    args = parser.parse_args(argv)
    big, mid, pair = 10_000, 1_000, 2_000
    rest = max(args.total - big - mid - pair - 1_000, 0)
    embedder = make_embedder("use-m3", data_dir=Path("/nonexistent-unused"))
    with tempfile.TemporaryDirectory() as tmp:
        services = open_vault(Path(tmp) / "data", embedder)
        services.tenants.create("bench")
        started = time.perf_counter()
        plan = [("big", big), ("mid", mid), ("pair", pair), ("reader", 1_000)]
        plan += [(f"user{n}", 1_000) for n in range(rest // 1_000)]
        loaded = 0
        for user, count in plan:
            fill(services, user, ("a1", "a2"), count, args.batch)
            loaded += count
            print(f"loaded {loaded}/{args.total} notes", file=sys.stderr, flush=True)
        load_s = time.perf_counter() - started
        mid_s, mid_receipt = timed_erase(services, "mid", None)
        agent_s, agent_receipt = timed_erase(services, "pair", "a1")
        during = searches_during(services, "big", None)
        result = {
            "tenant_notes": loaded,
            "load_s": round(load_s, 1),
            "erase_user_1k_s": round(mid_s, 3),
            "erase_agent_1k_of_2k_s": round(agent_s, 3),
            "erase_user_10k": during,
            "all_verified": bool(
                mid_receipt["receipt"]["verified"]
                and agent_receipt["receipt"]["verified"]
                and during["verified"]
            ),
        }
        services.close()
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
