"""Erasure: block the scope, destroy the keys, then vectors, rows, links and caches; verify zero.

Order, so that no write can race it:
1. block the scope in the `ScopeGuard` (new operations get 409 `scope_erasing`) and revoke its
   API keys (new requests get 401);
2. wait for the operations already in flight to finish (`ScopeBusy` if they outlast the drain);
3. shred the keys, delete vectors, rows and links, evict caches;
4. count every store again: `verified` only when every count is zero.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import delete, func, select

from memvault.vault.idempotency_records import (
    count_idempotency_records,
    delete_idempotency_records,
)
from memvault.vault.index.base import PointFilter
from memvault.vault.links import delete_links_of
from memvault.vault.notes import ErasureReport
from memvault.vault.principals import ApiKeys
from memvault.vault.service import Vault, namespace_for
from memvault.vault.store.models import (
    ApiKeyRow,
    AuditEventRow,
    CorpusStatsRow,
    IdempotencyRow,
    LinkRow,
    NoteRow,
    RefusalRow,
    TenantRow,
)
from memvault.vault.store.scoping import OwnedBy, scoped_delete, scoped_select


class Eraser:
    """Crypto-shreds a (tenant, user[, agent]) and deletes everything derived from it."""

    def __init__(self, vault: Vault, keys: ApiKeys | None = None) -> None:
        self._vault = vault
        self._parts = vault.parts
        self._keys = keys

    def erase(self, tenant: str, user: str, agent: str | None = None) -> ErasureReport:
        """Erase a user (every agent and the shared scope) or one agent of a user.

        The user's (or agent's) API keys are revoked first; in-flight operations on the user
        finish before anything is destroyed, and new ones are refused until the erase is done.
        """
        OwnedBy(tenant, user, agent)  # validates the ids before anything happens
        with self._parts.guard.blocking(
            tenant, user, before_drain=self._revoker(tenant, user, agent)
        ):
            return self._erase(tenant, user, agent)

    def _revoker(self, tenant: str, user: str | None, agent: str | None) -> Callable[[], None]:
        def revoke() -> None:
            if self._keys is None:
                return
            if user is None:
                self._keys.delete_tenant(tenant)
            else:
                self._keys.revoke_scope(tenant, user, agent)

        return revoke

    def _erase(self, tenant: str, user: str, agent: str | None) -> ErasureReport:
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
            delete_idempotency_records(sess, tenant, user, agent)
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
            replays = count_idempotency_records(sess, tenant, user, agent)
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
            "idempotency_records": int(replays),
        }

    def drop_tenant(self, tenant: str) -> dict[str, int]:
        """Delete a tenant: block it, drop its keys, shred, drop its namespace, delete its rows."""
        OwnedBy(tenant)
        with self._parts.guard.blocking(
            tenant, None, before_drain=self._revoker(tenant, None, None)
        ):
            return self._drop_tenant(tenant)

    def _drop_tenant(self, tenant: str) -> dict[str, int]:
        keys = self._parts.keyring.shred(tenant)
        namespace = namespace_for(tenant)
        vectors = self._parts.index.count(namespace, PointFilter())
        self._parts.index.drop_namespace(namespace)
        counts = {"keys_destroyed": keys, "vectors_deleted": vectors}
        with self._parts.db.session(tenant) as sess:
            for model in (
                NoteRow,
                LinkRow,
                ApiKeyRow,
                RefusalRow,
                CorpusStatsRow,
                AuditEventRow,
                IdempotencyRow,
            ):
                result = sess.execute(delete(model).where(model.tenant_id == tenant))
                counts[f"{model.__tablename__}_deleted"] = int(result.rowcount)  # type: ignore[attr-defined]
            sess.execute(delete(TenantRow).where(TenantRow.tenant_id == tenant))
        self._parts.embedder.evict_scope(tenant)
        self._parts.corpus.forget_tenant(tenant)
        self._parts.gate.forget_policy(tenant)
        return counts
