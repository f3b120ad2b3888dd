"""`Batcher`: concurrent callers coalesce into micro-batches, led by one of them.

A caller `submit`s a payload. If no batch is running, it becomes the leader: it waits at most
the window (about a millisecond) and only while callers counted in by `arriving` are still on
their way, so a lone caller never waits; then it takes the pending payloads (up to `max_batch`,
its own first), runs them as one batch, hands every caller its outcome and wakes the followers.
A follower returns only once its batch is done. The next leader is whichever waiting caller
takes the lock first. Callers that queue while a batch runs form the next one, so batches grow
with the load without a timer.

Two batchers use it: group commit of concurrent adds (`memvault.vault.group_commit`) and the
embedding of concurrent search queries (`memvault.embed._lazy`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

__all__ = ["Arrival", "BatchStats", "Batcher", "InFlight", "Runner"]


@dataclass(frozen=True, slots=True)
class BatchStats:
    """Counts since the batcher was built: batches run, jobs in them, leader waits."""

    batches: int = 0
    jobs: int = 0
    waits: int = 0
    largest: int = 0


class Arrival:
    """A caller on its way to `submit` (see `Batcher.arriving`): for group commit, a writer
    inside the add path that has not submitted yet."""

    __slots__ = ("open",)

    def __init__(self) -> None:
        self.open = True


class _Job:
    """A submitted payload. Its caller waits on `wake` alone: set, under the batcher's lock,
    when the job is done or when the caller is to lead the next batch."""

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


Observer = Callable[[int, bool], None]
"""Told of each batch run: its size and whether its leader waited (a metric)."""


class Batcher:
    """The leader/follower batcher (see the module).

    `enabled=False` runs every submission alone in its caller's thread. `window_ms` bounds the
    leader's wait for callers still preparing; `max_batch` caps the jobs in one batch;
    `observe` is told of every batch run.
    """

    def __init__(
        self,
        run: Runner,
        *,
        enabled: bool = True,
        window_ms: float = 0.0,
        max_batch: int = 64,
        observe: Observer | None = None,
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
        self._stats = BatchStats()
        self._observe = observe

    @contextmanager
    def arriving(self) -> Iterator[Arrival]:
        """Count the caller as on its way to `submit` (a leader may wait for it)."""
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

    def stats(self) -> BatchStats:
        """A snapshot of the counts (for tests, benchmarks and operators)."""
        with self._cond:
            return self._stats

    def pending(self) -> int:
        """How many submitted jobs wait for a leader right now."""
        with self._cond:
            return len(self._pending)

    def _hand_on(self) -> None:
        """Under the lock, as a leader stops: the oldest waiting job's caller leads next (one
        caller woken, not every one)."""
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
        """Under the lock: wait out the window while callers prepare, then take the batch."""
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
                outcomes = [RuntimeError("a batch lost a job's outcome")] * len(batch)
            with self._cond:
                for job, outcome in zip(batch, outcomes, strict=True):
                    job.outcome, job.done = outcome, True
                    job.wake.set()
                s = self._stats
                self._stats = BatchStats(
                    s.batches + 1, s.jobs + len(batch), s.waits + waited, max(s.largest, len(batch))
                )
                self._hand_on()
            if self._observe is not None:
                self._observe(len(batch), waited)


def _unwrap(outcome: Any) -> Any:
    if isinstance(outcome, BaseException):
        raise outcome
    return outcome
