"""Re-embedding and re-indexing stored notes under the current indexing rules and model.

A note is **stale** when its point was built under an older `INDEX_VERSION` (the rules in
`memvault.vault.sessions`) or by another embedding model than the one serving. `Reindexer`
rebuilds stale notes from their decrypted text, scope by scope, in batches; each rebuilt note
records the version and model it was built with in the same transaction that checks it did
not change meanwhile, so a run killed at any point resumes where it stopped, and a run that
overlaps live writes never leaves an older point behind a newer one.

It runs two ways: `memvault reindex` (foreground, with a progress bar), and inside the server
as a maintenance sweeper that rebuilds a bounded batch per pass while requests are served.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlalchemy import func, or_, select

from memvault.store.models import NoteRow
from memvault.vault.drafts import ACTIVE
from memvault.vault.session_index import SessionIndexer
from memvault.vault.sessions import INDEX_VERSION

if TYPE_CHECKING:
    from memvault.vault.service import Vault

log = logging.getLogger(__name__)

BATCH = 128
SWEEP_BUDGET = 512
"""Notes one maintenance pass rebuilds at most (the rest waits for the next pass)."""


@dataclass(frozen=True, slots=True)
class IndexStatus:
    """How many stored notes each tenant has whose point is stale."""

    index_version: int
    model_id: str
    stale: dict[str, int]

    @property
    def total_stale(self) -> int:
        return sum(self.stale.values())


def _stale(model_id: str) -> Any:
    return (
        (NoteRow.status == ACTIVE)
        & (NoteRow.next_at.is_(None))
        & or_(NoteRow.index_version < INDEX_VERSION, NoteRow.model_id != model_id)
    )


class Reindexer:
    """Rebuilds stale points of one vault."""

    def __init__(self, vault: Vault, *, batch: int = BATCH) -> None:
        if batch < 1:
            raise ValueError("batch must be at least 1")
        self._vault = vault
        self._parts = vault.parts
        self._batch_size = batch

    @property
    def model_id(self) -> str:
        return self._parts.embedder.model_id

    def tenants(self) -> list[str]:
        """Every tenant with notes or vectors (`reconcile.known_tenants`)."""
        from memvault.vault.reconcile import known_tenants

        return known_tenants(self._vault)

    def status(self, tenants: list[str] | None = None) -> IndexStatus:
        """Stale notes per tenant (tenants without stale notes are left out)."""
        stale: dict[str, int] = {}
        for tenant in tenants if tenants is not None else self.tenants():
            with self._parts.db.session(tenant) as sess:
                count = sess.execute(
                    select(func.count())
                    .select_from(NoteRow)
                    .where(NoteRow.tenant_id == tenant, _stale(self.model_id))
                ).scalar_one()
            if count:
                stale[tenant] = int(count)
        return IndexStatus(INDEX_VERSION, self.model_id, stale)

    def run(
        self,
        tenants: list[str] | None = None,
        *,
        budget: int | None = None,
        progress: Callable[[int], None] | None = None,
    ) -> int:
        """Rebuild stale notes, scope by scope, at most `budget` (all when None).

        `progress` is called with the number rebuilt after each batch. Returns the total.
        """
        done = 0
        for tenant in tenants if tenants is not None else self.tenants():
            for user, agent in self._stale_scopes(tenant):
                while budget is None or done < budget:
                    size = self._batch_size
                    limit = size if budget is None else min(size, budget - done)
                    rebuilt = self._batch(tenant, user, agent, limit)
                    if rebuilt == 0:
                        break
                    done += rebuilt
                    if progress is not None:
                        progress(rebuilt)
                if budget is not None and done >= budget:
                    return done
        return done

    def _stale_scopes(self, tenant: str) -> list[tuple[str, str]]:
        with self._parts.db.session(tenant) as sess:
            rows = sess.execute(
                select(NoteRow.user_id, NoteRow.agent_id)
                .where(NoteRow.tenant_id == tenant, _stale(self.model_id))
                .group_by(NoteRow.user_id, NoteRow.agent_id)
                .order_by(NoteRow.user_id, NoteRow.agent_id)
            ).all()
        return [(r[0], r[1]) for r in rows]

    def _batch(self, tenant: str, user: str, agent: str, limit: int) -> int:
        """Rebuild up to `limit` stale notes of one storage scope; how many were rebuilt."""
        with self._parts.guard.using(tenant, user):  # an erase of this user waits for us
            with self._parts.db.session(tenant) as sess:
                rows = list(
                    sess.execute(
                        select(NoteRow)
                        .where(
                            NoteRow.tenant_id == tenant,
                            NoteRow.user_id == user,
                            NoteRow.agent_id == agent,
                            _stale(self.model_id),
                        )
                        .order_by(NoteRow.id)
                        .limit(limit)
                    ).scalars()
                )
                for row in rows:
                    sess.expunge(row)
            if not rows:
                return 0
            return SessionIndexer(self._vault).rebuild(rows)


RECHECK_SECONDS = 3600.0
"""Once a sweep found nothing stale, how long later passes skip the per-tenant check."""


def reindex_sweeper(vault: Vault) -> Callable[[], int]:
    """A maintenance sweeper: each pass rebuilds up to `SWEEP_BUDGET` stale notes.

    Notes turn stale only when a process with another model or `INDEX_VERSION` wrote them (an
    upgrade, or another worker mid-deploy), so once a sweep finds none, passes skip the check
    (one query per tenant) for `RECHECK_SECONDS`: a pass with nothing changed stays cheap
    whatever the number of tenants.
    """
    reindexer = Reindexer(vault)
    clean_at: list[float] = []

    def sweep() -> int:
        now = vault.parts.clock()
        if clean_at and now - clean_at[0] < RECHECK_SECONDS:
            return 0
        try:
            done = reindexer.run(budget=SWEEP_BUDGET)
            clean_at[:] = [now] if done == 0 else []
            return done
        except Exception as exc:  # the next pass retries; never the text, only the kind
            log.warning("background reindex failed: %s", type(exc).__name__)
            return 0

    return sweep
