"""What the PostgreSQL keystore scrub costs an erase (docs/erasure.md, "Scale path").

On a PostgreSQL keystore every shred ends with `VACUUM FULL` of the keystore tables,
`pg_switch_wal()` and `CHECKPOINT` (`memvault.keyring._pg_scrub`). This bench builds the scale
path on a local PostgreSQL: a data schema migrated by the owner and served by the app role, a
keystore in a database of its own holding `--scopes` data keys of other users (the keystore's
size is what `VACUUM FULL` rewrites), and `--users` users of `--notes` notes each. It erases the
users one by one as signed-receipt jobs, alternating the scrub on and off (off: the keystore's
`scrub` replaced by a no-op for that erase), so both halves share the machine's load, and it
times the scrub alone. Prints one JSON object: medians and the on/off ratio from one run.

Run: .venv/bin/python -m bench.pg_scrub [--notes 200] [--users 6] [--scopes 5000]
(MEMVAULT_TEST_DATABASE_URL: a superuser URL; default postgresql+psycopg://postgres@127.0.0.1/test;
the server needs wal_recycle = off)
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from bench._harness import arg_parser, sentence
from memvault.compliance.wiring import install
from memvault.config import Settings
from memvault.embed import make_embedder
from memvault.runtime.factory import Services, open_services
from memvault.scope import Scope
from memvault.store.database import upgrade_database
from memvault.vault.drafts import NoteDraft

DEFAULT_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/test"


def _autocommit(url: str, statement: str) -> None:
    engine = create_engine(url, isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        conn.execute(text(statement))
    engine.dispose()


def ensure_wal_recycle_off(url: str) -> None:
    """Configure the server as a PostgreSQL keystore needs (`wal_recycle = off`, docs/keyring.md;
    memvault refuses one without it), as an operator would and as the test suite does: ALTER
    SYSTEM and a reload, then wait until new backends see it. `url` is a superuser's."""
    engine = create_engine(url, isolation_level="AUTOCOMMIT")
    setting = text("SELECT current_setting('wal_recycle')")
    try:
        with engine.connect() as conn:
            if conn.execute(setting).scalar_one() == "off":
                return
            conn.execute(text("ALTER SYSTEM SET wal_recycle = off"))
            conn.execute(text("SELECT pg_reload_conf()"))
        print("set wal_recycle = off on the server (a keystore needs it)", file=sys.stderr)
        for _ in range(50):
            engine.dispose()  # a fresh backend each round
            with engine.connect() as conn:
                if conn.execute(setting).scalar_one() == "off":
                    return
            time.sleep(0.1)
    finally:
        engine.dispose()


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
    for i in range(args.scopes):  # other users' data keys: what VACUUM FULL rewrites
        keyring.aead_for(Scope("bench", f"other{i}", "a1"))
    users = [f"erased{i}" for i in range(args.users)]
    for user in users:
        view = services.vault.scoped(Scope("bench", user, "a1"))
        for start in range(0, args.notes, 100):
            size = min(100, args.notes - start)
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
        "notes_per_user": args.notes,
        "keystore_data_keys": args.scopes + args.users,
        "erase_s_with_scrub": [round(s, 3) for s in with_scrub],
        "erase_s_without_scrub": [round(s, 3) for s in without],
        "median_with_scrub_s": round(on, 3),
        "median_without_scrub_s": round(off, 3),
        "ratio_with_over_without": round(on / off, 2),
        "scrub_alone_median_s": round(statistics.median(alone), 3),
    }


def main(argv: list[str] | None = None) -> int:
    parser = arg_parser(__doc__)
    parser.add_argument("--notes", type=int, default=200)
    parser.add_argument("--users", type=int, default=6)
    parser.add_argument("--scopes", type=int, default=5000)
    args = parser.parse_args(argv)
    admin = os.environ.get("MEMVAULT_TEST_DATABASE_URL", DEFAULT_URL)
    schema = "mvbench_" + uuid.uuid4().hex[:10]
    keystore_db = "mvbenchks_" + uuid.uuid4().hex[:10]
    upgrade_database(admin, schema=schema)
    ensure_wal_recycle_off(admin)
    _autocommit(admin, f'CREATE DATABASE "{keystore_db}"')
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
        _autocommit(admin, f'DROP DATABASE IF EXISTS "{keystore_db}" WITH (FORCE)')
        _autocommit(admin, f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
