"""Tenant deletion as a durable job with a signed receipt (the operator's erase of a tenant).

The same steps as a user's erase (`memvault.compliance.erasure.STEPS`), on the whole tenant:
delete its API keys, shred its tenant, index and data keys, drop its vector namespace (folder
and all), delete every row of every tenant table, checkpoint, count again, sign. The job lives in
`tenant_deletions` (an operator table: the tenant's own rows are gone when it completes), so a
crash resumes at startup and the receipt stays readable at `GET /v1/operator/tenant-deletions/{id}`.

The server, as the app role, may insert a `running` job there (docs/deploy.md, "Least-privilege
owner"), and so could SQL injected as it. A job therefore carries a seal under the doomed
tenant's own key (`Keyring.seal_record`), made when the operator asked; while the tenant's keys
exist, a job whose seal does not open is refused (`ForgedDeletion`) before anything is revoked,
shredded or deleted. Once its keys are shredded, the job that shredded them finishes unchecked.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from sqlalchemy import func, select

from memvault.compliance.erase import TENANT_ROW_MODELS
from memvault.compliance.erasure import DONE, RUNNING, STALLED_SECONDS, STEPS, Fault
from memvault.compliance.receipts import signed_receipt
from memvault.errors import Conflict, DecryptionError, KeyNotFound, NotFound, VaultError
from memvault.ids import uuid7
from memvault.index.base import PointFilter
from memvault.store.models import TenantDeletionRow, TenantRow
from memvault.store.scoping import OwnedBy
from memvault.vault.drafts import namespace_for

if TYPE_CHECKING:
    from memvault.runtime.factory import Services

log = logging.getLogger(__name__)
_SEAL_PURPOSE = "tenant_deletion"


class ForgedDeletion(VaultError):
    """A tenant deletion job the operator never requested (its seal does not open)."""

    code = "forged_tenant_deletion"


class TenantDeletions:
    """Runs and resumes tenant deletions; keeps their signed receipts."""

    def __init__(self, services: Services, *, clock: Callable[[], float] = time.time) -> None:
        self._services = services
        self._clock = clock
        self.fault: Fault | None = None
        self._running: set[str] = set()
        """Deletions a thread of this process is running: the sweeper leaves them alone."""
        self._lock = threading.Lock()

    def delete(self, tenant: str, requested_by: str = "operator") -> dict[str, Any]:
        """Delete `tenant` now and return the signed receipt."""
        return self.run(self.start(tenant, requested_by))

    def start(self, tenant: str, requested_by: str = "operator") -> str:
        """Record a deletion of `tenant` as a job to run (`run`); returns its id."""
        OwnedBy(tenant)
        job_id = uuid7()
        now = self._clock()
        progress = {"requested_by": requested_by, "requested_at": now, "deleted": {}}
        seal = self._services.keyring.seal_record(tenant, _SEAL_PURPOSE, job_id, _sealed(progress))
        progress["seal"] = seal.hex()
        with self._services.db.session(None) as sess:
            sess.add(
                TenantDeletionRow(
                    id=job_id,
                    subject_tenant=tenant,
                    state=RUNNING,
                    step="created",
                    progress=json.dumps(progress),
                    receipt=None,
                    created_at=now,
                    updated_at=now,
                )
            )
        return job_id

    def run(self, job_id: str) -> dict[str, Any]:
        """Run the remaining steps of a deletion and return its receipt. A scrub a reader
        blocked (`ScrubIncomplete`) stops it short; it stays running for the sweeper
        (`resume_stalled`). A deletion another thread is running raises `Conflict`."""
        with self._lock:
            if job_id in self._running:
                raise Conflict("this tenant deletion is running")
            self._running.add(job_id)
        try:
            return self._run(job_id)
        finally:
            with self._lock:
                self._running.discard(job_id)

    def _run(self, job_id: str) -> dict[str, Any]:
        row = self._row(job_id)
        if row.state == DONE and row.receipt:
            receipt: dict[str, Any] = json.loads(row.receipt)
            return receipt
        tenant, progress = row.subject_tenant, json.loads(row.progress)
        self._check_seal(job_id, tenant, progress)
        done = set(STEPS[: STEPS.index(row.step) + 1] if row.step in STEPS else ())
        eraser, subject = self._services.eraser, OwnedBy(tenant)
        deleted: dict[str, int] = progress["deleted"]

        def step(name: str, action: Callable[[], None]) -> None:
            if name in done:
                return
            if self.fault is not None:
                self.fault(f"before:{name}")
            action()
            if self.fault is not None:
                self.fault(f"after:{name}")
            self._record(job_id, name, progress)
            done.add(name)

        def revoke() -> None:
            deleted["api_keys"] = eraser.delete_api_keys(subject)

        def shred() -> None:
            deleted["keys"] = eraser.shred_keys(subject)

        def vectors() -> None:
            deleted["vectors"] = eraser.delete_vectors(subject)

        def rows() -> None:
            for table, count in eraser.delete_rows(subject).items():
                deleted[table] = deleted.get(table, 0) + count  # api_keys: revoke deleted most

        def verify() -> None:
            progress["remaining"] = self.remaining(tenant)

        with self._services.vault.parts.guard.blocking(
            tenant, None, before_drain=lambda: step("revoke", revoke)
        ):
            step("shred", shred)
            step("vectors", vectors)
            step("rows", rows)
            step("scrub", lambda: eraser.scrub(subject))
            step("verify", verify)
        return self._sign(job_id, tenant, progress)

    def _check_seal(self, job_id: str, tenant: str, progress: dict[str, Any]) -> None:
        """Refuse a job whose tenant still has keys unless its seal opens under them."""
        keyring = self._services.keyring
        if not keyring.has_tenant(tenant):
            return  # shredded by this job (or never keyed): nothing left a forger could destroy
        try:
            sealed = bytes.fromhex(str(progress.get("seal", "")))
            opened = keyring.open_record(tenant, _SEAL_PURPOSE, job_id, sealed)
        except (ValueError, DecryptionError, KeyNotFound):
            opened = None
        if opened != _sealed(progress):
            log.warning("tenant deletion %s refused: its seal does not open", job_id)
            raise ForgedDeletion("this tenant deletion was not requested by the operator")

    def remaining(self, tenant: str) -> dict[str, int]:
        """What is left of the tenant in every store: all zero after its deletion."""
        counts = {
            "keys": self._services.keyring.count_keys(tenant),
            "vectors": self._services.index.count(namespace_for(tenant), PointFilter()),
            "namespace": int(namespace_for(tenant) in self._services.index.namespaces()),
            "embedding_cache": self._services.vault.parts.embedder.count_scope(tenant),
        }
        with self._services.db.session(tenant) as sess:
            for model in (*TENANT_ROW_MODELS, TenantRow):
                counts[model.__tablename__] = int(
                    sess.execute(
                        select(func.count()).select_from(model).where(model.tenant_id == tenant)
                    ).scalar_one()
                )
        return counts

    def receipt(self, job_id: str) -> dict[str, Any]:
        """The signed receipt of a finished deletion."""
        row = self._row(job_id)
        if row.state != DONE or not row.receipt:
            raise NotFound("no receipt for this tenant deletion yet")
        receipt: dict[str, Any] = json.loads(row.receipt)
        return receipt

    def view(self, job_id: str) -> dict[str, Any]:
        """The deletion as the API shows it: its receipt when done, else its last step."""
        row = self._row(job_id)
        if row.state == DONE and row.receipt:
            return {"id": job_id, "state": DONE, **json.loads(row.receipt)}
        return {"id": job_id, "state": row.state, "step": row.step}

    def resume(self) -> int:
        """Finish every deletion a crash left unfinished; returns how many finished."""
        return self._finish_running(idle_for=None)

    def resume_stalled(self, idle_for: float = STALLED_SECONDS) -> int:
        """A maintenance sweeper: finish the deletions that stopped short (a scrub a reader
        blocked) and have not moved for `idle_for` seconds; a deletion a thread of this
        process is running is left to it. Returns how many finished."""
        return self._finish_running(idle_for=idle_for)

    def _finish_running(self, idle_for: float | None) -> int:
        query = select(TenantDeletionRow.id).where(TenantDeletionRow.state == RUNNING)
        if idle_for is not None:
            query = query.where(TenantDeletionRow.updated_at <= self._clock() - idle_for)
        with self._services.db.session(None) as sess:
            ids = list(sess.execute(query).scalars())
        finished = 0
        for job_id in ids:
            try:
                self.run(job_id)
                finished += 1
            except Conflict:
                continue  # its own thread runs it
            except ForgedDeletion:
                continue  # logged; never run
            except Exception as exc:
                log.warning("tenant deletion %s not resumed: %s", job_id, type(exc).__name__)
        return finished

    def _sign(self, job_id: str, tenant: str, progress: dict[str, Any]) -> dict[str, Any]:
        deleted: dict[str, int] = progress["deleted"]
        receipt = signed_receipt(
            self._services.keyring.signing_keys(),
            receipt_id=job_id,
            tenant=tenant,
            subject={"user_id": None, "agent_id": None},
            requested_by=progress["requested_by"],
            requested_at=progress["requested_at"],
            completed_at=self._clock(),
            keys_destroyed=deleted.get("keys", 0),
            deleted=deleted,
            remaining=progress.get("remaining", {}),
        )
        with self._services.db.session(None) as sess:
            row = sess.get(TenantDeletionRow, job_id)
            if row is None:
                raise NotFound("no such tenant deletion")
            row.state, row.step, row.receipt = DONE, "sign", json.dumps(receipt, sort_keys=True)
            row.updated_at = self._clock()
        return receipt

    def _record(self, job_id: str, step: str, progress: dict[str, Any]) -> None:
        with self._services.db.session(None) as sess:
            row = sess.get(TenantDeletionRow, job_id)
            if row is None:
                raise NotFound("no such tenant deletion")
            row.step, row.progress, row.updated_at = step, json.dumps(progress), self._clock()

    def _row(self, job_id: str) -> TenantDeletionRow:
        if not isinstance(job_id, str) or len(job_id) > 64:
            raise NotFound("no such tenant deletion")
        with self._services.db.session(None) as sess:
            row = sess.get(TenantDeletionRow, job_id)
        if row is None:
            raise NotFound("no such tenant deletion")
        return row


def _sealed(progress: dict[str, Any]) -> bytes:
    """What a deletion's seal covers: who asked and when (the job id and tenant are bound)."""
    return json.dumps(
        {"requested_by": progress["requested_by"], "requested_at": progress["requested_at"]},
        sort_keys=True,
    ).encode()
