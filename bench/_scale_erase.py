"""`bench.scale --scenario erase`: another user's searches before and during a big erase.

One tenant (on SQLite + Edge by default, or PostgreSQL with `--database-url`): a user with
`--erase-notes` notes (10,000), a reader with 1,000, and further users of 1,000 up to
`--tenant-notes`. A reader thread runs full-mode searches as another user for
`--before-s` seconds, then during a signed-receipt erase job of the big user (count, revoke,
shred, vectors, rows, scrub, verify, sign). Reported: the reader's p50/p95 before and during,
the p95 ratio (target <= 3x, issue 35), the erase's duration and whether its receipt verified.
It also times erasing a 1k user and one agent of a 2k user (`--small-erases`).

On PostgreSQL a schema and a keystore database are created for the run and dropped after it
(the URL must be a superuser's, as in `bench.scale --scenario scrub`).
"""

from __future__ import annotations

import argparse
import base64
import os
import statistics
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bench._harness import percentile, sentence

QUERIES = ("violet garden plan", "winter ticket", "piano by the river", "orange lamp harbor")
TENANT = "bench"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The erase scenario's options."""
    group = parser.add_argument_group("erase scenario")
    group.add_argument("--erase-notes", type=int, default=10_000, help="the erased user's notes")
    group.add_argument("--tenant-notes", type=int, default=20_000, help="notes in the tenant")
    group.add_argument("--before-s", type=float, default=3.0, help="seconds of searches before")
    group.add_argument("--batch", type=int, default=500, help="notes per add_many while loading")
    group.add_argument("--small-erases", action="store_true", help="also a 1k user and an agent")


def fill(services: Any, user: str, agents: tuple[str, ...], count: int, batch: int) -> None:
    """Add `count` notes for `user`, spread over `agents`, in batches of `batch`."""
    from memvault.scope import Scope
    from memvault.vault.drafts import NoteDraft

    done = 0
    while done < count:
        size = min(batch, count - done)
        agent = agents[(done // batch) % len(agents)]
        view = services.vault.scoped(Scope(TENANT, user, agent))
        view.add_many([NoteDraft(f"{user} {sentence(done + i)}") for i in range(size)])
        done += size


def _search_loop(services: Any, stop: threading.Event, out: list[float]) -> None:
    from memvault.scope import Scope

    view = services.vault.scoped(Scope(TENANT, "reader", "a1"))
    i = 0
    while True:  # at least one search, even when the erase is over at once
        start = time.perf_counter()
        view.search(QUERIES[i % len(QUERIES)], limit=10, mode="full")
        out.append((time.perf_counter() - start) * 1000)
        i += 1
        if stop.is_set():
            return


def timed_erase(services: Any, user: str, agent: str | None) -> tuple[float, dict[str, Any]]:
    """Run one erase job to its signed receipt; its seconds and the receipt."""
    from memvault.compliance.wiring import install

    jobs = install(services).erasures
    start = time.perf_counter()
    receipt = jobs.run(TENANT, jobs.start(TENANT, user, agent, "bench"))
    return time.perf_counter() - start, receipt


def searches_during(services: Any, user: str, before_s: float) -> dict[str, Any]:
    """The reader's p50/p95 for `before_s` seconds, then while `user` is erased."""
    before: list[float] = []
    stop = threading.Event()
    worker = threading.Thread(target=_search_loop, args=(services, stop, before))
    worker.start()
    time.sleep(before_s)
    stop.set()
    worker.join()
    during: list[float] = []
    stop = threading.Event()
    worker = threading.Thread(target=_search_loop, args=(services, stop, during))
    worker.start()
    seconds, receipt = timed_erase(services, user, None)
    stop.set()
    worker.join()
    p95_before = percentile(before, 95)
    p95_during = percentile(during, 95) if during else None
    return {
        "erase_s": round(seconds, 3),
        "verified": bool(receipt["receipt"]["verified"]),
        "search_before_p50_ms": round(statistics.median(before), 2),
        "search_before_p95_ms": round(p95_before, 2),
        "search_during_p50_ms": round(statistics.median(during), 2) if during else None,
        "search_during_p95_ms": round(p95_during, 2) if p95_during is not None else None,
        "searches_before": len(before),
        "searches_during": len(during),
        "p95_ratio": round(p95_during / p95_before, 2) if p95_during is not None else None,
    }


@contextmanager
def _services(root: Path, database_url: str | None) -> Iterator[Any]:
    """Embedded services in `root`: SQLite, or a fresh schema and keystore database on PG."""
    from memvault.embed import make_embedder
    from memvault.runtime.factory import open_services

    embedder = make_embedder("use-m3", data_dir=Path("/nonexistent-unused"))
    if not database_url:
        from bench._harness import open_vault

        services = open_vault(root, embedder)
        try:
            yield services
        finally:
            services.close()
        return
    from sqlalchemy.engine import make_url

    from bench._harness import autocommit, ensure_wal_recycle_off
    from memvault.config import Settings
    from memvault.store.database import upgrade_database

    schema = "mvscale_" + uuid.uuid4().hex[:10]
    keystore_db = "mvscaleks_" + uuid.uuid4().hex[:10]
    ensure_wal_recycle_off(database_url)
    upgrade_database(database_url, schema=schema)
    autocommit(database_url, f'CREATE DATABASE "{keystore_db}"')
    try:
        os.environ["MV_SCALE_MASTER"] = base64.b64encode(os.urandom(32)).decode()
        url = make_url(database_url)
        settings = Settings(
            data_dir=root,
            database_url=url.set(username="memvault_app", password=None).render_as_string(
                hide_password=False
            ),
            db_schema=schema,
            database_admin_url=database_url,
            keystore_url=url.set(database=keystore_db).render_as_string(hide_password=False),
            master_key_env="MV_SCALE_MASTER",
            embed_process=False,
        )
        services = open_services(settings, embedder=embedder)
        try:
            yield services
        finally:
            services.close()
    finally:
        autocommit(database_url, f'DROP DATABASE IF EXISTS "{keystore_db}" WITH (FORCE)')
        autocommit(database_url, f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Load the tenant, erase the big user beside the reader's searches; the figures."""
    big, reader = args.erase_notes, min(1_000, args.erase_notes)
    small = args.small_erases
    rest = max(args.tenant_notes - big - reader - (3_000 if small else 0), 0)
    plan = [("big", big), ("reader", reader)]
    if small:
        plan += [("mid", 1_000), ("pair", 2_000)]
    plan += [(f"user{n}", 1_000) for n in range(rest // 1_000)]
    with (
        tempfile.TemporaryDirectory() as tmp,
        _services(Path(tmp) / "data", getattr(args, "database_url", None)) as services,
    ):
        services.tenants.create(TENANT)
        started = time.perf_counter()
        for user, count in plan:
            fill(services, user, ("a1", "a2"), count, args.batch)
        result: dict[str, Any] = {
            "backend": "postgresql" if services.db.is_postgres else "sqlite",
            "tenant_notes": sum(n for _, n in plan),
            "load_s": round(time.perf_counter() - started, 1),
        }
        verified = True
        if small:
            mid_s, mid = timed_erase(services, "mid", None)
            agent_s, pair = timed_erase(services, "pair", "a1")
            result["erase_user_1k_s"] = round(mid_s, 3)
            result["erase_agent_1k_of_2k_s"] = round(agent_s, 3)
            verified = bool(mid["receipt"]["verified"] and pair["receipt"]["verified"])
        during = searches_during(services, "big", args.before_s)
        result["erase_user"] = during
        result["p95_ratio"] = during["p95_ratio"]
        result["all_verified"] = verified and during["verified"]
    return result
