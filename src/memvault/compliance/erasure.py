"""Erase jobs: durable, resumable, ending in a receipt signed with the deployment key.

Steps, in order (`STEPS`); each is idempotent and its completion is persisted before the next:

0. `count`   - count every erasable store of the inventory (the receipt's `deleted` figures
   survive a crash between a step and its record this way);
1. `revoke`  - block the subject in the `ScopeGuard`, delete its API keys, drain in-flight work;
2. `shred`   - destroy its data keys (every copy of its ciphertext is dead, backups included);
3. `vectors` - delete its vectors physically (the user's index partition goes, or is rebuilt);
4. `rows`    - delete rows, links, refusals, idempotency records, counters, cached embeddings;
5. `scrub`   - SQLite WAL checkpoint (secure_delete zeroed the pages), index compaction;
6. `verify`  - count every erasable store of the inventory again;
7. `sign`    - sign the receipt (DESIGN.md "Compliance formats"); `verified` only if all zero.

The job row (`erasure_jobs`) keeps the subject, the counts and the receipt sealed under the
tenant key, so no erased id stays in clear; a crash resumes at the first step not recorded
(`ErasureJobs.resume`, run at startup).
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from sqlalchemy import select

from memvault.canonical import rfc3339
from memvault.compliance.erasure_steps import (
    STEPS,
    ErasureIncomplete,
    Fault,
    JobRun,
    JobState,
    describe_stop,
)
from memvault.compliance.job_claim import JobRunningElsewhere, claimed
from memvault.errors import NotFound
from memvault.ids import uuid7
from memvault.store.models import ErasureJobRow
from memvault.store.scoping import OwnedBy
from memvault.vault.drafts import user_tag
from memvault.vault.shared_guard import ERASURE_JOB_PURPOSE

if TYPE_CHECKING:
    from memvault.runtime.factory import Services

log = logging.getLogger(__name__)

__all__ = [
    "DONE",
    "RUNNING",
    "STALLED_SECONDS",
    "STEPS",
    "ErasureIncomplete",
    "ErasureJobs",
    "Fault",
    "JobState",
]

CREATED = "created"
RUNNING = "running"
DONE = "done"
STALLED_SECONDS = 30.0
"""A running job that has not recorded a step for this long, and has no thread in this process,
is resumed by the maintenance sweeper (`ErasureJobs.resume_stalled`)."""
VERIFY_ROUNDS = 3
"""A run that verifies non-zero goes round revoke..verify again this many times before it stops
short (the sweeper retries it later): a job never ends `done` unverified."""
_RERUN = ("revoke", "shred")
"""Re-run on every resumed run: keys or data keys created since the last run (by a worker that
had not seen the block yet) are revoked and shredded too. Both are idempotent."""
_JOB = ERASURE_JOB_PURPOSE  # the guard opens a running job's subject to see what it blocks
_RECEIPT = "erasure-receipt"


class ErasureJobs:
    """Starts, runs, resumes and reports erase jobs of users and agents."""

    def __init__(self, services: Services, *, clock: Callable[[], float] = time.time) -> None:
        self._services = services
        self._clock = clock
        self.fault: Fault | None = None
        """Test hook: called with `before:<step>` and `after:<step>` (after = done, unrecorded)."""
        self._threads: dict[str, threading.Thread] = {}
        self._lock = threading.Lock()

    # -- starting and running --------------------------------------------------------------------

    def start(self, tenant: str, user: str, agent: str | None, requested_by: str) -> str:
        """Record a new job (nothing is erased yet) and return its id."""
        OwnedBy(tenant, user, agent)  # validates the ids
        job_id = uuid7()
        state = JobState(user, agent, requested_by, self._clock())
        keyring = self._services.keyring
        now = self._clock()
        with self._services.db.session(tenant) as sess:
            sess.add(
                ErasureJobRow(
                    tenant_id=tenant,
                    id=job_id,
                    subject_tag=user_tag(keyring.index_key(tenant).tag, user),
                    state=RUNNING,
                    step=CREATED,
                    sealed=keyring.seal_record(tenant, _JOB, job_id, state.to_bytes()),
                    receipt_ct=None,
                    created_at=now,
                    updated_at=now,
                )
            )
        state.requested_at = self._clock()  # every worker refuses from the commit above: stamp
        self.record(tenant, job_id, CREATED, state)  # after it, so no ack is sent after it
        return job_id

    def submit(
        self, tenant: str, user: str, agent: str | None, requested_by: str, wait: float
    ) -> tuple[str, dict[str, Any] | None]:
        """Start a job in the background; its receipt if it finished within `wait` seconds."""
        job_id = self.start(tenant, user, agent, requested_by)
        thread = threading.Thread(
            target=self._run_logged, args=(tenant, job_id), name=f"erase-{job_id}", daemon=True
        )
        with self._lock:
            self._threads[job_id] = thread
        thread.start()
        thread.join(wait)
        if thread.is_alive():
            return job_id, None
        try:
            return job_id, self.receipt(tenant, job_id)
        except NotFound:  # it stopped short (e.g. a blocked scrub): `resume_stalled` goes on
            return job_id, None

    def _run_logged(self, tenant: str, job_id: str) -> None:
        try:
            self.run(tenant, job_id)
        except JobRunningElsewhere:  # a sweeper of another worker took it first
            pass
        except Exception as exc:  # the job stays `running`; the next resume retries it
            log.warning("erase job %s stopped: %s", job_id, type(exc).__name__)
            self._note_error(tenant, job_id, exc)
        finally:
            with self._lock:
                self._threads.pop(job_id, None)

    def run(self, tenant: str, job_id: str) -> dict[str, Any]:
        """Run the job's remaining steps and return its signed receipt (`JobRunningElsewhere`
        while another worker runs it)."""
        with claimed(self._services.db, job_id):
            return self._run(tenant, job_id)

    def _run(self, tenant: str, job_id: str) -> dict[str, Any]:
        row = self._row(tenant, job_id)
        if row.state == DONE:
            return self.receipt(tenant, job_id)
        job = JobRun(self, tenant, job_id, self._open(tenant, row), row.step)
        if row.step != CREATED:
            job.done.difference_update(_RERUN)  # resumed: revoke and shred again
        eraser = self._services.eraser
        eraser.remember_dedicated(job.subject, job.state.dedicated)
        try:
            return self._run_steps(tenant, job_id, job)
        finally:
            eraser.forget_dedicated(job.subject)

    def _run_steps(self, tenant: str, job_id: str, job: JobRun) -> dict[str, Any]:

        def revoke() -> None:
            job.step("revoke")

        job.step("count")
        with self._services.vault.parts.guard.blocking(
            tenant, job.state.user_id, job.state.agent_id, before_drain=revoke
        ):
            for _round in range(VERIFY_ROUNDS):
                try:
                    for step in STEPS[2:]:
                        job.step(step)
                    break
                except ErasureIncomplete:
                    job.done = {"count"}  # go round: revoke, shred, vectors, rows, scrub, verify
                    job.step("revoke")
            else:
                raise ErasureIncomplete("the erased scope's stores are not empty yet")
        return self.receipt(tenant, job_id)

    def resume(self) -> int:
        """Finish every job a crash or restart left unfinished; returns how many finished."""
        return self._finish_running(idle_for=None)

    def resume_stalled(self, idle_for: float = STALLED_SECONDS) -> int:
        """A maintenance sweeper: finish the jobs that stopped short (a step raised, e.g. a
        scrub a reader blocked) and have not moved for `idle_for` seconds; jobs running in
        this process are left to their threads. Returns how many finished."""
        return self._finish_running(idle_for=idle_for)

    def _finish_running(self, idle_for: float | None) -> int:
        finished = 0
        for tenant in self._services.db.erasing_tenant_ids():  # one query, not one per tenant
            query = select(ErasureJobRow.id).where(
                ErasureJobRow.tenant_id == tenant, ErasureJobRow.state == RUNNING
            )
            if idle_for is not None:
                query = query.where(ErasureJobRow.updated_at <= self._clock() - idle_for)
            with self._services.db.session(tenant) as sess:
                ids = list(sess.execute(query).scalars())
            for job_id in ids:
                with self._lock:  # one runner per job: a submit's thread, or this one
                    if job_id in self._threads:
                        continue
                    self._threads[job_id] = threading.current_thread()
                try:
                    self.run(tenant, job_id)
                    finished += 1
                except JobRunningElsewhere:  # its runner in another worker finishes it
                    pass
                except Exception as exc:
                    log.warning("erase job %s not resumed: %s", job_id, type(exc).__name__)
                    self._note_error(tenant, job_id, exc)
                finally:
                    with self._lock:
                        self._threads.pop(job_id, None)
        return finished

    # -- reading -------------------------------------------------------------------------------

    def receipt(self, tenant: str, job_id: str) -> dict[str, Any]:
        """The signed receipt of a finished job; NotFound for an unknown or unfinished one."""
        row = self._row(tenant, job_id)
        if row.state != DONE or row.receipt_ct is None:
            raise NotFound("no receipt for this erasure yet")
        raw = self._services.keyring.open_record(tenant, _RECEIPT, job_id, row.receipt_ct)
        receipt: dict[str, Any] = json.loads(raw)
        return receipt

    def view(self, tenant: str, job_id: str) -> dict[str, Any]:
        """The job as the API shows it: its receipt when done, else its progress."""
        row = self._row(tenant, job_id)
        if row.state == DONE:
            return {"id": job_id, "state": DONE, **self.receipt(tenant, job_id)}
        state = self._open(tenant, row)
        reached = STEPS.index(row.step) + 1 if row.step in STEPS else 0
        return {
            "id": job_id,
            "state": row.state,
            "subject": {"user_id": state.user_id, "agent_id": state.agent_id},
            "requested_at": rfc3339(state.requested_at),
            "steps_done": reached,
            "steps_total": len(STEPS),
            "step": row.step,
            "attempts": state.attempts,
            "last_error": state.last_error,
        }

    def list(self, tenant: str, limit: int = 100) -> list[dict[str, Any]]:
        """The tenant's jobs, newest first."""
        with self._services.db.session(tenant) as sess:
            ids = list(
                sess.execute(
                    select(ErasureJobRow.id)
                    .where(ErasureJobRow.tenant_id == tenant)
                    .order_by(ErasureJobRow.created_at.desc(), ErasureJobRow.id.desc())
                    .limit(limit)
                ).scalars()
            )
        return [self.view(tenant, job_id) for job_id in ids]

    def wait(self, timeout: float = 60.0) -> None:
        """Wait for the background jobs of this process (tests and shutdown)."""
        with self._lock:
            threads = list(self._threads.values())
        for thread in threads:
            if thread is not threading.current_thread():
                thread.join(timeout)

    # -- rows ----------------------------------------------------------------------------------

    def _row(self, tenant: str, job_id: str) -> ErasureJobRow:
        if not isinstance(job_id, str) or len(job_id) > 64:
            raise NotFound("no such erasure")
        with self._services.db.session(tenant) as sess:
            row = sess.get(ErasureJobRow, (tenant, job_id))
        if row is None:
            raise NotFound("no such erasure")
        return row

    def _open(self, tenant: str, row: ErasureJobRow) -> JobState:
        return JobState.from_bytes(
            self._services.keyring.open_record(tenant, _JOB, row.id, row.sealed)
        )

    def _note_error(self, tenant: str, job_id: str, exc: Exception) -> None:
        """Record why a run stopped short (shown by `view`); the sweeper retries the job."""
        try:
            row = self._row(tenant, job_id)
            if row.state == DONE:
                return
            state = self._open(tenant, row)
            state.attempts += 1
            if not isinstance(exc, ErasureIncomplete) or state.last_error is None:
                state.last_error = describe_stop(exc)
            self.record(tenant, job_id, row.step, state)
        except Exception as again:  # the database itself is failing: the log says so
            log.warning("erase job %s: cannot record its error: %s", job_id, type(again).__name__)

    def record(self, tenant: str, job_id: str, step: str, state: JobState) -> None:
        """Persist that `step` is done, with the counts so far."""
        sealed = self._services.keyring.seal_record(tenant, _JOB, job_id, state.to_bytes())
        with self._services.db.session(tenant) as sess:
            row = sess.get(ErasureJobRow, (tenant, job_id))
            if row is None:
                raise NotFound("no such erasure")
            row.step, row.sealed, row.updated_at = step, sealed, self._clock()

    def finish(self, tenant: str, job_id: str, receipt: dict[str, Any]) -> None:
        """Store the signed receipt and mark the job done, in one transaction."""
        sealed = self._services.keyring.seal_record(
            tenant, _RECEIPT, job_id, json.dumps(receipt, sort_keys=True).encode()
        )
        with self._services.db.session(tenant) as sess:
            row = sess.get(ErasureJobRow, (tenant, job_id))
            if row is None:
                raise NotFound("no such erasure")
            row.step, row.state, row.receipt_ct = "sign", DONE, sealed
            row.updated_at = self._clock()
        self._services.db.checkpoint()
        events = self._services.vault.parts.events
        if events is not None:  # the receipt's id and figures; the subject as pseudonyms
            body = receipt["receipt"]
            events(
                tenant,
                "scope.erased",
                dict(body["subject"]),
                {
                    "receipt_id": body["id"],
                    "verified": bool(body["verified"]),
                    "keys_destroyed": int(body["keys_destroyed"]),
                },
            )

    @property
    def services(self) -> Services:
        return self._services

    @property
    def clock(self) -> Callable[[], float]:
        return self._clock
