"""The reconciler: repairs what a crash between the write steps leaves behind.

- A `pending` row older than the grace period is completed: its text is decrypted, re-embedded
  and upserted, then the row becomes `active`. If it cannot be decrypted (keys shredded), the
  row is removed.
- A vector whose row does not exist (an orphan) is deleted from the index.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import select

from memvault.errors import DecryptionError
from memvault.vault.index.base import PointFilter
from memvault.vault.service import ACTIVE, PENDING, Vault, namespace_for
from memvault.vault.store.models import NoteRow, TenantRow
from memvault.vault.store.scoping import OwnedBy, scoped_delete, scoped_select, scoped_update


@dataclass(frozen=True, slots=True)
class ReconcileReport:
    completed: int
    removed: int
    orphans_deleted: int


class Reconciler:
    """Brings SQL (the source of truth) and the vector index back into agreement."""

    def __init__(self, vault: Vault) -> None:
        self._vault = vault
        self._parts = vault.parts

    def tenants(self) -> list[str]:
        """Tenants in the table, plus any namespace the index holds (orphans of a lost tenant)."""
        with self._parts.db.session(None) as sess:
            known = set(sess.execute(select(TenantRow.tenant_id)).scalars())
        return sorted(known | set(self._parts.index.namespaces()))

    def run(self, grace_seconds: float = 60.0) -> ReconcileReport:
        """Repair every tenant; rows younger than `grace_seconds` may still be in flight."""
        completed = removed = orphans = 0
        for tenant in self.tenants():
            c, r, o = self.run_tenant(tenant, grace_seconds)
            completed, removed, orphans = completed + c, removed + r, orphans + o
        return ReconcileReport(completed, removed, orphans)

    def run_tenant(self, tenant: str, grace_seconds: float) -> tuple[int, int, int]:
        target = OwnedBy(tenant)
        namespace = namespace_for(tenant)
        cutoff = self._parts.clock() - grace_seconds
        with self._parts.db.session(tenant) as sess:
            pending = list(
                sess.execute(
                    scoped_select(target, NoteRow.status == PENDING, NoteRow.updated_at <= cutoff)
                ).scalars()
            )
        completed = removed = 0
        with self._parts.db.session(tenant) as sess:
            avgdl = self._parts.corpus.avgdl(sess, tenant, namespace)
        for row in pending:
            try:
                note = self._vault.decrypt_row(row)
            except DecryptionError:
                with self._parts.db.session(tenant) as sess:
                    sess.execute(scoped_delete(target, NoteRow.id == row.id))
                    self._parts.corpus.adjust(sess, tenant, namespace, -1, -row.token_count)
                self._parts.index.delete(namespace, [row.id])
                removed += 1
                continue
            self._parts.index.upsert(
                namespace, [self._vault.index_point(row, note.text, note.topics, avgdl)]
            )
            with self._parts.db.session(tenant) as sess:
                sess.execute(scoped_update(target, NoteRow.id == row.id, status=ACTIVE))
            completed += 1
        # Scroll before reading the rows: a point seen here had its row inserted earlier, so an
        # add in flight is never mistaken for an orphan.
        point_ids = self._parts.index.scroll_ids(namespace, PointFilter())
        with self._parts.db.session(tenant) as sess:
            known = set(sess.execute(scoped_select(target).with_only_columns(NoteRow.id)).scalars())
        orphan_ids = [i for i in point_ids if i not in known]
        if orphan_ids:
            self._parts.index.delete(namespace, orphan_ids)
        return completed, removed, len(orphan_ids)
