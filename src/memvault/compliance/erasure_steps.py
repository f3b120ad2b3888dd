"""The steps of one erase job's run (`JobRun`), and the state a job keeps between runs.

`compliance.erasure.ErasureJobs` records, resumes and reports jobs; each run executes the steps
of `STEPS` it has not recorded yet, through the services' `Eraser`, and signs the receipt.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from memvault.compliance import inventory
from memvault.compliance.receipts import signed_receipt
from memvault.compliance.rotation_erasure import forget_subject
from memvault.errors import VaultError
from memvault.store.scoping import OwnedBy

if TYPE_CHECKING:
    from memvault.runtime.factory import Services

STEPS = ("count", "revoke", "shred", "vectors", "rows", "scrub", "verify", "sign")

Fault = Callable[[str], None]


@dataclass
class JobState:
    """What a job knows (sealed in its row): the subject, who asked, and the counts so far."""

    user_id: str
    agent_id: str | None
    requested_by: str
    requested_at: float
    keys_destroyed: int = 0
    deleted: dict[str, int] = field(default_factory=dict)
    before: dict[str, int] = field(default_factory=dict)
    remaining: dict[str, int] = field(default_factory=dict)
    attempts: int = 0
    dedicated: list[str] = field(default_factory=list)
    """The user's dedicated (Mode B) agents, recorded by the first step: their partitions are
    erased and counted after their `agent_isolation` records are gone."""
    last_error: str | None = None
    """Why the last run stopped short: an exception's class, or the stores left non-empty
    (names and counts only, never ids or text)."""

    def to_bytes(self) -> bytes:
        return json.dumps(self.__dict__, sort_keys=True).encode()

    @classmethod
    def from_bytes(cls, raw: bytes) -> JobState:
        return cls(**json.loads(raw))


class ErasureIncomplete(VaultError):
    """Verification found something of the erased scope left: the job goes round again and is
    never signed `done` unverified."""

    code = "erasure_incomplete"


def describe_stop(exc: Exception) -> str:
    """Why a run stopped: the error class and its code, never a message that could hold ids."""
    if isinstance(exc, ErasureIncomplete):
        return str(exc)
    code = getattr(exc, "code", None)
    orig = getattr(exc, "orig", None)  # a database error: name the driver's class (deadlock…)
    name = type(orig).__name__ if orig is not None else type(exc).__name__
    return f"{name} ({code})" if isinstance(code, str) else name


def _put(state: JobState, store: str, count: int) -> None:
    state.deleted[store] = state.deleted.get(store, 0) + int(count)


class JobHost(Protocol):
    """What a run needs of `ErasureJobs`: its services, clock, test hook and records."""

    fault: Fault | None

    @property
    def services(self) -> Services: ...

    @property
    def clock(self) -> Callable[[], float]: ...

    def record(self, tenant: str, job_id: str, step: str, state: JobState) -> None: ...

    def finish(self, tenant: str, job_id: str, receipt: dict[str, Any]) -> None: ...


class JobRun:
    """One run of a job: executes the steps it has not recorded yet, in order."""

    def __init__(
        self, jobs: JobHost, tenant: str, job_id: str, state: JobState, reached: str
    ) -> None:
        self.jobs = jobs
        self.tenant = tenant
        self.job_id = job_id
        self.state = state
        self.done = set(STEPS[: STEPS.index(reached) + 1] if reached in STEPS else ())
        self.subject = OwnedBy(tenant, state.user_id, state.agent_id)

    def step(self, name: str) -> None:
        if name in self.done:
            return
        fault = self.jobs.fault
        if fault is not None:
            fault(f"before:{name}")
        getattr(self, f"_{name}")()
        if fault is not None:
            fault(f"after:{name}")
        if name != "sign":  # `finish` records the last step with the receipt
            self.jobs.record(self.tenant, self.job_id, name, self.state)
        self.done.add(name)

    def _count(self) -> None:
        eraser = self.jobs.services.eraser
        self.state.dedicated = eraser.remember_dedicated(self.subject, self.state.dedicated)
        self.state.before = inventory.remaining(self.jobs.services, self.subject)

    def _revoke(self) -> None:
        _put(self.state, "api_keys", self.jobs.services.eraser.delete_api_keys(self.subject))

    def _shred(self) -> None:
        destroyed = self.jobs.services.eraser.shred_keys(self.subject)
        self.state.keys_destroyed += destroyed
        _put(self.state, "data_keys", destroyed)

    def _vectors(self) -> None:
        _put(self.state, "vectors", self.jobs.services.eraser.delete_vectors(self.subject))

    def _rows(self) -> None:
        services, subject = self.jobs.services, self.subject
        _put(
            self.state,
            "retrieval_counters",
            inventory.count("retrieval_counters", services, subject),
        )
        cached = services.vault.parts.embedder.count_scope(
            subject.tenant, subject.user, subject.agent
        )
        _put(self.state, "embedding_cache", cached)
        counts = services.eraser.delete_rows(subject)
        for name in ("notes", "links", "refusals", "idempotency_records"):
            _put(self.state, name, counts.get(name, 0))
        assert subject.user is not None
        rotations = forget_subject(services, subject.tenant, subject.user, subject.agent)
        _put(self.state, "key_rotation_jobs", rotations)

    def _scrub(self) -> None:
        self.jobs.services.eraser.scrub(self.subject)

    def _verify(self) -> None:
        self.state.remaining = inventory.remaining(self.jobs.services, self.subject)
        left = {name: n for name, n in sorted(self.state.remaining.items()) if n}
        if left:
            self.state.attempts += 1
            self.state.last_error = "not empty after the erase: " + ", ".join(
                f"{name}={n}" for name, n in left.items()
            )
            self.jobs.record(self.tenant, self.job_id, "count", self.state)
            raise ErasureIncomplete(self.state.last_error)

    def _sign(self) -> None:
        state = self.state
        # `deleted` survives a crash between a step and its record through the first count.
        deleted = {
            name: max(state.deleted.get(name, 0), state.before.get(name, 0) - left)
            for name, left in state.remaining.items()
        }
        receipt = signed_receipt(
            self.jobs.services.keyring.signing_keys(),
            receipt_id=self.job_id,
            tenant=self.tenant,
            subject={"user_id": state.user_id, "agent_id": state.agent_id},
            requested_by=state.requested_by,
            requested_at=state.requested_at,
            completed_at=self.jobs.clock(),
            keys_destroyed=max(state.keys_destroyed, deleted.get("data_keys", 0)),
            deleted=deleted,
            remaining=state.remaining,
            beyond_reach=self.jobs.services.keyring.reach_facts(
                self.jobs.services.settings.keystore_backup_retention_days
            ),
        )
        self.jobs.finish(self.tenant, self.job_id, receipt)
