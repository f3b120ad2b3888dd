"""One runner per erase job across workers: a worker whose sweeper resumes `running` jobs (as
every worker does at start-up) leaves a job another worker is running to that worker.

Before the claim, worker B waited on the scope's lock while A ran the job, then ran the remaining
steps again and signed a second receipt over A's."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memvault.compliance.wiring import install
from memvault.config import Settings
from memvault.scope import Scope
from memvault.vault.embed.base import Embedder
from memvault.vault.factory import Services, open_services
from tests.conftest import app_role_url, drop_schema, migrated_pg_schema, pg_url_or_skip
from tests.test_scale.pg import scratch_database

USER = "usrqzclaim"


@pytest.fixture
def two_workers(tmp_path: Path, embedder: Embedder) -> Iterator[tuple[Services, Services]]:
    admin = pg_url_or_skip()
    schema = migrated_pg_schema(admin)
    opened: list[Services] = []
    try:
        with scratch_database(admin) as keystore:
            for name in ("a", "b"):
                settings = Settings(
                    data_dir=tmp_path / name,
                    database_url=app_role_url(admin),
                    db_schema=schema,
                    keystore_url=keystore,
                    master_key_file=tmp_path / "master.key",
                    local_index_per_worker=True,
                )
                opened.append(open_services(settings, embedder=embedder))
            yield opened[0], opened[1]
            for services in opened:
                services.close()
            opened.clear()
    finally:
        for services in opened:
            services.close()
        drop_schema(admin, schema)


def test_a_job_running_in_one_worker_is_not_run_again_by_another(
    two_workers: tuple[Services, Services],
) -> None:
    a, b = two_workers
    a.tenants.create("t1")
    for n in range(3):
        a.vault.scoped(Scope("t1", USER, "a1")).add(f"Claimed hive {n} sits by the gate")
    jobs_a, jobs_b = install(a).erasures, install(b).erasures
    reached, gate = threading.Event(), threading.Event()

    def pause(point: str) -> None:
        if point == "before:vectors":
            reached.set()
            gate.wait(30)

    jobs_a.fault = pause
    job_id = jobs_a.start("t1", USER, None, "admin")
    result: dict[str, Any] = {}
    runner = threading.Thread(target=lambda: result.update(jobs_a.run("t1", job_id)))
    runner.start()
    assert reached.wait(30)
    threading.Timer(2.0, gate.set).start()  # A goes on after 2 s
    started = time.monotonic()
    finished = jobs_b.resume()  # what B does at start-up
    took = time.monotonic() - started
    runner.join(60)
    assert result["receipt"]["verified"] is True
    assert finished == 0 and took < 1.5  # left to A at once, not waited for and re-run
    assert jobs_b.receipt("t1", job_id) == result  # A's receipt, not a second one
    view = jobs_a.view("t1", job_id)
    assert view["state"] == "done"
    assert b.keyring.count_keys("t1", USER) == 0
