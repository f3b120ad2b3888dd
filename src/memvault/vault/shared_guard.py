"""`SharedScopeGuard`: the scope guard across every worker on one PostgreSQL database.

`ScopeGuard` counts operations and blocks scopes within one process. With several workers on
one database an erase must block and drain writes in all of them, and no worker may go on
sealing under data keys another worker shredded. On PostgreSQL this guard adds, per scoped
operation, one private connection holding session advisory locks:

- an operation takes *shared* advisory locks on its tenant and on (tenant, user) with
  `pg_try_advisory_lock_shared`, which fails at once while an erase holds or waits for the
  exclusive lock: the operation is refused (409 `scope_erasing`), never queued behind it;
- an erase takes the *exclusive* lock (`pg_advisory_lock`, bounded by the drain time), so it
  starts only once every worker's operations on the scope have finished, and holds it while it
  runs;
- the durable block is the erase job's own row (`erasure_jobs`, state `running`, keyed by the
  subject's blind tag), checked by every operation after its locks are granted: it holds until
  the job ends verified, even when a run stops short and releases its locks;
- the newest erase job of the user is compared with the one this worker saw last: when it
  changed, the worker's unwrapped keys of that user are dropped (`Keyring.forget`), so it never
  seals under a key the keystore no longer has; likewise the tenant's `created_at`: when the
  tenant was deleted (and maybe created again) by another worker, all its keys are dropped.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import Connection, create_engine, text

from memvault.keyring import Keyring
from memvault.vault.drafts import user_tag
from memvault.vault.guard import DEFAULT_DRAIN_SECONDS, ScopeBusy, ScopeErasing, ScopeGuard

_CHECK = text(
    "SELECT count(*) FILTER (WHERE state = 'running'), max(created_at),"
    " (SELECT created_at FROM tenants WHERE tenant_id = :t) FROM erasure_jobs "
    "WHERE tenant_id = :t AND subject_tag = :tag"
)
_BORN = text("SELECT created_at FROM tenants WHERE tenant_id = :t")


def lock_key(tenant: str, user: str | None) -> int:
    """The advisory lock key (signed 64 bits) of a tenant or of one of its users."""
    name = f"memvault.scope\0{tenant}\0{'' if user is None else user}\0{user is None}"
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big", signed=True)


class SharedScopeGuard(ScopeGuard):
    """`ScopeGuard` within the process, plus advisory locks and erase-job rows across workers."""

    def __init__(self, url: str, schema: str | None, keyring: Keyring) -> None:
        super().__init__()
        kwargs: dict[str, Any] = {"pool_size": 16, "max_overflow": 48, "pool_pre_ping": True}
        if schema:
            kwargs["connect_args"] = {"options": f"-csearch_path={schema}"}
        self._engine = create_engine(url, isolation_level="AUTOCOMMIT", **kwargs)
        self._keyring = keyring
        self._seen: dict[tuple[str, str], Any] = {}
        self._born: dict[str, Any] = {}  # each tenant's `created_at` when this worker saw it

    def close(self) -> None:
        """Release the guard's connections."""
        self._engine.dispose()

    @contextmanager
    def using(self, tenant: str, user: str | None = None) -> Iterator[None]:
        """Run one operation; `ScopeErasing` while any worker erases the scope or its tenant."""
        with super().using(tenant, user), self._engine.connect() as conn:
            keys = [lock_key(tenant, None)] + ([lock_key(tenant, user)] if user else [])
            granted = [
                k
                for k in keys
                if conn.execute(text("SELECT pg_try_advisory_lock_shared(:k)"), {"k": k}).scalar()
            ]
            try:
                if len(granted) != len(keys):
                    raise ScopeErasing("this scope is being erased; the write was not stored")
                conn.execute(text("SELECT set_config('app.tenant_id', :t, false)"), {"t": tenant})
                if user is not None:
                    self._check_jobs(conn, tenant, user)
                else:
                    self._check_tenant(tenant, conn.execute(_BORN, {"t": tenant}).scalar())
                yield
            finally:
                for k in granted:
                    conn.execute(text("SELECT pg_advisory_unlock_shared(:k)"), {"k": k})

    def _check_tenant(self, tenant: str, born: Any) -> bool:
        """Drop every unwrapped key of a tenant deleted (and maybe created again) since this
        worker last saw it: its tenant and index keys were shredded by another worker."""
        changed = tenant in self._born and self._born[tenant] != born
        if changed:
            self._keyring.forget(tenant)
            self._seen = {scope: at for scope, at in self._seen.items() if scope[0] != tenant}
        self._born[tenant] = born
        return changed

    def _check_jobs(self, conn: Connection, tenant: str, user: str) -> None:
        tag = user_tag(self._keyring.index_key(tenant).tag, user)
        running, newest, born = conn.execute(_CHECK, {"t": tenant, "tag": tag}).one()
        if self._check_tenant(tenant, born):  # the tag was made under a shredded index key
            tag = user_tag(self._keyring.index_key(tenant).tag, user)
            running, newest, born = conn.execute(_CHECK, {"t": tenant, "tag": tag}).one()
        if self._seen.get((tenant, user)) != newest:
            self._keyring.forget(tenant, user)  # another worker may have shredded them
            self._seen[(tenant, user)] = newest
        if running:
            raise ScopeErasing("this scope is being erased; the write was not stored")

    @contextmanager
    def blocking(
        self,
        tenant: str,
        user: str | None = None,
        *,
        before_drain: Callable[[], None] | None = None,
        drain_seconds: float = DEFAULT_DRAIN_SECONDS,
    ) -> Iterator[None]:
        """Block and drain the scope in this process, then in every worker; run the body."""
        with (
            super().blocking(tenant, user, before_drain=before_drain, drain_seconds=drain_seconds),
            self._engine.connect() as conn,
        ):
            key = lock_key(tenant, user)
            conn.execute(text(f"SET lock_timeout = {max(1, int(drain_seconds * 1000))}"))
            try:
                conn.execute(text("SELECT pg_advisory_lock(:k)"), {"k": key})
            except Exception:
                raise ScopeBusy("writes to this scope are still in flight; try again") from None
            finally:
                conn.execute(text("RESET lock_timeout"))
            if user is not None:
                self._keyring.forget(tenant, user)
            try:
                yield
            finally:
                conn.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": key})
