"""The durable A-MEM queue: enrichment jobs kept in SQL, run inline or by a background worker.

An add that A-MEM must still enrich leaves one `amem_jobs` row per note (ids, counters and times
only) and the note's `enrichment` says `pending`. With the offline judge the job usually runs
inline, before the add answers, under a lease (`LEASE_SECONDS`) that keeps the worker off it;
with an LLM judge (or when the inline run fails) the worker runs it within seconds. A worker
claims a job by compare-and-set of its due time, so no job runs twice at once. Jobs survive a
restart; one that keeps failing is retried with backoff and, after `MAX_ATTEMPTS`, the note's
enrichment says `failed`.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from sqlalchemy import Table, bindparam, delete, exists, insert, literal, select, update

from memvault.errors import NotFound, VaultError
from memvault.observability import count_amem_jobs
from memvault.scope import Scope
from memvault.store.driver_sql import DriverStatement
from memvault.store.models import AmemJobRow, NoteRow

if TYPE_CHECKING:
    from memvault.vault.notes import Note
    from memvault.vault.service import ScopedVault, Vault


class Enriches(Protocol):
    """What the queue needs of A-MEM (`memvault.amem.service.Amem`): its vault, and `enrich`."""

    vault: Vault

    def enrich(self, view: ScopedVault, note: Note) -> Any: ...


log = logging.getLogger(__name__)

MAX_ATTEMPTS = 5
POLL_SECONDS = 1.0
BATCH = 16
LEASE_SECONDS = 60.0
"""How long a claimed job (inline, or taken by a worker) is not due for anyone else. A process
that dies while running it leaves it to be retried once the lease runs out."""
PENDING, DONE, FAILED = "pending", "done", "failed"

# A job's life on the driver's cursor (`driver_sql`): one of each per A-MEM add.
_JOBS: Table = AmemJobRow.__table__  # type: ignore[assignment]
_NOTES: Table = NoteRow.__table__  # type: ignore[assignment]
_JOB_COLUMNS = ("tenant_id", "note_id", "user_id", "agent_id", "caller", "run_after", "created_at")
_INSERT_JOB = DriverStatement(
    insert(_JOBS)
    .from_select(
        [*_JOB_COLUMNS, "attempts"],
        select(*(bindparam(c, type_=_JOBS.c[c].type) for c in _JOB_COLUMNS), literal(0)).where(
            ~exists().where(
                _JOBS.c.tenant_id == bindparam("tenant_id"),
                _JOBS.c.note_id == bindparam("note_id"),
            )
        ),
    )
    .returning(_JOBS.c.note_id),
    "insert",
)
"""The note's job unless it has one (RETURNING: whether it went in)."""
_SET_ENRICHMENT = DriverStatement(
    update(_NOTES)
    .where(_NOTES.c.tenant_id == bindparam("tenant_id"), _NOTES.c.id == bindparam("id"))
    .values(enrichment=bindparam("state")),
    "update",
)
_DELETE_JOB = DriverStatement(
    delete(_JOBS)
    .where(_JOBS.c.tenant_id == bindparam("tenant_id"), _JOBS.c.note_id == bindparam("note_id"))
    .returning(_JOBS.c.note_id),
    "delete",
)
_CLAIM_JOB = DriverStatement(
    update(_JOBS)
    .where(
        _JOBS.c.tenant_id == bindparam("tenant_id"),
        _JOBS.c.note_id == bindparam("note_id"),
        _JOBS.c.run_after == bindparam("seen"),
    )
    .values(run_after=bindparam("lease"))
    .returning(_JOBS.c.note_id),
    "update",
)
"""Compare-and-set of a due job's `run_after` to a lease."""


