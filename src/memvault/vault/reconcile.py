"""The reconciler: repairs what a crash between the write steps leaves behind, without a hand.

- A vector whose row does not exist (an orphan) older than the grace period is deleted from the
  index. An add upserts its vector first and inserts its row in one transaction after that, so a
  crash in between leaves exactly such an orphan; a younger one may be an add in flight.
- A `pending` row (left by the earlier three-step add protocol) older than the grace period is
  completed: its text is decrypted, re-embedded and upserted, then the row becomes `active`.
- A staged update (`next_*` columns set) older than the grace period is finished: the staged
  version's vector is upserted and the version swapped in.
- A row whose keys are gone (shredded) is removed with its vector.

One bad row is logged by id and skipped; one failing tenant never stops the others. The server
runs this at startup, before it reports ready, and then periodically (`maintenance.py`).

`run` is incremental: it visits only the partitions (tenant, user) named in the durable dirty
set (`store.index_marks`), which every write that could leave a repair commits first. A pass
with nothing changed reads one empty table, whatever the number of users; a marked user's
repair opens that user's partition only. `run_full` checks every tenant and partition (after a
restore, or by hand).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from memvault.errors import DecryptionError, KeyNotFound
from memvault.index.base import PointFilter
from memvault.observability import count_repairs
from memvault.store import agent_isolation
from memvault.store.index_marks import NO_USER, REMARK_SECONDS, WHOLE_TENANT
from memvault.store.models import NoteRow
from memvault.store.scoping import OwnedBy, scoped_delete, scoped_select, scoped_update
from memvault.vault.drafts import dedicated_tag, user_tag
from memvault.vault.guard import ScopeErasing
from memvault.vault.links import delete_links_of
from memvault.vault.notes import Note
from memvault.vault.service import ACTIVE, PENDING, Vault, namespace_for
from memvault.vault.writes import staged_view, swap_in_next

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ReconcileReport:
    """What one reconcile pass did; `failed` counts rows and tenants skipped after an error."""

    completed: int
    removed: int
    orphans_deleted: int
    updates_completed: int = 0
    failed: int = 0
    tenants_skipped: int = 0


@dataclass(slots=True)
class _Tally:
    completed: int = 0
    removed: int = 0
    orphans: int = 0
    updates: int = 0
    failed: int = 0


def known_tenants(vault: Vault) -> list[str]:
    """Every tenant of the data store, plus any namespace the index holds (Mode A: a namespace
    is a tenant; it may outlive its tenant row, or come before it)."""
    parts = vault.parts
    return sorted(set(parts.db.tenant_ids()) | set(parts.index.namespaces()))


class Reconciler:
    """Brings SQL (the source of truth) and the vector index back into agreement."""

    def __init__(self, vault: Vault) -> None:
        self._vault = vault
        self._parts = vault.parts

    def tenants(self) -> list[str]:
        """Tenants in the table, plus any namespace the index holds (orphans of a lost tenant)."""
        return known_tenants(self._vault)

    def run(self, grace_seconds: float = 60.0) -> ReconcileReport:
        """Repair the partitions marked by writes since they were last checked (see module).

        A mark is cleared once every write it covers is older than `grace_seconds` (then its
        repairs are done); younger ones stay for the next pass. With no grace (the startup pass
        of a process holding the data directory's lock) every mark is cleared.
        """
        marks = self._parts.marks
        window = grace_seconds + (REMARK_SECONDS if grace_seconds > 0 else 0.0)
        work: list[tuple[str, list[tuple[str, float]]]] = []
        for tenant in marks.tenants():
            work.append((tenant, marks.of(tenant)))
        return self._repair(work, grace_seconds, window)

    def run_full(self, grace_seconds: float = 60.0) -> ReconcileReport:
        """Repair every tenant and partition, marked or not; rows younger than `grace_seconds`
        may still be in flight."""
        return self._repair([(t, [(WHOLE_TENANT, -1.0)]) for t in self.tenants()], grace_seconds)

    def _repair(
        self,
        work: list[tuple[str, list[tuple[str, float]]]],
        grace_seconds: float,
        window: float | None = None,
    ) -> ReconcileReport:
        total = _Tally()
        skipped = 0
        now = self._parts.clock()
        for tenant, tenant_marks in work:
            users: list[str | None] | None = []
            for key, _ in tenant_marks:
                if key in (WHOLE_TENANT, NO_USER):  # points without a user live anywhere
                    users = None
                elif users is not None:
                    users.append(key)
            try:
                with self._parts.guard.using(tenant, None):
                    tally = self.run_tenant(tenant, grace_seconds, users)
                if window is not None:
                    for key, touched_at in tenant_marks:
                        if touched_at <= now - window:
                            self._parts.marks.clear(tenant, key, touched_at)
            except ScopeErasing:
                skipped += 1  # being erased or deleted right now: nothing to repair
                continue
            except Exception as exc:  # one tenant's failure never stops the others
                log.error("reconcile: a tenant failed (%s); continuing", type(exc).__name__)
                skipped += 1
                continue
            total.completed += tally.completed
            total.removed += tally.removed
            total.orphans += tally.orphans
            total.updates += tally.updates
            total.failed += tally.failed
        count_repairs("completed", total.completed)
        count_repairs("removed", total.removed)
        count_repairs("orphan_deleted", total.orphans)
        count_repairs("update_completed", total.updates)
        return ReconcileReport(
            total.completed,
            total.removed,
            total.orphans,
            updates_completed=total.updates,
            failed=total.failed,
            tenants_skipped=skipped,
        )

    def run_tenant(
        self, tenant: str, grace_seconds: float, users: list[str | None] | None = None
    ) -> _Tally:
        """Repair one tenant, or only the partitions of `users` (the caller holds the scope
        guard for the tenant)."""
        tally = _Tally()
        namespace = namespace_for(tenant)
        cutoff = self._parts.clock() - grace_seconds
        targets = [OwnedBy(tenant)] if users is None else [OwnedBy(tenant, u) for u in users]
        pending: list[NoteRow] = []
        staged: list[NoteRow] = []
        with self._parts.db.session(tenant) as sess:
            for target in targets:
                pending += sess.execute(
                    scoped_select(target, NoteRow.status == PENDING, NoteRow.updated_at <= cutoff)
                ).scalars()
                staged += sess.execute(
                    scoped_select(target, NoteRow.next_at.is_not(None), NoteRow.next_at <= cutoff)
                ).scalars()
            avgdl = self._parts.corpus.avgdl(sess, tenant, namespace)
        for row in pending:
            self._isolated(row, tally, lambda r: self._complete_add(r, avgdl, tally))
        for row in staged:
            self._isolated(row, tally, lambda r: self._complete_update(r, avgdl, tally))
        for target in targets:
            tally.orphans += self._delete_orphans(target, cutoff)
        return tally

    def _isolated(self, row: NoteRow, tally: _Tally, repair: Callable[[NoteRow], None]) -> None:
        """Run one row's repair; an error is logged by note id and the row skipped."""
        try:
            repair(row)
        except Exception as exc:
            tally.failed += 1
            log.warning("reconcile: note %s skipped (%s)", row.id, type(exc).__name__)

    def _complete_add(self, row: NoteRow, avgdl: float, tally: _Tally) -> None:
        note = self._open_or_remove(row, tally)
        if note is None:
            return
        self._reindex(row, note, avgdl)
        with self._parts.db.session(row.tenant_id) as sess:
            sess.execute(
                scoped_update(
                    OwnedBy(row.tenant_id),
                    NoteRow.id == row.id,
                    NoteRow.status == PENDING,
                    status=ACTIVE,
                )
            )
        tally.completed += 1

    def _complete_update(self, row: NoteRow, avgdl: float, tally: _Tally) -> None:
        live = self._open_or_remove(row, tally)
        if live is None:
            return
        assert row.next_at is not None
        try:
            nxt = staged_view(row)
            note = self._vault.decrypt_row(nxt)
        except (DecryptionError, KeyNotFound):
            # The staged version cannot be opened: drop it, keep (and re-index) the live one.
            with self._parts.db.session(row.tenant_id) as sess:
                sess.execute(
                    scoped_update(
                        OwnedBy(row.tenant_id),
                        NoteRow.id == row.id,
                        NoteRow.next_at == row.next_at,
                        next_text_ct=None,
                        next_attrs_ct=None,
                        next_state=None,
                        next_at=None,
                    )
                )
            self._reindex(row, live, avgdl)
            tally.removed += 1
            return
        self._reindex(nxt, note, avgdl)
        with self._parts.db.session(row.tenant_id) as sess:
            swap_in_next(self._parts.corpus, sess, row, row.next_at)
        tally.updates += 1

    def _open_or_remove(self, row: NoteRow, tally: _Tally) -> Note | None:
        """The row's note; None, the row removed and counted, when its keys are gone."""
        try:
            return self._vault.decrypt_row(row)
        except (DecryptionError, KeyNotFound):
            self._remove(row)
            tally.removed += 1
            return None

    def _reindex(self, row: NoteRow, note: Note, avgdl: float) -> None:
        """Write the point of `row` holding `note`'s text and topics."""
        point = self._vault.index_point(row, note.text, note.topics, avgdl)
        self._parts.index.upsert(namespace_for(row.tenant_id), [point])

    def _remove(self, row: NoteRow) -> None:
        """A row whose keys are gone: delete it, its links and its vector."""
        tenant = row.tenant_id
        namespace = namespace_for(tenant)
        with self._parts.db.session(tenant) as sess:
            delete_links_of(sess, tenant, [row.id])
            gone = sess.execute(scoped_delete(OwnedBy(tenant), NoteRow.id == row.id))
            if gone.rowcount:  # type: ignore[attr-defined]
                self._parts.corpus.adjust(sess, tenant, namespace, -1, -row.token_count)
        self._parts.index.delete(namespace, [row.id])

    def _delete_orphans(self, target: OwnedBy, cutoff: float) -> int:
        """Delete vectors without a row whose payload `created_at` is at or before `cutoff`.

        An add in flight has its vector in the index before its row commits: the grace period
        (the payload's `created_at` is the add's clock) keeps it. A point without `created_at`
        counts as old. A marked user's partitions are its own and its dedicated (Mode B)
        agents' (`store.agent_isolation`).
        """
        tenant = target.tenant
        if target.user is None:
            return self._delete_orphans_in(target, PointFilter(), cutoff)
        tag = self._parts.keyring.index_key(tenant).tag
        partitions = [user_tag(tag, target.user)] + [
            dedicated_tag(tag, target.user, agent)
            for agent in agent_isolation.dedicated_agents(self._parts.db, tenant, target.user)
        ]
        return sum(
            self._delete_orphans_in(target, PointFilter(user_id=p), cutoff) for p in partitions
        )

    def _delete_orphans_in(self, target: OwnedBy, where: PointFilter, cutoff: float) -> int:
        """`_delete_orphans` in the partition `where` names (every partition: empty)."""
        tenant = target.tenant
        namespace = namespace_for(tenant)
        point_ids = self._parts.index.scroll_ids(namespace, where)
        if not point_ids:
            return 0
        with self._parts.db.session(tenant) as sess:
            known = set(sess.execute(scoped_select(target).with_only_columns(NoteRow.id)).scalars())
        candidates = [i for i in point_ids if i not in known]
        if not candidates:
            return 0
        orphan_ids = [
            hit.id
            for hit in self._parts.index.retrieve(namespace, candidates, user_id=where.user_id)
            if float(hit.payload.get("created_at", 0)) <= cutoff
        ]
        if orphan_ids:
            self._parts.index.delete(namespace, orphan_ids, user_id=where.user_id)
        return len(orphan_ids)
