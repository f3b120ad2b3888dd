"""Group commit: concurrent adds coalesce into micro-batches, led by one of their writers.

A writer counts itself in (`GroupCommitter.arriving`) when it enters the add path, and
`submit`s its prepared work once screened and sealed. If no batch is running, it becomes the
leader: it waits at most the window (about a millisecond) and only while other writers are
still preparing, so a lone writer never waits; then it takes the pending jobs (up to
`max_batch`, its own first), runs them as one batch, hands every job its outcome and wakes the
followers. A follower returns only once its batch is durable. The next leader is whichever
waiting writer takes the lock first.

`store_batch` keeps the add's crash-safety protocol (docs/architecture.md, "Write protocol"):
one embedding model call for every text of the batch, one upsert per namespace, then one
transaction per tenant. If the combined batch fails before a job's transaction commits, each
such job is run again alone, so a bad job fails only its own caller.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlalchemy.orm import Session

from memvault.observability import count_group_commit
from memvault.vault.drafts import INSERT_NOTE, row_params
from memvault.vault.points import build_points, embed_items
from memvault.vault.sessions import IndexContext
from memvault.vault.store.driver_sql import DriverConnection

if TYPE_CHECKING:
    from memvault.vault.service import Vault
    from memvault.vault.writes import Prepared

__all__ = ["Arrival", "GroupCommitStats", "GroupCommitter", "StoreJob", "store_batch"]

DEFAULT_WINDOW_MS = 1.0
DEFAULT_MAX_BATCH = 64


@dataclass(frozen=True, slots=True)
class StoreJob:
    """One add's share of a batch: its prepared rows (one tenant) with their index contexts."""

    tenant: str
    namespace: str
    items: Sequence[Prepared]
    contexts: Sequence[IndexContext]


@dataclass(frozen=True, slots=True)
class GroupCommitStats:
    """Counts since the committer was built: batches run, jobs in them, leader waits."""

    batches: int = 0
    jobs: int = 0
    waits: int = 0
    largest: int = 0


class Arrival:
    """A writer inside the add path that has not submitted yet (see `GroupCommitter.arriving`)."""

    __slots__ = ("open",)

    def __init__(self) -> None:
        self.open = True


class _Job:
    """A submitted payload. Its writer waits on `wake` alone: set, under the committer's lock,
    when the job is done or when the writer is to lead the next batch."""

    __slots__ = ("done", "outcome", "payload", "wake")

    def __init__(self, payload: Any) -> None:
        self.payload = payload
        self.done = False
        self.outcome: Any = None
        self.wake = threading.Event()