class AmemJobs:
    """Enqueue, run and retry enrichment jobs of one deployment."""

    def __init__(self, amem: Enriches, clock: Callable[[], float] = time.time) -> None:
        self._amem = amem
        self._parts = amem.vault.parts
        self._clock = clock

    def enqueue(
        self, tenant: str, rows: list[tuple[str, str, str, str]], *, claimed: bool = False
    ) -> None:
        """One job per (note id, user, storage agent, caller agent); the notes go `pending`.

        `claimed`: the caller runs the jobs itself now (inline A-MEM), so they are leased to it:
        no worker takes them unless the lease runs out (the caller died) or `release` is called.
        """
        if not rows:
            return
        now = self._clock()
        due = now + LEASE_SECONDS if claimed else now
        added = 0
        with self._parts.db.driver_transaction(tenant) as conn:
            for note_id, user, agent, caller in rows:
                added += len(
                    _INSERT_JOB.rows(
                        conn,
                        {
                            "tenant_id": tenant,
                            "note_id": note_id,
                            "user_id": user,
                            "agent_id": agent,
                            "caller": caller,
                            "run_after": due,
                            "created_at": now,
                        },
                    )
                )
                _SET_ENRICHMENT.rows(conn, {"tenant_id": tenant, "id": note_id, "state": PENDING})
        count_amem_jobs("inline" if claimed else "queued", added)

    def finish(self, tenant: str, note_id: str, state: str = DONE) -> None:
        """Drop the note's job and record its enrichment state."""
        with self._parts.db.driver_transaction(tenant) as conn:
            dropped = _DELETE_JOB.rows(conn, {"tenant_id": tenant, "note_id": note_id})
            _SET_ENRICHMENT.rows(conn, {"tenant_id": tenant, "id": note_id, "state": state})
        count_amem_jobs(state, len(dropped))

    def release(self, tenant: str, note_id: str) -> None:
        """Make a claimed job due now (its inline run failed: the worker retries it)."""
        with self._parts.db.session(tenant) as sess:
            sess.execute(
                update(AmemJobRow)
                .where(AmemJobRow.tenant_id == tenant, AmemJobRow.note_id == note_id)
                .values(run_after=self._clock())
            )

    def _claim(self, job: AmemJobRow) -> bool:
        """Take a due job for this run: compare-and-set of its `run_after` to a lease, so two
        workers (threads or servers) never run one job twice."""
        params = {
            "tenant_id": job.tenant_id,
            "note_id": job.note_id,
            "seen": job.run_after,
            "lease": self._clock() + LEASE_SECONDS,
        }
        with self._parts.db.driver_transaction(job.tenant_id) as conn:
            return bool(_CLAIM_JOB.rows(conn, params))

    def pending(self, tenant: str) -> int:
        """Jobs waiting in a tenant."""
        with self._parts.db.session(tenant) as sess:
            return len(
                sess.execute(select(AmemJobRow.note_id).where(AmemJobRow.tenant_id == tenant)).all()
            )

    def run_due(self, tenant: str, limit: int = BATCH) -> int:
        """Run up to `limit` due jobs of a tenant; how many finished (done or failed)."""
        now = self._clock()
        with self._parts.db.session(tenant) as sess:
            jobs = list(
                sess.execute(
                    select(AmemJobRow)
                    .where(AmemJobRow.tenant_id == tenant, AmemJobRow.run_after <= now)
                    .order_by(AmemJobRow.run_after)
                    .limit(limit)
                ).scalars()
            )
            for job in jobs:
                sess.expunge(job)
        finished = 0
        for job in jobs:
            if self._claim(job):
                finished += self._run_one(job)
        return finished

    def _run_one(self, job: AmemJobRow) -> int:
        view_scope = Scope(job.tenant_id, job.user_id, job.caller)
        try:
            view = self._amem.vault.scoped(view_scope)
            note: Note = view.get(job.note_id)
        except (NotFound, VaultError):
            self.finish(job.tenant_id, job.note_id, FAILED)  # gone, or its scope erased
            return 1
        try:
            self._amem.enrich(view, note)
        except Exception as exc:  # the model, the index: retried with backoff, never the text
            log.warning(
                "A-MEM enrichment failed (attempt %d): %s", job.attempts + 1, type(exc).__name__
            )
            attempts = job.attempts + 1
            if attempts >= MAX_ATTEMPTS:
                self.finish(job.tenant_id, job.note_id, FAILED)
                return 1
            with self._parts.db.session(job.tenant_id) as sess:
                sess.execute(
                    update(AmemJobRow)
                    .where(AmemJobRow.tenant_id == job.tenant_id, AmemJobRow.note_id == job.note_id)
                    .values(attempts=attempts, run_after=self._clock() + 2.0**attempts)
                )
            return 0
        self.finish(job.tenant_id, job.note_id, DONE)
        return 1


class AmemWorker:
    """A daemon thread that runs due jobs of every tenant: pass after pass while passes
    finish jobs (a batch write queues hundreds), then every `POLL_SECONDS` or when woken."""

    def __init__(self, jobs: AmemJobs, tenants: Callable[[], list[str]]) -> None:
        self._jobs = jobs
        self._tenants = tenants
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="amem-worker", daemon=True)
            self._thread.start()

    def wake(self) -> None:
        """Run soon (a job was just queued)."""
        self._wake.set()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None

    def run_once(self) -> int:
        """One pass over every tenant; how many jobs finished."""
        done = 0
        for tenant in self._tenants():
            try:
                done += self._jobs.run_due(tenant)
            except Exception as exc:  # one tenant never stops the others
                log.warning("A-MEM worker pass failed: %s", type(exc).__name__)
        return done

    def _loop(self) -> None:
        while not self._stop.is_set():
            if self.run_once() > 0:
                continue  # a pass takes at most `BATCH` jobs a tenant: more may be due now
            self._wake.wait(POLL_SECONDS)
            self._wake.clear()
