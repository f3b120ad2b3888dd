"""One runner per erase job across workers: a worker whose sweeper resumes `running` jobs (as
every worker does at start-up) leaves a job another worker is running to that worker.

Before the claim, worker B waited on the scope's lock while A ran the job, then ran the remaining
steps again and signed a second receipt over A's."""

from __future__ import annotations

import threading
import time
from typing import Any

from memvault.compliance.wiring import install
from memvault.runtime.factory import Services
from memvault.scope import Scope

USER = "usrqzclaim"


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
