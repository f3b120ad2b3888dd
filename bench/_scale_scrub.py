"""What the PostgreSQL keystore scrub costs an erase (docs/erasure.md, "Scale path").

On a PostgreSQL keystore every shred ends with `VACUUM FULL` of the keystore tables,
`pg_switch_wal()` and `CHECKPOINT` (`memvault.keyring._pg_scrub`). This bench builds the scale
path on a local PostgreSQL: a data schema migrated by the owner and served by the app role, a
keystore in a database of its own holding `--scopes` data keys of other users (the keystore's
size is what `VACUUM FULL` rewrites), and `--users` users of `--notes` notes each. It erases the
users one by one as signed-receipt jobs, alternating the scrub on and off (off: the keystore's
`scrub` replaced by a no-op for that erase), so both halves share the machine's load, and it
times the scrub alone. Prints one JSON object: medians and the on/off ratio from one run.

The `scrub` scenario of `bench.scale` (PostgreSQL only: it needs `--database-url`, a superuser
URL; the server needs wal_recycle = off):
.venv/bin/python -m bench.scale --scenario scrub --database-url URL [--scrub-notes 200]
[--scrub-users 6] [--scrub-scopes 5000]
"""

from __future__ import annotations

import argparse
import base64
import os
import statistics
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from sqlalchemy.engine import make_url

from bench._harness import autocommit, ensure_wal_recycle_off, sentence
from memvault.compliance.wiring import install
from memvault.config import Settings
from memvault.embed import make_embedder
from memvault.runtime.factory import Services, open_services
from memvault.scope import Scope
from memvault.store.database import upgrade_database
from memvault.vault.drafts import NoteDraft


def erase_seconds(services: Services, user: str) -> float:
    jobs = install(services).erasures
    start = time.perf_counter()
    receipt = jobs.run("bench", jobs.start("bench", user, None, "bench"))
    elapsed = time.perf_counter() - start
    assert receipt["receipt"]["verified"], "an erase left something behind"
    return elapsed


def measure(services: Services, args: argparse.Namespace) -> dict[str, Any]:
    services.tenants.create("bench")
    keyring = services.keyring
    for i in range(args.scrub_scopes):  # other users' data keys: what VACUUM FULL rewrites
        keyring.aead_for(Scope("bench", f"other{i}", "a1"))
    users = [f"erased{i}" for i in range(args.scrub_users)]
    for user in users:
        view = services.vault.scoped(Scope("bench", user, "a1"))
        for start in range(0, args.scrub_notes, 100):
            size = min(100, args.scrub_notes - start)
            view.add_many([NoteDraft(f"{user} {sentence(start + i)}") for i in range(size)])
    store: Any = keyring._store  # the bench switches the scrub off and on
    scrub = store.scrub
    with_scrub: list[float] = []
    without: list[float] = []
    for n, user in enumerate(users):
        if n % 2:
            with_scrub.append(erase_seconds(services, user))
        else:
            store.scrub = lambda: None
            try:
                without.append(erase_seconds(services, user))
            finally:
                del store.scrub
    alone = []
    for _ in range(5):
        start = time.perf_counter()
        scrub()
        alone.append(time.perf_counter() - start)
    on, off = statistics.median(with_scrub), statistics.median(without)
    return {
        "notes_per_user": args.scrub_notes,
        "keystore_data_keys": args.scrub_scopes + args.scrub_users,
        "erase_s_with_scrub": [round(s, 3) for s in with_scrub],
        "erase_s_without_scrub": [round(s, 3) for s in without],
        "median_with_scrub_s": round(on, 3),
        "median_without_scrub_s": round(off, 3),
        "ratio_with_over_without": round(on / off, 2),
        "scrub_alone_median_s": round(statistics.median(alone), 3),
    }


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of the scrub scenario."""
    parser.add_argument("--scrub-notes", type=int, default=200, help="notes per erased user")
    parser.add_argument("--scrub-users", type=int, default=6, help="users erased, alternating")
    parser.add_argument("--scrub-scopes", type=int, default=5000, help="other data keys held")


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Build the scale path on PostgreSQL, erase with and without the scrub, return the figures
    (skipped without `--database-url`: the scrub exists on PostgreSQL only)."""
    if not args.database_url:
        return {"skipped": "the keystore scrub exists on PostgreSQL only (--database-url)"}
    admin = args.database_url
    schema = "mvbench_" + uuid.uuid4().hex[:10]
    keystore_db = "mvbenchks_" + uuid.uuid4().hex[:10]
    upgrade_database(admin, schema=schema)
    ensure_wal_recycle_off(admin)
    autocommit(admin, f'CREATE DATABASE "{keystore_db}"')
    try:
        with tempfile.TemporaryDirectory() as tmp:
            os.environ["MV_BENCH_MASTER"] = base64.b64encode(os.urandom(32)).decode()
            settings = Settings(
                data_dir=Path(tmp),
                database_url=make_url(admin)
                .set(username="memvault_app", password=None)
                .render_as_string(hide_password=False),
                db_schema=schema,
                database_admin_url=admin,
                keystore_url=make_url(admin)
                .set(database=keystore_db)
                .render_as_string(hide_password=False),
                master_key_env="MV_BENCH_MASTER",
                amem=False,
                embed_process=False,
            )
            services = open_services(settings, embedder=make_embedder("use-m3", data_dir=Path(tmp)))
            try:
                result = measure(services, args)
            finally:
                services.close()
    finally:
        autocommit(admin, f'DROP DATABASE IF EXISTS "{keystore_db}" WITH (FORCE)')
        autocommit(admin, f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    return result
