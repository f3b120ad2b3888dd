"""Two real `memvault serve` processes on one PostgreSQL database (and one PostgreSQL keystore),
with an erase in the middle: a writer hammers worker B for the user while worker A erases it.

Must show: 0 writes acknowledged for the erased scope whose request was sent after the erase job
started (its `requested_at`), 0 rows left, and 0 notes sealed under a shredded key: after the
erase the user gets a new key and writes through B; the wrapped keys the user had before are gone
from the keystore, the user's rows are exactly the notes B acknowledged, and A opens every one of
them under the keystore's current key (without the cross-worker cache invalidation, B sealed them
under its cached, shredded data key and A answered 500). Also: a second worker with
its own local Edge index on the same database refuses to start, naming the setting."""

from __future__ import annotations

import base64
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from memvault.config import Settings
from memvault.embed.base import Embedder
from memvault.errors import VaultError
from memvault.runtime.factory import open_services
from tests.conftest import app_role_url, drop_schema, migrated_pg_schema, pg_url_or_skip
from tests.serving import call_json, clean_env, free_port, start_serve, stop, wait_healthy
from tests.test_scale.pg import scratch_database, wrapped_keys

OPERATOR = "mvop_two-workers-operator-key-0123456789"
USER = "usrqztwo"


@pytest.fixture
def deployment(tmp_path: Path) -> Iterator[dict[str, str]]:
    admin = pg_url_or_skip()
    schema = migrated_pg_schema(admin)
    with scratch_database(admin) as keystore:
        env = {
            "MEMVAULT_DATABASE_URL": app_role_url(admin),
            "MEMVAULT_DB_SCHEMA": schema,
            "MEMVAULT_KEYSTORE_URL": keystore,
            "MEMVAULT_MASTER_KEY_ENV": "MV_TEST_MASTER",
            "MV_TEST_MASTER": base64.b64encode(os.urandom(32)).decode(),
            "MEMVAULT_OPERATOR_KEY": OPERATOR,
            "MEMVAULT_EMBED_PROCESS": "false",
        }
        yield env
    drop_schema(admin, schema)


def test_an_erase_blocks_and_drains_every_worker(
    tmp_path: Path, deployment: dict[str, str]
) -> None:
    env = clean_env(**deployment, MEMVAULT_LOCAL_INDEX_PER_WORKER="true")
    ports = free_port(), free_port()
    procs = [start_serve(tmp_path / f"w{i}", port, env) for i, port in enumerate(ports)]
    a, b = (f"http://127.0.0.1:{port}" for port in ports)
    try:
        for proc, base in zip(procs, (a, b), strict=True):
            wait_healthy(base, proc)
        status, tenant = call_json(
            "POST", a + "/v1/operator/tenants", OPERATOR, {"tenant_id": "t1"}
        )
        assert status == 201
        admin_key = tenant["api_key"]
        body = {"user_id": USER, "agent_id": "a1", "role": "agent"}
        status, issued = call_json("POST", a + "/v1/admin/keys", admin_key, body)
        assert status == 201
        key = issued["api_key"]
        acks: list[tuple[float, int]] = []  # (request sent at, status)
        stop_writing = threading.Event()

        def writer() -> None:
            n = 0
            while not stop_writing.is_set():
                sent = time.time()
                status, _ = call_json(
                    "POST", b + "/v1/memories", key, {"text": f"Bee hive {n} is on the roof"}
                )
                acks.append((sent, status))
                n += 1

        thread = threading.Thread(target=writer)
        thread.start()
        time.sleep(2.0)
        shredded = set(wrapped_keys(deployment["MEMVAULT_KEYSTORE_URL"], USER))
        assert shredded  # the user's data keys before the erase (B holds them unwrapped)
        status, job = call_json("POST", a + "/v1/admin/erase", admin_key, {"user_id": USER})
        assert status in (200, 202)
        job_id = job["id"] if "id" in job else job["receipt"]["id"]
        deadline = time.monotonic() + 120
        while True:
            status, view = call_json("GET", a + f"/v1/admin/erasures/{job_id}", admin_key)
            if view and view.get("state") == "done":
                break
            assert time.monotonic() < deadline, view
            time.sleep(0.5)
        time.sleep(0.5)
        stop_writing.set()
        thread.join(60)
        receipt = view["receipt"]
        assert receipt["verified"] is True
        started = _epoch(receipt["requested_at"])
        assert any(s == 201 for _, s in acks)  # B did acknowledge writes before the erase
        late = [s for sent, s in acks if sent > started and s == 201]
        assert late == []
        engine = create_engine(pg_url_or_skip())
        schema = deployment["MEMVAULT_DB_SCHEMA"]
        with engine.connect() as conn:
            for table in ("notes", "links"):
                left = conn.execute(
                    text(f'SELECT count(*) FROM "{schema}".{table} WHERE user_id = :u'),
                    {"u": USER},
                ).scalar()
                assert left == 0, table
        # The user comes back: B must not seal under its cached (shredded) key.
        status, issued = call_json("POST", a + "/v1/admin/keys", admin_key, body)
        assert status == 201
        key = issued["api_key"]
        ids = []
        for n in range(5):
            status, note = call_json(
                "POST", b + "/v1/memories", key, {"text": f"New hive {n} by the gate"}
            )
            assert status == 201
            ids.append(note["id"])
        # 0 notes sealed under a shredded key: the shredded wrapped keys are gone from the
        # keystore, every row of the user is one B acknowledged, and each opens on A under the
        # keystore's current key (a note sealed under B's cached, shredded key answers 500).
        assert not shredded & set(wrapped_keys(deployment["MEMVAULT_KEYSTORE_URL"], USER))
        with engine.connect() as conn:
            rows = set(
                conn.execute(
                    text(f'SELECT id FROM "{schema}".notes WHERE user_id = :u'), {"u": USER}
                ).scalars()
            )
        engine.dispose()
        assert rows == set(ids)
        unreadable = [n for n in ids if call_json("GET", a + f"/v1/memories/{n}", key)[0] != 200]
        assert unreadable == []
    finally:
        for proc in procs:
            stop(proc)


def _epoch(stamp: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def test_a_second_worker_with_its_own_local_index_is_refused(
    tmp_path: Path, deployment: dict[str, str], embedder: Embedder
) -> None:
    def settings(name: str) -> Settings:
        return Settings(
            data_dir=tmp_path / name,
            database_url=deployment["MEMVAULT_DATABASE_URL"],
            db_schema=deployment["MEMVAULT_DB_SCHEMA"],
            keystore_url=deployment["MEMVAULT_KEYSTORE_URL"],
            master_key_file=tmp_path / "master.key",
        )

    first = open_services(settings("one"), embedder=embedder)
    try:
        with pytest.raises(VaultError, match="MEMVAULT_QDRANT_URL"):
            open_services(settings("two"), embedder=embedder)
    finally:
        first.close()
    open_services(settings("two"), embedder=embedder).close()  # free once the first is gone
