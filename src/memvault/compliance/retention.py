"""Retention: purge the notes whose TTL has passed, then compact the vector index.

Reads never wait for this sweep: every read path compares `expires_at` with the vault clock
(`ScopedVault.live_clause`), so a note disappears from get, list, search and the graph walk the
moment it expires. The sweep is about storage: it removes the expired note's row, links, corpus
statistics and vector through `NoteWriter.purge` (the path an owner's purge takes), asks the index
to compact the tenant's namespace so the deleted points leave its segments, and records one
audit event per tenant with the count (never an id or a text).

Work is bounded: at most `max_batches` batches of `batch` notes per tenant per sweep; what is
left waits for the next pass. A row that fails is logged by note id and skipped.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlalchemy import ColumnElement

from memvault.audit.log import AuditLog
from memvault.errors import Conflict
from memvault.scope import Scope
from memvault.store.models import NoteRow
from memvault.store.scoping import OwnedBy, scoped_select
from memvault.vault.drafts import ACTIVE, namespace_for
from memvault.vault.service import Vault
from memvault.vault.writes import NoteWriter

if TYPE_CHECKING:
    from memvault.index.base import VectorIndex
    from memvault.runtime.factory import Services

log = logging.getLogger(__name__)

BATCH = 200
"""Expired notes loaded (ids only) per query."""
MAX_BATCHES = 25
"""Batches per tenant per sweep: at most 5,000 purges per tenant per pass."""


def expired_clause(now: float) -> ColumnElement[bool]:
    """Rows whose TTL has passed at `now` (the same boundary the read paths use)."""
    return NoteRow.expires_at.is_not(None) & (NoteRow.expires_at <= now)


@dataclass(frozen=True, slots=True)
class TenantSweep:
    """What one sweep did in one tenant."""

    tenant: str
    purged: int
    failed: int
    compacted: int
    """Index partitions the compaction rewrote (0 when the store compacts by itself)."""


class RetentionSweeper:
    """Purges expired notes tenant by tenant. Call it (no arguments) to run one sweep."""

    def __init__(
        self,
        vault: Vault,
        index: VectorIndex,
        audit: AuditLog,
        *,
        batch: int = BATCH,
        max_batches: int = MAX_BATCHES,
    ) -> None:
        if batch < 1 or max_batches < 1:
            raise ValueError("batch and max_batches must be positive")
        self._vault = vault
        self._parts = vault.parts
        self._index = index
        self._audit = audit
        self._batch = batch
        self._max_batches = max_batches
        self.last: list[TenantSweep] = []

    def __call__(self) -> int:
        """Sweep every tenant with an expired note once; returns how many notes were purged."""
        reports = []
        for tenant in self._parts.db.expired_tenant_ids(self._parts.clock()):
            try:
                reports.append(self.sweep_tenant(tenant))
            except Exception as exc:  # one tenant's failure never stops the others
                log.error("retention sweep of tenant %s failed (%s)", tenant, type(exc).__name__)
        self.last = reports
        return sum(r.purged for r in reports)

    def sweep_tenant(self, tenant: str) -> TenantSweep:
        """Purge the expired notes of one tenant, compact its namespace, audit the count."""
        now = self._parts.clock()
        purged = failed = 0
        after = ""
        for _ in range(self._max_batches):
            batch = self._expired_ids(tenant, now, after)
            for note_id in batch:
                outcome = self._purge_one(tenant, note_id, now)
                purged += outcome == "purged"
                failed += outcome == "failed"
            if len(batch) < self._batch:
                break
            after = batch[-1]
        compacted = self._compact(tenant) if purged else 0
        if purged:  # a row that keeps failing is logged on every pass, never audited each time
            detail: dict[str, Any] = {"count": purged}
            if failed:
                detail["failed"] = failed
            self._audit.record(tenant, "system", "note.expired", **detail)
        if failed:
            log.warning("retention sweep of tenant %s skipped %d notes", tenant, failed)
        return TenantSweep(tenant, purged, failed, compacted)

    def _expired_ids(self, tenant: str, now: float, after: str) -> list[str]:
        """The next batch of expired note ids after `after` (keyset order: skipped rows stay
        behind us, so a row that keeps failing cannot stall the sweep)."""
        query = (
            scoped_select(
                OwnedBy(tenant), NoteRow.status == ACTIVE, expired_clause(now), NoteRow.id > after
            )
            .with_only_columns(NoteRow.id)
            .order_by(NoteRow.id)
            .limit(self._batch)
        )
        with self._parts.db.session(tenant) as sess:
            return [str(i) for i in sess.execute(query).scalars()]

    def _purge_one(self, tenant: str, note_id: str, now: float) -> str:
        """`purged`, `gone` (purged or erased meanwhile) or `failed` (logged by id)."""
        try:
            row = self._expired_row(tenant, note_id, now)
            if row is None:
                return "gone"
            # As a purge by its owner: inside the scope guard (an erase of the user waits for
            # it, or it gives way to the erase) and the note's lock (an update in flight).
            with self._parts.guard.using(tenant, row.user_id), self._vault.note_lock(note_id):
                row = self._expired_row(tenant, note_id, now)  # current token count
                if row is None:
                    return "gone"
                # The owner always reads its note (readers start with it; shared: `*`), so the
                # owner's view admits the purge's scoped delete.
                owner = Scope(row.tenant_id, row.user_id, row.owner)
                NoteWriter(self._vault.scoped(owner)).purge(row)
            return "purged"
        except Conflict:  # the user is being erased: the erase removes the note
            return "gone"
        except Exception as exc:
            log.error("retention purge of note %s failed (%s)", note_id, type(exc).__name__)
            return "failed"

    def _expired_row(self, tenant: str, note_id: str, now: float) -> NoteRow | None:
        with self._parts.db.session(tenant) as sess:
            row: NoteRow | None = sess.execute(
                scoped_select(OwnedBy(tenant), NoteRow.id == note_id, expired_clause(now))
            ).scalar_one_or_none()
        return row

    def _compact(self, tenant: str) -> int:
        """Rewrite the namespace so the purged points leave the index files (not only its map)."""
        try:
            return self._index.compact(namespace_for(tenant))
        except Exception as exc:  # the rows are gone already; the next sweep compacts again
            log.error("index compaction of tenant %s failed (%s)", tenant, type(exc).__name__)
            return 0


def retention_sweeper(
    services: Services, *, batch: int = BATCH, max_batches: int = MAX_BATCHES
) -> Callable[[], int]:
    """The retention sweep of a running service, for its maintenance loop.

    Each call sweeps every tenant once and returns how many expired notes it purged.
    """
    return RetentionSweeper(
        services.vault, services.index, services.audit, batch=batch, max_batches=max_batches
    )
