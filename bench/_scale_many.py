"""Many users: 1,000 users x 100 notes in one tenant plus 100 small tenants, on one machine.

The `many` scenario of `bench/scale.py` (which dispatches to `add_arguments` and `run`). It
builds the data in a fresh data directory (batched `add_many`, the real embedder, the screen and
encryption on), closes it, and measures what a deployment with many partitions meets:

1. **startup to /healthz** of a real `memvault serve` subprocess on that data directory, twice:
   the first start runs the one-time upgrades (once per data directory), the second is every
   later start;
2. in a fresh process (spawned, so the build's memory does not count): the startup reconcile,
   **a maintenance pass with nothing changed** (the reconciler and every sweeper the server
   registers, compliance included; median of `--passes`), **cold vs warm first search** (a
   user whose partition is closed, then the same user again), and the **peak RSS** (VmHWM)
   under a search load that touches every user once, with the open-partition budget of the
   settings (`--budget-mb`, `--max-open`).

`--database-url` (an owner URL, e.g. postgresql+psycopg://postgres@127.0.0.1:5432/test) runs
it on PostgreSQL: a fresh schema, the app serving as `memvault_app`, dropped afterwards.

    nice .venv/bin/python -m bench.scale --scenario many [--users 1000] [--notes-per-user 100]
        [--small-tenants 100] [--database-url URL]

Targets (issue 35): peak RSS <= 1.5 GiB, pass with nothing changed <= 100 ms, startup <= 10 s.
"""

from __future__ import annotations

import argparse
import multiprocessing
import statistics
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from bench._harness import TextMaker, percentile, sentence

TENANT = "many"
AGENT = "agent"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The scenario's options."""
    parser.add_argument("--users", type=int, default=1000)
    parser.add_argument("--notes-per-user", type=int, default=100)
    parser.add_argument("--small-tenants", type=int, default=100)
    parser.add_argument("--small-notes", type=int, default=10, help="notes per small tenant")
    parser.add_argument("--budget-mb", type=float, default=512.0)
    parser.add_argument("--max-open", type=int, default=64)
    parser.add_argument("--passes", type=int, default=5, help="no-change passes to time")
    parser.add_argument("--data-dir", type=Path, default=None, help="keep the data here")


def _settings(data: Path, pg: dict[str, str], args: argparse.Namespace) -> Any:
    from memvault.config import Settings

    fields: dict[str, Any] = {
        "data_dir": data,
        "amem": False,
        "embed_process": False,
        "index_max_open": args.max_open,
        "index_memory_budget_mb": args.budget_mb,
        **pg,
    }
    return Settings(**fields)


def _build(data: Path, pg: dict[str, str], args: argparse.Namespace) -> dict[str, float]:
    from memvault.embed import make_embedder
    from memvault.runtime.factory import open_services
    from memvault.scope import Scope
    from memvault.vault.drafts import NoteDraft

    settings = _settings(data, pg, args)
    services = open_services(settings, embedder=make_embedder("use-m3", data_dir=data))
    started = time.perf_counter()
    try:
        services.tenants.create(TENANT)
        n = 0
        for u in range(args.users):
            view = services.vault.scoped(Scope(TENANT, f"u{u}", AGENT))
            drafts = [NoteDraft(f"u{u} {sentence(n + i)}") for i in range(args.notes_per_user)]
            view.add_many(drafts)
            n += len(drafts)
            if u % 100 == 99:
                print(f"built {u + 1}/{args.users} users", flush=True)
        for t in range(args.small_tenants):
            services.tenants.create(f"small{t}")
            view = services.vault.scoped(Scope(f"small{t}", "u0", AGENT))
            view.add_many([NoteDraft(f"s{t} {sentence(n + i)}") for i in range(args.small_notes)])
            n += args.small_notes
        services.start()  # the startup pass clears the build's marks, as a server would
    finally:
        services.close()
    seconds = time.perf_counter() - started
    return {"notes": n, "build_s": round(seconds, 1), "notes_per_s": round(n / seconds, 1)}


def _startup(data: Path, pg: dict[str, str], args: argparse.Namespace) -> float:
    """Seconds from spawning `memvault serve` to its first 200 on /healthz."""
    from bench.load import Server

    settings = {"embed_process": "off", "index_max_open": str(args.max_open)}
    settings["index_memory_budget_mb"] = str(args.budget_mb)
    settings.update(pg)
    started = time.perf_counter()
    server = Server(data, Path(__file__).resolve().parents[1] / "src", False, settings)
    seconds = time.perf_counter() - started
    server.stop()
    return seconds


