"""Re-index tenants whose vector points predate blind payload tags (clear user and agent ids).

Since issue 8 the index payload holds keyed tags of the user, agent and readers, never the ids,
and a user's points live in their own partition. Points written before carry the ids in clear
(and sit in a partition named after the clear id), so a search, which filters by tag, finds
none of them. At startup `upgrade_index_payloads` checks one live note per tenant: if its point's
`user_id` is not the user's tag, the tenant's namespace is dropped (every file of it) and rebuilt
by re-embedding the decrypted notes, with progress in the log.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from sqlalchemy import select

from memvault.compliance.backup import rebuild_tenant
from memvault.index.base import PointFilter
from memvault.store.models import NoteRow
from memvault.vault.drafts import ACTIVE, namespace_for, partition_tag

if TYPE_CHECKING:
    from memvault.runtime.factory import Services

log = logging.getLogger(__name__)


def needs_upgrade(services: Services, tenant: str) -> bool:
    """Whether the tenant's index holds a point whose `user_id` is not a blind tag."""
    with services.db.session(tenant) as sess:
        row = sess.execute(
            select(NoteRow.id, NoteRow.user_id, NoteRow.agent_id, NoteRow.visibility)
            .where(NoteRow.tenant_id == tenant, NoteRow.status == ACTIVE)
            .limit(1)
        ).first()
    if row is None:
        return False
    namespace = namespace_for(tenant)
    tag = services.keyring.index_key(tenant).tag
    expected = partition_tag(tag, row.user_id, row.agent_id, row.visibility)
    # The usual answer, cheaply: the point sits under the user's tag (one shard is opened).
    tagged = PointFilter(user_id=expected, only_ids=(row.id,))
    if services.index.count(namespace, tagged):
        return False
    # Not there: a legacy point (clear ids, its own shard) or none at all. Only now look in
    # every shard of the tenant.
    hits = services.index.retrieve(namespace, [row.id])
    if not hits:
        return False  # a missing point is the reconciler's business
    return hits[0].payload.get("user_id") != expected


def upgrade_index_payloads(services: Services) -> int:
    """Rebuild every tenant whose points still carry clear ids; returns how many were rebuilt."""
    rebuilt = 0
    for tenant in services.db.tenant_ids():
        try:
            if not needs_upgrade(services, tenant):
                continue
        except Exception as exc:
            log.warning("index payload check failed: %s", type(exc).__name__)
            continue
        log.info("re-indexing a tenant whose index predates blind payload tags")
        services.index.drop_namespace(namespace_for(tenant))

        def progress(done: int, total: int) -> None:
            log.info("re-indexed %d/%d notes", done, total)

        rebuild_tenant(services, tenant, 0, 0, progress)
        rebuilt += 1
    return rebuilt
