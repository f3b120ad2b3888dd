"""Batch ingest over HTTP: notes/s of single adds vs 256-note batches, and mem0 import records/s.

Starts a real `memvault serve` (bench/load.py's `Server`: a fresh data directory, A-MEM as
configured, the screen, encryption and BM25 always on) and, from ONE client on loopback:

1. adds `--notes` notes one `POST /v1/memories` at a time (user `single`);
2. adds `--notes` other notes with `POST /v1/memories/batch`, `--batch` per request (user
   `batch`), then waits until the A-MEM jobs the batches left to the worker are done (the
   second figure counts that drain, so the batch path is not flattered by deferred work);
3. imports `--records` mem0 records (mem0's `get_all` JSON, built here) with the SDK's
   `Importer` (`memvault import`: `add_many`, 256 per request; user `import`).

Every text is distinct (`TextMaker`), so no add is short-cut by the exact-duplicate check.

    .venv/bin/python -m bench.batch_ingest [--notes 2000] [--records 2000] [--batch 256]
        [--amem on|off]

Writes bench/out/batch_ingest.json.
"""

from __future__ import annotations

import re
import tempfile
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx

from bench._harness import TextMaker, arg_parser, write_json
from bench.load import OPERATOR_KEY, Server

_JOBS = re.compile(r'^memvault_amem_jobs_total\{event="(\w+)"\} ([0-9.e+]+)$', re.M)


_OPERATOR = {"Authorization": f"Bearer {OPERATOR_KEY}"}


def amem_outstanding(base: str) -> int:
    """A-MEM jobs enqueued (inline or queued) and not finished yet, from `/metrics`."""
    counts = {
        k: float(v) for k, v in _JOBS.findall(httpx.get(f"{base}/metrics", headers=_OPERATOR).text)
    }
    started = counts.get("inline", 0) + counts.get("queued", 0)
    return int(started - counts.get("done", 0) - counts.get("failed", 0))


def wait_drained(base: str, timeout: float = 900.0) -> float:
    """Seconds until no A-MEM job is outstanding (polled every 50 ms)."""
    start = time.perf_counter()
    while amem_outstanding(base) > 0 and time.perf_counter() - start < timeout:
        time.sleep(0.05)
    return time.perf_counter() - start


def agent_key(base: str, admin: str, user: str) -> str:
    r = httpx.post(
        f"{base}/v1/admin/keys",
        json={"user_id": user, "agent_id": "agent"},
        headers={"Authorization": f"Bearer {admin}"},
    )
    r.raise_for_status()
    return str(r.json()["api_key"])


def single_adds(http: httpx.Client, texts: Sequence[str]) -> float:
    start = time.perf_counter()
    for text in texts:
        http.post("/v1/memories", json={"text": text}).raise_for_status()
    return time.perf_counter() - start


def batch_adds(http: httpx.Client, texts: Sequence[str], size: int) -> tuple[float, int]:
    start = time.perf_counter()
    errors = 0
    for i in range(0, len(texts), size):
        r = http.post(
            "/v1/memories/batch", json={"items": [{"text": t} for t in texts[i : i + size]]}
        )
        r.raise_for_status()
        errors += sum(1 for res in r.json()["results"] if "error" in res)
    return time.perf_counter() - start, errors


def mem0_export(texts: Sequence[str]) -> dict[str, Any]:
    """mem0's `Memory.get_all()` output for `texts`."""
    return {
        "results": [
            {
                "id": str(uuid.uuid4()),
                "memory": text,
                "hash": uuid.uuid4().hex,
                "metadata": None,
                "created_at": "2026-01-05T10:00:00-08:00",
                "updated_at": None,
                "user_id": "import",
            }
            for text in texts
        ]
    }


def run(notes: int, records: int, size: int, amem: bool) -> dict[str, Any]:
    from memvault.client.importer import Importer, read_mem0

    maker = TextMaker(35)
    with tempfile.TemporaryDirectory() as tmp:
        server = Server(Path(tmp) / "data", amem=amem)
        try:
            base = server.base
            op = {"Authorization": f"Bearer {OPERATOR_KEY}"}
            r = httpx.post(f"{base}/v1/operator/tenants", json={"tenant_id": "ingest"}, headers=op)
            r.raise_for_status()
            admin = str(r.json()["api_key"])
            report: dict[str, Any] = {"notes": notes, "records": records, "batch": size}
            report["amem"] = "on" if amem else "off"

            key = agent_key(base, admin, "single")
            with httpx.Client(
                base_url=base, headers={"Authorization": f"Bearer {key}"}, timeout=300
            ) as http:
                http.post("/v1/memories", json={"text": maker.memory()}).raise_for_status()  # warm
                seconds = single_adds(http, maker.memories(notes))
            report["single_notes_per_s"] = round(notes / seconds, 1)
            report["single_drain_s"] = round(wait_drained(base), 2)

            key = agent_key(base, admin, "batch")
            with httpx.Client(
                base_url=base, headers={"Authorization": f"Bearer {key}"}, timeout=300
            ) as http:
                seconds, errors = batch_adds(http, maker.memories(notes), size)
                drain = wait_drained(base)
            report["batch_notes_per_s"] = round(notes / seconds, 1)
            report["batch_item_errors"] = errors
            report["batch_amem_drain_s"] = round(drain, 2)
            report["batch_notes_per_s_with_drain"] = round(notes / (seconds + drain), 1)
            report["ratio"] = round(report["batch_notes_per_s"] / report["single_notes_per_s"], 2)
            report["ratio_with_drain"] = round(
                report["batch_notes_per_s_with_drain"] / report["single_notes_per_s"], 2
            )

            key = agent_key(base, admin, "import")
            loaded = read_mem0(mem0_export(maker.memories(records)))
            start = time.perf_counter()
            outcome = Importer(base, api_key=key).run(loaded).as_dict()
            seconds = time.perf_counter() - start
            drain = wait_drained(base)
            report["import_added"] = outcome["added"]
            report["import_records_per_s"] = round(records / seconds, 1)
            report["import_amem_drain_s"] = round(drain, 2)
            report["import_records_per_s_with_drain"] = round(records / (seconds + drain), 1)
        finally:
            server.stop()
    return report


def main(argv: Sequence[str] | None = None) -> None:
    parser = arg_parser(__doc__)
    parser.add_argument("--notes", type=int, default=2000, help="notes per add phase")
    parser.add_argument("--records", type=int, default=2000, help="mem0 records to import")
    parser.add_argument("--batch", type=int, default=256, help="items per batch request")
    parser.add_argument("--amem", choices=("on", "off"), default="on", help="A-MEM in the server")
    args = parser.parse_args(argv)
    report = run(args.notes, args.records, args.batch, args.amem == "on")
    path = write_json("batch_ingest.json", report)
    for name, value in report.items():
        print(f"{name}: {value}")
    print(f"written to {path}")


if __name__ == "__main__":
    main()
