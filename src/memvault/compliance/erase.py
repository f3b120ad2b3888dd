"""Erasure steps: revoke, shred, delete vectors, delete rows and caches, scrub, count.

A subject is a user, one agent of a user, or a whole tenant (`OwnedBy`). Each step is idempotent,
so a job that crashed between steps can run the same step again (`memvault.compliance.erasure`
persists which step it reached and signs a receipt at the end). `Eraser.erase` runs every step
at once, in order, for callers that need no job:

1. block the subject in the `ScopeGuard` (new operations get 409 `scope_erasing`) and delete its
   API keys (new requests get 401); wait for operations in flight to finish;
2. shred its data keys (crypto-shredding: every copy of its ciphertext is dead);
3. delete its vectors: the index removes the user's partition, or rebuilds it without the agent;
   a dedicated (Mode B) agent's own partition is removed whole (a user's erase removes all its
   agents' dedicated partitions too);
4. delete its rows, links, idempotency records, refusals and cached embeddings;
5. scrub: checkpoint the SQLite WAL (secure_delete zeroes freed pages) and compact the index;
6. count every store again: `verified` only when every count is zero.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

from sqlalchemy import ColumnElement, delete, func, select

from memvault.errors import VaultError
from memvault.index.base import PointFilter
from memvault.store import agent_isolation
from memvault.store.database import CHECKPOINT_ATTEMPTS
from memvault.store.idempotency_records import (
    count_idempotency_records,
    delete_idempotency_records,
)
from memvault.store.models import (
    AgentIsolationRow,
    AmemJobRow,
    ApiKeyRow,
    AuditEventRow,
    CorpusStatsRow,
    ErasureJobRow,
    IdempotencyRow,
    IndexMarkRow,
    LinkRow,
    NoteRow,
    ReadAlertRow,
    RefusalRow,
    TenantRow,
    UntrustedSessionRow,
    WebhookDeliveryRow,
    WebhookRow,
)
from memvault.store.scoping import OwnedBy, scoped_delete, scoped_select
from memvault.store.vacuum import ERASE_TABLES, vacuum_tables
from memvault.tenancy.principals import ApiKeys
from memvault.vault.drafts import agent_tag, dedicated_tag, user_tag
from memvault.vault.links import delete_links_of
from memvault.vault.notes import ErasureReport
from memvault.vault.screen_gate import refusal_principal
from memvault.vault.service import Vault, namespace_for

log = logging.getLogger(__name__)

TENANT_ROW_MODELS = (
    NoteRow,
    LinkRow,
    AmemJobRow,
    ApiKeyRow,
    RefusalRow,
    CorpusStatsRow,
    AuditEventRow,
    IdempotencyRow,
    ErasureJobRow,
    UntrustedSessionRow,
    WebhookRow,
    WebhookDeliveryRow,
    ReadAlertRow,
    IndexMarkRow,
    AgentIsolationRow,
)
"""Every per-tenant table a tenant deletion empties (the `tenants` row goes last)."""

ERASE_CHUNK_ROWS = 500
"""Notes deleted per transaction when erasing a user or an agent (issue 35)."""
ERASE_CHUNK_PAUSE_S = 0.005
"""The pause between two such transactions: other users' writes and reads go first."""


class ScrubIncomplete(VaultError):
    """The SQLite WAL could not be checkpointed after an erase: a reader held an old snapshot,
    so the deleted rows' old page images may remain in the WAL file until it is."""


