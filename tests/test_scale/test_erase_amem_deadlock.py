"""An erase and the A-MEM worker finishing a job take `amem_jobs` and `notes` in one order.

Before: the erase deleted `notes` then `amem_jobs`, while `AmemJobs.finish` deleted the job row
then updated the note, so a finish caught between its two statements deadlocked with the erase
(PostgreSQL aborted one of them). Here each of 50 runs catches `finish` exactly there: it holds
the job row while the erase starts, and only then updates the note.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

import memvault.amem.jobs as jobs_module
from memvault.amem.wiring import install
from memvault.scope import Scope
from tests.conftest import ServicesFactory, pg_url_or_skip

RUNS = 50


class _Paused:
    """`_SET_ENRICHMENT` that signals, then waits, between the job's delete and the note update."""

    def __init__(self, real: Any) -> None:
        self.real = real
        self.reached = threading.Event()

    def rows(self, conn: Any, params: dict[str, Any]) -> Any:
        self.reached.set()
        time.sleep(0.15)  # the erase starts meanwhile, holding nothing yet or the job row
        return self.real.rows(conn, params)


def test_erase_and_job_finish_never_deadlock(
    make_services: ServicesFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    pg_url_or_skip()
    services = make_services("postgres", amem=True)
    amem = install(services, worker=False, scheduler=False)
    assert amem.jobs is not None
    errors: list[BaseException] = []
    for run in range(RUNS):
        scope = Scope("t1", f"u{run}", "a1")
        note = services.vault.scoped(scope).add(f"Run {run}: the user keeps bees on the roof")
        amem.jobs.enqueue("t1", [(note.id, scope.user, scope.agent, scope.agent)])
        paused = _Paused(jobs_module._SET_ENRICHMENT)
        monkeypatch.setattr(jobs_module, "_SET_ENRICHMENT", paused)

        def finish(note_id: str = note.id) -> None:
            try:
                amem.jobs.finish("t1", note_id)  # type: ignore[union-attr]
            except BaseException as exc:  # a deadlock victim
                errors.append(exc)

        worker = threading.Thread(target=finish)
        worker.start()
        assert paused.reached.wait(10)
        try:
            report = services.eraser.erase("t1", scope.user)
        except BaseException as exc:
            errors.append(exc)
            report = None
        worker.join(20)
        monkeypatch.setattr(jobs_module, "_SET_ENRICHMENT", paused.real)
        assert not errors, f"run {run}: {[type(e).__name__ for e in errors]}"
        assert report is not None and not any(report.remaining.values())
