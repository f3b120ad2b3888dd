"""Retrieval counts for heat, recorded off the request path and written in batches."""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Callable, Sequence

from memvault.store.database import Database
from memvault.store.models import NoteRow
from memvault.store.scoping import OwnedBy, scoped_update

log = logging.getLogger("memvault.heat")

FLUSH_EVERY_SECONDS = 2.0
FLUSH_AT_PENDING = 512


class RetrievalLog:
    """Counts retrievals in memory; a background thread adds them to the notes every few seconds.

    A search only touches an in-memory counter under a lock, so its latency never includes a
    write. Counts not yet flushed are lost if the process dies: heat is a ranking hint, not a
    record.
    """

    def __init__(self, db: Database, clock: Callable[[], float], *, background: bool = True):
        self._db = db
        self._clock = clock
        self._pending: dict[str, Counter[str]] = {}
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        if background:
            self._thread = threading.Thread(target=self._run, name="memvault-heat", daemon=True)
            self._thread.start()

    def record(self, tenant: str, note_ids: Sequence[str]) -> None:
        """Count one retrieval of each note (cheap; never blocks on the database)."""
        if not note_ids:
            return
        with self._lock:
            counter = self._pending.setdefault(tenant, Counter())
            counter.update(note_ids)
            size = sum(len(c) for c in self._pending.values())
        if size >= FLUSH_AT_PENDING:
            self._wake.set()

    def pending(self) -> int:
        with self._lock:
            return sum(sum(c.values()) for c in self._pending.values())

    def flush(self) -> int:
        """Write pending counts now; returns how many notes were updated."""
        with self._lock:
            batch, self._pending = self._pending, {}
        now = self._clock()
        updated = 0
        for tenant, counts in batch.items():
            by_count: dict[int, list[str]] = {}
            for note_id, n in counts.items():
                by_count.setdefault(n, []).append(note_id)
            with self._db.session(tenant) as sess:
                for n, ids in by_count.items():
                    result = sess.execute(
                        scoped_update(
                            OwnedBy(tenant),
                            NoteRow.id.in_(ids),
                            retrieval_count=NoteRow.retrieval_count + n,
                            last_accessed=now,
                        )
                    )
                    updated += int(result.rowcount)  # type: ignore[attr-defined]
        return updated

    def close(self) -> None:
        """Stop the background thread and flush what is left."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        self.flush()

    def _run(self) -> None:
        while not self._stop.is_set():
            self._wake.wait(FLUSH_EVERY_SECONDS)
            self._wake.clear()
            if self._stop.is_set():
                break
            try:
                self.flush()
            except Exception as exc:  # a failed flush must not kill the thread
                log.warning("retrieval counts not flushed: %s", type(exc).__name__)