class Eraser:
    """Crypto-shreds a subject and deletes everything derived from it, step by step."""

    def __init__(self, vault: Vault, keys: ApiKeys | None = None) -> None:
        self._vault = vault
        self._parts = vault.parts
        self._keys = keys
        self.checkpoint_attempts = CHECKPOINT_ATTEMPTS
        self.chunk_rows = ERASE_CHUNK_ROWS
        self.between_chunks: Callable[[], None] = lambda: time.sleep(ERASE_CHUNK_PAUSE_S)
        """Run between two row-deleting transactions (a pause; tests hold the erase here)."""
        self._dedicated: dict[tuple[str, str], set[str]] = {}
        """(tenant, user) being erased -> its dedicated agents (`remember_dedicated`)."""

    # -- the whole erase, in one call ---------------------------------------------------------

    def erase(self, tenant: str, user: str, agent: str | None = None) -> ErasureReport:
        """Erase a user (every agent and the shared scope) or one agent of a user.

        The subject's API keys are deleted first; in-flight operations on the user finish
        before anything is destroyed, and new ones are refused until the erase is done.
        """
        subject = OwnedBy(tenant, user, agent)
        self.remember_dedicated(subject, ())  # its records go with its rows
        try:
            with self._parts.guard.blocking(
                tenant, user, agent, before_drain=self.revoker(subject)
            ):
                keys = self.shred_keys(subject)
                vectors = self.delete_vectors(subject)
                counts = self.delete_rows(subject)
                self.scrub(subject)
                return ErasureReport(
                    tenant=tenant,
                    user=user,
                    agent=agent,
                    keys_destroyed=keys,
                    vectors_deleted=vectors,
                    rows_deleted=counts["notes"],
                    links_deleted=counts["links"],
                    remaining=self.remaining(tenant, user, agent),
                )
        finally:
            self.forget_dedicated(subject)

    # -- steps ---------------------------------------------------------------------------------

    def revoker(self, subject: OwnedBy) -> Callable[[], None]:
        """The first step as a callable (run inside `ScopeGuard.blocking`, before the drain)."""

        def revoke() -> None:
            self.delete_api_keys(subject)

        return revoke

    def delete_api_keys(self, subject: OwnedBy) -> int:
        """Delete the subject's API keys (rows, not just revoked: they hold its ids)."""
        if self._keys is None:
            return 0
        return self._keys.delete_scope(subject.tenant, subject.user, subject.agent)

    def shred_keys(self, subject: OwnedBy) -> int:
        """Destroy the subject's data keys (a tenant: its tenant and index keys too)."""
        return self._parts.keyring.shred(subject.tenant, subject.user, subject.agent)

    def point_filter(self, subject: OwnedBy) -> PointFilter:
        """The index filter of the subject's points in its user's partition (blind tags;
        empty for a tenant). Its dedicated partitions are `point_filters`.

        Works after the shred: the index key is a tenant key, which a user's erase keeps.
        """
        if subject.user is None:
            return PointFilter()
        tag = self._parts.keyring.index_key(subject.tenant).tag
        return PointFilter(
            user_id=user_tag(tag, subject.user),
            agent_id=None if subject.agent is None else agent_tag(tag, subject.agent),
        )

    def point_filters(self, subject: OwnedBy) -> list[PointFilter]:
        """Every index filter of the subject's points: its user's partition, and each dedicated
        (Mode B) partition whole (an agent's own one is named by the subject itself; a user's
        come from `remember_dedicated` and `store.agent_isolation`)."""
        where = [self.point_filter(subject)]
        if subject.user is None:
            return where
        tag = self._parts.keyring.index_key(subject.tenant).tag
        agents = [subject.agent] if subject.agent is not None else self.dedicated_agents(subject)
        where += [PointFilter(user_id=dedicated_tag(tag, subject.user, a)) for a in agents]
        return where

    def remember_dedicated(self, subject: OwnedBy, agents: Sequence[str]) -> list[str]:
        """Keep the dedicated agents of a user being erased (an erase job passes those it
        recorded before its records were deleted); returns all known now."""
        assert subject.user is not None
        known = self._dedicated.setdefault((subject.tenant, subject.user), set())
        known.update(agents)
        return self.dedicated_agents(subject)

    def forget_dedicated(self, subject: OwnedBy) -> None:
        """Drop what `remember_dedicated` kept (the erase ended)."""
        if subject.user is not None:
            self._dedicated.pop((subject.tenant, subject.user), None)

    def dedicated_agents(self, subject: OwnedBy) -> list[str]:
        """The user's dedicated agents: recorded now, or remembered for this erase."""
        assert subject.user is not None
        recorded = agent_isolation.dedicated_agents(
            self._parts.db, subject.tenant, subject.user, subject.agent
        )
        kept = self._dedicated.get((subject.tenant, subject.user), set())
        return sorted(set(recorded) | kept)

    def delete_vectors(self, subject: OwnedBy) -> int:
        """Delete the subject's points: physically (the partition goes, or is rebuilt; a
        dedicated agent's own partition goes whole)."""
        namespace = namespace_for(subject.tenant)
        if subject.user is None:
            count = self._parts.index.count(namespace, PointFilter())
            self._parts.index.drop_namespace(namespace)
            return count
        count = 0
        for where in self.point_filters(subject):
            count += self._parts.index.count(namespace, where)
            self._parts.index.delete_where(namespace, where)
        return count

    def delete_rows(self, subject: OwnedBy) -> dict[str, int]:
        """Delete the subject's rows, links, idempotency records, refusals and cached vectors.

        Pending retrieval counters are flushed first, so none is left queued for a gone row.
        """
        self._parts.retrievals.flush()
        if subject.user is None:
            counts = self._delete_tenant_rows(subject.tenant)
        else:
            counts = self._delete_scope_rows(subject)
        self._parts.embedder.evict_scope(subject.tenant, subject.user, subject.agent)
        return counts

    def _delete_scope_rows(self, subject: OwnedBy) -> dict[str, int]:
        """Delete the scope's rows in short transactions of `chunk_rows` notes each, pausing
        between them (`between_chunks`), so other users' writes and the WAL checkpointer never
        wait behind one long write transaction (issue 35: erasure beside live traffic).

        Safe to split: the `ScopeGuard` refuses new operations on the subject while this runs,
        so no row of the scope appears meanwhile, and a crash between chunks leaves a state the
        step's rerun finishes (each chunk commits its notes, their links and the corpus
        counters together).
        """
        tenant, user, agent = subject.tenant, subject.user, subject.agent
        assert user is not None
        namespace = namespace_for(tenant)
        refusals = self._refusal_clause(subject)
        with self._parts.db.session(tenant) as sess:
            # Lock order: `amem_jobs` before `notes`, as the A-MEM queue takes them
            # (`AmemJobs.enqueue`/`finish`: job row, then the note's enrichment), so an erase
            # and a worker finishing a job wait for each other instead of deadlocking.
            jobs = int(sess.execute(delete(AmemJobRow).where(*_job_clause(subject))).rowcount)  # type: ignore[attr-defined]
        rows = links = 0
        while True:
            with self._parts.db.session(tenant) as sess:
                chunk = sess.execute(
                    select(NoteRow.id, NoteRow.token_count)
                    .where(subject.clause())
                    .limit(self.chunk_rows)
                ).all()
                if not chunk:
                    break
                ids = [r.id for r in chunk]
                links += delete_links_of(sess, tenant, ids)
                self._parts.corpus.adjust(
                    sess, tenant, namespace, -len(ids), -sum(r.token_count for r in chunk)
                )
                rows += int(
                    sess.execute(scoped_delete(subject, NoteRow.id.in_(ids))).rowcount  # type: ignore[attr-defined]
                )
            self.between_chunks()  # no transaction open: other users' writes and the GIL go
        with self._parts.db.session(tenant) as sess:
            replays = delete_idempotency_records(sess, tenant, user, agent)
            isolation = agent_isolation.delete_records(sess, tenant, user, agent)
            refused = int(sess.execute(delete(RefusalRow).where(*refusals)).rowcount)  # type: ignore[attr-defined]
            marks = 0
            if agent is None:  # a mark names the user; the erase removed what it pointed at
                gone = sess.execute(
                    delete(IndexMarkRow).where(
                        IndexMarkRow.tenant_id == tenant, IndexMarkRow.user_key == user
                    )
                )
                marks = int(gone.rowcount)  # type: ignore[attr-defined]
        if agent is None:
            self._parts.marks.forget(tenant, user)
        return {
            "index_marks": marks,
            "notes": rows,
            "links": links,
            "idempotency_records": replays,
            "refusals": refused,
            "amem_jobs": jobs,
            "agent_isolation": isolation,
        }

    def _delete_tenant_rows(self, tenant: str) -> dict[str, int]:
        counts: dict[str, int] = {}
        with self._parts.db.session(tenant) as sess:
            for model in TENANT_ROW_MODELS:
                result = sess.execute(delete(model).where(model.tenant_id == tenant))
                counts[model.__tablename__] = int(result.rowcount)  # type: ignore[attr-defined]
            sess.execute(delete(TenantRow).where(TenantRow.tenant_id == tenant))
        self._parts.corpus.forget_tenant(tenant)
        self._parts.gate.forget_policy(tenant)
        # Its audit log is gone: so are the checkpoints signed over it (the shred deleted them
        # too; one signed between the shred and this point would outlive the log it vouches for).
        self._parts.keyring.audit_checkpoints().forget_tenant(tenant)
        return counts

    def _refusal_clause(self, subject: OwnedBy) -> list[ColumnElement[bool]]:
        assert subject.user is not None
        tag = self._parts.keyring.index_key(subject.tenant).tag
        principal = refusal_principal(tag, subject.user, subject.agent)
        match = (
            RefusalRow.principal.startswith(principal, autoescape=True)
            if subject.agent is None
            else RefusalRow.principal == principal
        )
        return [RefusalRow.tenant_id == subject.tenant, match]

    def scrub(self, subject: OwnedBy) -> None:
        """Overwrite what deletion freed: SQLite VACUUM and WAL checkpoint, index compaction.

        SQLite runs with `secure_delete`, which zeroes a deleted row's cell but not the stale
        copies b-tree rebalancing leaves in pages' free space, so VACUUM rewrites every page
        from the live rows (`Database.vacuum`); the checkpoint moves the pages into the
        database file and truncates the WAL. A reader holding an old snapshot blocks it; after
        `checkpoint_attempts` tries (about 10 s for 50) this raises `ScrubIncomplete`, after the
        rest of the scrub ran, so an erase job stops short of its receipt and is retried.
        PostgreSQL: VACUUM the touched tables when the owner's URL is configured (only the owner
        may VACUUM): see docs/erasure.md.
        """
        db = self._parts.db
        vacuumed = db.vacuum()  # no stale copy of a deleted row in a page's free space
        scrubbed = db.checkpoint(self.checkpoint_attempts) and vacuumed
        if db.is_postgres and db.maintenance_url:
            try:
                vacuum_tables(db.maintenance_url, db.schema, ERASE_TABLES)
            except Exception as exc:  # the erase stands; autovacuum or the operator finishes
                log.warning("VACUUM after an erase failed: %s", type(exc).__name__)
        if subject.user is not None:
            self._parts.index.compact(namespace_for(subject.tenant))
        if not scrubbed:
            raise ScrubIncomplete(
                "a reader held the data store's WAL (or a writer its lock, so VACUUM could not "
                "run), so the deleted rows' old pages may still be in it: the scrub did not "
                "complete (an erase job retries it; retry otherwise)"
            )

    # -- verification --------------------------------------------------------------------------

    def remaining(self, tenant: str, user: str, agent: str | None = None) -> dict[str, int]:
        """What every erasable store still holds for the scope: all zero after an erase."""
        subject = OwnedBy(tenant, user, agent)
        with self._parts.db.session(tenant) as sess:
            rows = sess.execute(
                select(func.count()).select_from(scoped_select(subject).subquery())
            ).scalar_one()
            replays = count_idempotency_records(sess, tenant, user, agent)
            links = 0
            if agent is None:
                links = sess.execute(
                    select(func.count())
                    .select_from(LinkRow)
                    .where(LinkRow.tenant_id == tenant, LinkRow.user_id == user)
                ).scalar_one()
            refusals = sess.execute(
                select(func.count()).select_from(RefusalRow).where(*self._refusal_clause(subject))
            ).scalar_one()
            jobs = sess.execute(
                select(func.count()).select_from(AmemJobRow).where(*_job_clause(subject))
            ).scalar_one()
            keys_where = [ApiKeyRow.tenant_id == tenant, ApiKeyRow.user_id == user]
            if agent is not None:
                keys_where.append(ApiKeyRow.agent_id == agent)
            api_keys = sess.execute(
                select(func.count()).select_from(ApiKeyRow).where(*keys_where)
            ).scalar_one()
            isolation = agent_isolation.count_records(sess, tenant, user, agent)
        namespace = namespace_for(tenant)
        points = sum(self._parts.index.count(namespace, w) for w in self.point_filters(subject))
        return {
            "sql_rows": int(rows),
            "links": int(links),
            "index_points": points,
            "data_keys": self._parts.keyring.count_keys(tenant, user, agent),
            "embedding_cache": self._parts.embedder.count_scope(tenant, user, agent),
            "idempotency_records": int(replays),
            "refusals": int(refusals),
            "api_keys": int(api_keys),
            "amem_jobs": int(jobs),
            "agent_isolation": isolation,
        }


def _job_clause(subject: OwnedBy) -> list[Any]:
    """A-MEM jobs of the subject's notes (by the storage scope they name)."""
    where: list[Any] = [AmemJobRow.tenant_id == subject.tenant]
    if subject.user is not None:
        where.append(AmemJobRow.user_id == subject.user)
    if subject.agent is not None:
        where.append(AmemJobRow.agent_id == subject.agent)
    return where
