"""The reconciler's durable dirty set: which partitions (tenant, user) a write touched.

A write that could leave something for the reconciler (an add upserts its vector before its row
commits; an update stages its next version before it upserts) first calls `IndexMarks.touch`,
which commits `(tenant_id, user_key, touched_at)` before the write goes on. A crash anywhere
after that leaves the mark, so a pass that visits only marked partitions still finds the
orphan or the staged row, and a pass with nothing changed reads one empty table.

Writes by one process re-commit a mark at most every `REMARK_SECONDS` per partition (hot users
cost one commit per interval, not one per add). So a write at time t is covered by a mark with
`touched_at >= t - REMARK_SECONDS`; `clear` deletes a mark only when every write it covers is
past the reconciler's grace period, and only with the `touched_at` it read (a newer write keeps
it). On PostgreSQL the table is under row-level security; the tenants with marks are listed by
the SECURITY DEFINER function `memvault_marked_tenants()`, as tenant ids are.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable

from sqlalchemy import delete, select, text

from memvault.store.database import MARKED_TENANTS_FUNCTION, Database
from memvault.store.models import IndexMarkRow

REMARK_SECONDS = 15.0
"""How long one process may write to a marked partition before it commits the mark again."""
WHOLE_TENANT = "*"
"""The `user_key` asking for every partition of the tenant (set by the upgrade to revision 16)."""
NO_USER = ""
"""The `user_key` of notes without a `user_id`."""

_UPSERT = text(
    "INSERT INTO index_marks (tenant_id, user_key, touched_at) VALUES (:t, :k, :n) "
    "ON CONFLICT (tenant_id, user_key) DO UPDATE SET touched_at = excluded.touched_at"
)


class IndexMarks:
    """Writes and reads the marks of one data store; safe to use from many threads."""

    def __init__(self, db: Database, clock: Callable[[], float]) -> None:
        self._db = db
        self._clock = clock
        self._lock = threading.Lock()
        self._written: dict[tuple[str, str], float] = {}

    def touch(self, tenant: str, users: Iterable[str | None]) -> None:
        """Commit a mark for each `(tenant, user)` not marked by this process lately."""
        now = self._clock()
        with self._lock:
            due = sorted(
                {
                    key
                    for key in (user or NO_USER for user in users)
                    if now - self._written.get((tenant, key), float("-inf")) >= REMARK_SECONDS
                }
            )
        if not due:
            return
        with self._db.session(tenant) as sess:
            sess.execute(_UPSERT, [{"t": tenant, "k": key, "n": now} for key in due])
        with self._lock:
            for key in due:
                self._written[(tenant, key)] = now

    def tenants(self) -> list[str]:
        """Tenants with at least one mark (one cross-tenant read, as `Database.tenant_ids`)."""
        with self._db.session(None) as sess:
            if self._db.is_postgres:
                ids = sess.execute(text(f"SELECT tenant_id FROM {MARKED_TENANTS_FUNCTION}()"))
                return sorted(str(t) for t in ids.scalars())
            rows = sess.execute(select(IndexMarkRow.tenant_id).distinct()).scalars()
            return sorted(str(t) for t in rows)

    def of(self, tenant: str) -> list[tuple[str, float]]:
        """The tenant's marks: `(user_key, touched_at)`."""
        with self._db.session(tenant) as sess:
            rows = sess.execute(
                select(IndexMarkRow.user_key, IndexMarkRow.touched_at).where(
                    IndexMarkRow.tenant_id == tenant
                )
            )
            return [(str(k), float(t)) for k, t in rows]

    def clear(self, tenant: str, user_key: str, touched_at: float) -> bool:
        """Delete the mark if it still has `touched_at`; False when a newer write renewed it."""
        with self._db.session(tenant) as sess:
            gone = sess.execute(
                delete(IndexMarkRow).where(
                    IndexMarkRow.tenant_id == tenant,
                    IndexMarkRow.user_key == user_key,
                    IndexMarkRow.touched_at == touched_at,
                )
            )
            cleared = bool(gone.rowcount)  # type: ignore[attr-defined]
        if cleared:  # this process's next write to the partition marks it again
            with self._lock:
                self._written.pop((tenant, user_key), None)
        return cleared

    def forget(self, tenant: str, user: str | None) -> None:
        """Drop this process's memory of having marked the user (its mark was deleted)."""
        with self._lock:
            self._written.pop((tenant, user or NO_USER), None)

    def mark_whole(self, tenant: str) -> None:
        """Ask the next pass to check every partition of `tenant` (after a restore, an upgrade)."""
        with self._db.session(tenant) as sess:
            sess.execute(_UPSERT, {"t": tenant, "k": WHOLE_TENANT, "n": self._clock()})
