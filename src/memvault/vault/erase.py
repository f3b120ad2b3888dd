"""Erasure: destroy the keys first, then vectors, rows, links and caches; then verify zero."""

from __future__ import annotations

from sqlalchemy import delete, func, select

from memvault.vault.index.base import PointFilter
from memvault.vault.links import delete_links_of
from memvault.vault.notes import ErasureReport
from memvault.vault.service import Vault, namespace_for
from memvault.vault.store.models import (
    ApiKeyRow,
    AuditEventRow,
    CorpusStatsRow,
    LinkRow,
    NoteRow,
    RefusalRow,
    TenantRow,
)
from memvault.vault.store.scoping import OwnedBy, scoped_delete, scoped_select


class Eraser:
    """Crypto-shreds a (tenant, user[, agent]) and deletes everything derived from it."""

    def __init__(self, vault: Vault) -> None:
        self._vault = vault
        self._parts = vault.parts

    def erase(self, tenant: str, user: str, agent: str | None = None) -> ErasureReport:
        """Erase a user (every agent and the shared scope) or one agent of a user."""
        target = OwnedBy(tenant, user, agent)
        namespace = namespace_for(tenant)
        keys = self._parts.keyring.shred(tenant, user, agent)
        where = PointFilter(user_id=user, agent_id=agent)
        vectors = self._parts.index.count(namespace, where)
        self._parts.index.delete_where(namespace, where)
        with self._parts.db.session(tenant) as sess:
            doomed = list(sess.execute(scoped_select(target)).scalars())
            ids = [r.id for r in doomed]
            links = delete_links_of(sess, tenant, ids)
            self._parts.corpus.adjust(
                sess, tenant, namespace, -len(doomed), -sum(r.token_count for r in doomed)
            )
            rows = int(sess.execute(scoped_delete(target)).rowcount)  # type: ignore[attr-defined]
        self._parts.embedder.evict_scope(tenant, user, agent)
        return ErasureReport(
            tenant=tenant,
            user=user,
            agent=agent,
            keys_destroyed=keys,
            vectors_deleted=vectors,
            rows_deleted=rows,
            links_deleted=links,
            remaining=self.remaining(tenant, user, agent),
        )

    def remaining(self, tenant: str, user: str, agent: str | None = None) -> dict[str, int]:
        """What every store still holds for the scope: all zero after a successful erase."""
        target = OwnedBy(tenant, user, agent)
        with self._parts.db.session(tenant) as sess:
            rows = sess.execute(
                select(func.count()).select_from(scoped_select(target).subquery())
            ).scalar_one()
            link_filter = [LinkRow.tenant_id == tenant, LinkRow.user_id == user]
            links = 0
            if agent is None:
                links = sess.execute(
                    select(func.count()).select_from(LinkRow).where(*link_filter)
                ).scalar_one()
        return {
            "sql_rows": int(rows),
            "links": int(links),
            "index_points": self._parts.index.count(
                namespace_for(tenant), PointFilter(user_id=user, agent_id=agent)
            ),
            "data_keys": self._parts.keyring.count_keys(tenant, user, agent),
            "embedding_cache": self._parts.embedder.count_scope(tenant, user, agent),
        }

    def drop_tenant(self, tenant: str) -> dict[str, int]:
        """Delete a tenant: shred its keys, drop its namespace, delete all its rows."""
        keys = self._parts.keyring.shred(tenant)
        namespace = namespace_for(tenant)
        vectors = self._parts.index.count(namespace, PointFilter())
        self._parts.index.drop_namespace(namespace)
        counts = {"keys_destroyed": keys, "vectors_deleted": vectors}
        with self._parts.db.session(tenant) as sess:
            for model in (NoteRow, LinkRow, ApiKeyRow, RefusalRow, CorpusStatsRow, AuditEventRow):
                result = sess.execute(delete(model).where(model.tenant_id == tenant))
                counts[f"{model.__tablename__}_deleted"] = int(result.rowcount)  # type: ignore[attr-defined]
            sess.execute(delete(TenantRow).where(TenantRow.tenant_id == tenant))
        self._parts.embedder.evict_scope(tenant)
        self._parts.corpus.forget_tenant(tenant)
        return counts