def _vm_hwm_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _measure(data: Path, pg: dict[str, str], args: argparse.Namespace, out: Any) -> None:
    """In a fresh process: startup pass, no-change passes, cold/warm searches, peak RSS."""
    from memvault.compliance.wiring import install
    from memvault.embed import make_embedder
    from memvault.runtime.factory import open_services
    from memvault.scope import Scope

    services = open_services(
        _settings(data, pg, args), embedder=make_embedder("use-m3", data_dir=data)
    )
    try:
        install(services)
        t0 = time.perf_counter()
        services.start()
        startup_pass_ms = (time.perf_counter() - t0) * 1000
        index: Any = services.index
        opens_at_start = getattr(index, "shard_opens", -1)
        assert services.maintenance is not None
        passes = []
        for _ in range(args.passes):
            t0 = time.perf_counter()
            services.maintenance.run_once()
            passes.append((time.perf_counter() - t0) * 1000)
        opens_by_passes = getattr(index, "shard_opens", -1) - opens_at_start
        questions = TextMaker(7)
        cold, warm = [], []
        for u in range(args.users):
            view = services.vault.scoped(Scope(TENANT, f"u{u}", AGENT))
            q = questions.question()
            t0 = time.perf_counter()
            view.search(q)
            cold.append((time.perf_counter() - t0) * 1000)
            t0 = time.perf_counter()
            view.search(q + " again")
            warm.append((time.perf_counter() - t0) * 1000)
        t0 = time.perf_counter()
        services.maintenance.run_once()
        after_load_ms = (time.perf_counter() - t0) * 1000
        open_now = len(getattr(index, "open_partitions", list)())
        memory = getattr(index, "open_memory_mib", lambda: 0.0)()
    finally:
        services.close()
    out.put(
        {
            "startup_reconcile_ms": round(startup_pass_ms, 1),
            "shard_opens_by_startup": opens_at_start,
            "pass_nothing_changed_ms": round(statistics.median(passes), 2),
            "pass_nothing_changed_ms_all": [round(p, 2) for p in passes],
            "pass_after_search_load_ms": round(after_load_ms, 2),
            "shard_opens_by_passes": opens_by_passes,
            "cold_search_ms": {
                "p50": round(percentile(cold, 50), 1),
                "p95": round(percentile(cold, 95), 1),
            },
            "warm_search_ms": {
                "p50": round(percentile(warm, 50), 1),
                "p95": round(percentile(warm, 95), 1),
            },
            "open_partitions_after_load": open_now,
            "open_partitions_estimated_mib": round(memory, 1),
            "peak_rss_mib": round(_vm_hwm_mib(), 1),
        }
    )


def _postgres(admin: str) -> tuple[dict[str, str], str]:
    from sqlalchemy.engine import make_url

    from memvault.store.database import upgrade_database

    schema = "mvmany_" + uuid.uuid4().hex[:10]
    upgrade_database(admin, schema=schema)
    app = make_url(admin).set(username="memvault_app", password=None)
    return {
        "database_url": app.render_as_string(hide_password=False),
        "db_schema": schema,
        "database_admin_url": admin,
    }, schema


def _drop_schema(admin: str, schema: str) -> None:
    from sqlalchemy import create_engine, text

    engine = create_engine(admin, isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        conn.execute(text(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'))
    engine.dispose()


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Build, then measure (see the module); returns the figures with the targets."""
    pg: dict[str, str] = {}
    schema = None
    if args.database_url:
        pg, schema = _postgres(args.database_url)
    tmp = None
    if args.data_dir is None:
        tmp = tempfile.TemporaryDirectory()
        data = Path(tmp.name) / "data"
    else:
        data = args.data_dir
    try:
        built = _build(data, pg, args)
        first_startup_s = _startup(data, pg, args)  # runs the one-time upgrades once
        startup_s = _startup(data, pg, args)
        ctx = multiprocessing.get_context("spawn")
        out = ctx.Queue()
        child = ctx.Process(target=_measure, args=(data, pg, args, out))
        child.start()
        measured = out.get(timeout=3600)
        child.join()
    finally:
        if tmp is not None:
            tmp.cleanup()
        if schema is not None:
            _drop_schema(args.database_url, schema)
    return {
        "backend": "postgresql" if pg else "sqlite",
        "users": args.users,
        "notes_per_user": args.notes_per_user,
        "small_tenants": args.small_tenants,
        "budget_mb": args.budget_mb,
        "max_open": args.max_open,
        **built,
        "first_startup_to_healthz_s": round(first_startup_s, 2),
        "startup_to_healthz_s": round(startup_s, 2),
        **measured,
        "targets": {
            "peak_rss_mib": 1536,
            "pass_nothing_changed_ms": 100,
            "startup_to_healthz_s": 10,
        },
    }


if __name__ == "__main__":  # `python -m bench.scale --scenario many` is the way to run it
    import sys

    from bench.scale import main

    sys.exit(main(["--scenario", "many", *sys.argv[1:]]))