class InFlight:
    """How many callers are inside a block right now (`with counter:`), thread-safe.

    The vault counts its adds with one (`Vault.adds_in_flight`): A-MEM reads it to leave its
    inline work to the job worker while other adds are in flight.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._count = 0

    def __enter__(self) -> InFlight:
        with self._lock:
            self._count += 1
        return self

    def __exit__(self, *_exc: object) -> None:
        with self._lock:
            self._count -= 1

    @property
    def count(self) -> int:
        """How many are inside now (the caller included, when it is)."""
        return self._count


Runner = Callable[[Sequence[Any]], list[Any]]
"""Runs payloads as one batch; returns, per payload, its result or the exception it raised."""


class GroupCommitter:
    """The leader/follower batcher of one vault's adds.

    `enabled=False` runs every submission alone in its caller's thread. `window_ms` bounds the
    leader's wait for writers still preparing; `max_batch` caps the jobs in one batch.
    """

    def __init__(
        self,
        run: Runner,
        *,
        enabled: bool = True,
        window_ms: float = DEFAULT_WINDOW_MS,
        max_batch: int = DEFAULT_MAX_BATCH,
    ) -> None:
        if window_ms < 0 or max_batch < 1:
            raise ValueError("window_ms must be >= 0 and max_batch >= 1")
        self._run = run
        self.enabled = enabled
        self.window = window_ms / 1000.0
        self.max_batch = max_batch
        self._cond = threading.Condition()
        self._pending: list[_Job] = []
        self._arriving = 0
        self._leading = False
        self._stats = GroupCommitStats()

    @contextmanager
    def arriving(self) -> Iterator[Arrival]:
        """Count the caller as a writer on its way to `submit` (a leader may wait for it)."""
        arrival = Arrival()
        with self._cond:
            self._arriving += 1
        try:
            yield arrival
        finally:
            with self._cond:
                if self._close(arrival):
                    self._cond.notify_all()

    def submit(self, payload: Any, arrival: Arrival | None = None) -> Any:
        """Run `payload` in a batch; return its result once the batch is done, or raise its error.

        `arrival`, from `arriving`, stops counting the caller as preparing.
        """
        if not self.enabled:
            with self._cond:
                if arrival is not None:
                    self._close(arrival)
            return _unwrap(self._run([payload])[0])
        job = _Job(payload)
        queued = False
        while True:
            with self._cond:  # one hold queues the job and, if no one leads, takes the lead
                if not queued:
                    queued = True
                    if arrival is not None:
                        self._close(arrival)
                    self._pending.append(job)
                    self._cond.notify_all()  # only a leader gathering its batch waits on it
                elif job.done:
                    return _unwrap(job.outcome)
                if not self._leading:  # taken in the same hold of the lock: one leader at a time
                    self._leading = True
                    try:
                        batch, waited = self._gather(job)
                    except BaseException:  # e.g. interrupted while waiting: withdraw, hand on
                        if job in self._pending:
                            self._pending.remove(job)
                        self._hand_on()
                        raise
                    break
                job.wake.clear()
            job.wake.wait()  # until its batch is done, or it is handed the lead
        self._lead(batch, waited)
        return _unwrap(job.outcome)

    def stats(self) -> GroupCommitStats:
        """A snapshot of the counts (for tests, benchmarks and operators)."""
        with self._cond:
            return self._stats

    def pending(self) -> int:
        """How many submitted jobs wait for a leader right now."""
        with self._cond:
            return len(self._pending)

    def _hand_on(self) -> None:
        """Under the lock, as a leader stops: the oldest waiting job's writer leads next (one
        writer woken, not every one)."""
        self._leading = False
        if self._pending:
            self._pending[0].wake.set()

    def _close(self, arrival: Arrival) -> bool:
        if not arrival.open:
            return False
        arrival.open = False
        self._arriving -= 1
        return True

    def _gather(self, own: _Job) -> tuple[list[_Job], bool]:
        """Under the lock: wait out the window while writers prepare, then take the batch."""
        waited = False
        if self._arriving > 0 and self.window > 0 and len(self._pending) < self.max_batch:
            waited = True
            deadline = time.monotonic() + self.window
            while self._arriving > 0 and len(self._pending) < self.max_batch:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                self._cond.wait(remaining)
        self._pending.remove(own)
        take = self.max_batch - 1
        batch = [own, *self._pending[:take]]
        del self._pending[:take]
        return batch, waited

    def _lead(self, batch: list[_Job], waited: bool) -> None:
        outcomes: list[Any] = []
        try:
            outcomes = self._run([job.payload for job in batch])
        except BaseException as exc:  # delivered to every job, the leader's own included
            outcomes = [exc] * len(batch)
        finally:
            if len(outcomes) != len(batch):
                outcomes = [RuntimeError("group commit lost a job's outcome")] * len(batch)
            with self._cond:
                for job, outcome in zip(batch, outcomes, strict=True):
                    job.outcome, job.done = outcome, True
                    job.wake.set()
                s = self._stats
                self._stats = GroupCommitStats(
                    s.batches + 1, s.jobs + len(batch), s.waits + waited, max(s.largest, len(batch))
                )
                self._hand_on()
            count_group_commit(len(batch), waited)


def _unwrap(outcome: Any) -> Any:
    if isinstance(outcome, BaseException):
        raise outcome
    return outcome


class _Failed:
    """A job whose transaction did not commit: it is run again alone."""

    __slots__ = ("error",)

    def __init__(self, error: Exception) -> None:
        self.error = error


def store_batch(vault: Vault, jobs: Sequence[StoreJob]) -> list[set[int] | BaseException]:
    """Index and commit jobs together; per job, the positions a live twin refused, or an error.

    A job whose share failed before its commit runs again alone; only a job that fails alone
    (or a batch of one) gets the error. A job whose transaction committed is never rerun.
    """
    try:
        outcomes: list[Any] = _together(vault, jobs)
    except Exception as exc:  # nothing of this batch committed
        outcomes = [_Failed(exc)] * len(jobs)
    if len(jobs) == 1:
        return [o.error if isinstance(o, _Failed) else o for o in outcomes]
    results: list[set[int] | BaseException] = []
    for job, outcome in zip(jobs, outcomes, strict=True):
        if isinstance(outcome, _Failed):
            results.extend(store_batch(vault, [job]))
        else:
            results.append(outcome)
    return results


def _together(vault: Vault, jobs: Sequence[StoreJob]) -> list[Any]:
    """Embed once, upsert once per namespace, then one transaction per tenant (see module)."""
    parts = vault.parts
    flat = [
        (job, item, ctx) for job in jobs for item, ctx in zip(job.items, job.contexts, strict=True)
    ]
    entries = [(item.row, item.text, item.topics) for _, item, _ in flat]
    vectors = embed_items(parts, entries, [ctx for _, _, ctx in flat])
    groups: dict[tuple[str, str], list[int]] = {}
    for k, job in enumerate(jobs):
        groups.setdefault((job.tenant, job.namespace), []).append(k)
    start = 0
    offsets = []
    for job in jobs:
        offsets.append(start)
        start += len(job.items)
    for (tenant, namespace), members in groups.items():
        rows = [item.row for k in members for item in jobs[k].items]
        avgdl = parts.corpus.avgdl_with(
            tenant, namespace, len(rows), sum(r.token_count for r in rows)
        )
        picked = [i for k in members for i in range(offsets[k], offsets[k] + len(jobs[k].items))]
        points = build_points(
            parts,
            [entries[i] for i in picked],
            avgdl,
            tokens=[flat[i][1].tokens for i in picked],
            contexts=[flat[i][2] for i in picked],
            vectors=[vectors[i] for i in picked],
        )
        parts.index.upsert(namespace, points)
    vault.fault("after_upsert")
    now = parts.clock()
    outcomes: list[Any] = [None] * len(jobs)
    for (tenant, namespace), members in groups.items():
        shares: list[Any]
        try:
            shares = _commit(vault, tenant, namespace, [jobs[k] for k in members], now)
        except Exception as exc:
            shares = [_Failed(exc)] * len(members)
        for k, outcome in zip(members, shares, strict=True):
            outcomes[k] = outcome
    if any(not isinstance(o, _Failed) for o in outcomes):
        try:
            vault.fault("after_commit")
        except Exception as exc:  # committed: reported, never rerun
            outcomes = [o if isinstance(o, _Failed) else exc for o in outcomes]
    return outcomes


def _commit(
    vault: Vault, tenant: str, namespace: str, jobs: Sequence[StoreJob], now: float
) -> list[set[int]]:
    """ONE transaction for a tenant's jobs: insert unless a live twin exists, count, link.

    Without session links to write, the transaction runs on the driver's connection
    (`Database.driver_transaction`): the add's hot path skips the ORM session.
    """
    from memvault.vault.session_index import SessionIndexer

    parts = vault.parts
    refused: list[set[int]] = [set() for _ in jobs]
    linking = any(ctx.prev_id is not None for job in jobs for ctx in job.contexts)
    transaction: AbstractContextManager[Session | DriverConnection] = (
        parts.db.session(tenant) if linking else parts.db.driver_transaction(tenant)
    )
    with transaction as sess:
        stored = []
        prev_of: dict[str, str | None] = {}
        for k, job in enumerate(jobs):
            for pos, (item, ctx) in enumerate(zip(job.items, job.contexts, strict=True)):
                if not INSERT_NOTE.rows(sess, row_params(item.row, now)):
                    refused[k].add(pos)
                else:
                    stored.append(item.row)
                    if ctx.prev_id is not None:
                        prev_of[item.row.id] = ctx.prev_id
        parts.corpus.add_returning(
            sess, tenant, namespace, len(stored), sum(r.token_count for r in stored)
        )
        if prev_of:
            assert isinstance(sess, Session)  # `linking`
            SessionIndexer(vault).link_new(sess, stored, prev_of)
    return refused
