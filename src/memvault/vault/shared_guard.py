"""`SharedScopeGuard`: the scope guard across every worker on one PostgreSQL database.

`ScopeGuard` counts operations and blocks scopes within one process. With several workers on
one database an erase must block and drain writes in all of them, and no worker may go on
sealing under data keys another worker shredded. On PostgreSQL this guard adds, per scoped
operation, one private connection holding session advisory locks:

- an operation takes *shared* advisory locks with `pg_try_advisory_lock_shared`, which fails at
  once while an erase holds or waits for a conflicting exclusive lock: the operation is refused
  (409 `scope_erasing`), never queued behind it. The locks (`lock_keys`) are per scope: an agent's
  operation takes its tenant, its user and its (user, agent) keys; a user-wide operation (an
  export) takes its tenant, its user and the user's "whole user" key;
- an erase takes *exclusive* locks (`pg_advisory_lock`, bounded by the drain time), so it starts
  only once every worker's operations on the scope have finished, and holds them while it runs:
  a user's erase the user key (every operation of the user conflicts), an agent's erase the
  (user, agent) key and the "whole user" key, plus a shared lock on the user key (so it and an
  erase of the whole user exclude each other); operations of the user's other agents go on;
- the durable block is the erase job's own row (`erasure_jobs`, state `running`, keyed by the
  subject's blind tag; its agent is in the sealed subject), checked by every operation after its
  locks are granted: it holds until the job ends verified, even when a run stops short and
  releases its locks. It refuses the operations its subject covers, no others;
- the erase jobs of the user are compared with those this worker saw last: for each new one, the
  worker's unwrapped keys of its subject are dropped (`Keyring.forget`), so it never seals under
  a key the keystore no longer has, and keeps the other agents' keys in use; likewise the
  tenant's `created_at`: when the tenant was deleted (and maybe created again) by another worker,
  all its keys are dropped.
"""

from __future__ import annotations

import hashlib
import json
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
_JOBS = text(
    "SELECT id, sealed, state FROM erasure_jobs WHERE tenant_id = :t AND subject_tag = :tag"
    " AND (state = 'running' OR created_at > :since)"
)
_BORN = text("SELECT created_at FROM tenants WHERE tenant_id = :t")

ERASURE_JOB_PURPOSE = "erasure-job"
"""The `Keyring.seal_record` purpose of an erase job's subject (`compliance/erasure.py`)."""
_MAX_SUBJECTS = 4096
_WHOLE_USER = "\0user"  # not a valid agent id: the "whole user" lock of a user's agents' erases


def lock_key(tenant: str, user: str | None, agent: str | None = None) -> int:
    """The advisory lock key (signed 64 bits) of a tenant, one of its users, or one agent of one
    of its users."""
    name = f"memvault.scope\0{tenant}\0{'' if user is None else user}\0{user is None}"
    if agent is not None:
        name += f"\0agent\0{agent}"
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big", signed=True)


def lock_keys(tenant: str, user: str | None, agent: str | None) -> list[int]:
    """The shared locks an operation on (tenant[, user[, agent]]) takes, in order."""
    keys = [lock_key(tenant, None)]
    if user is not None:
        keys += [lock_key(tenant, user), lock_key(tenant, user, agent or _WHOLE_USER)]
    return keys


def erase_locks(tenant: str, user: str | None, agent: str | None) -> list[tuple[int, bool]]:
    """The locks an erase of (tenant[, user[, agent]]) takes, in order: (key, exclusive)."""
    if user is None or agent is None:
        return [(lock_key(tenant, user), True)]
    return [
        (lock_key(tenant, user), False),
        (lock_key(tenant, user, _WHOLE_USER), True),
        (lock_key(tenant, user, agent), True),
    ]


class SharedScopeGuard(ScopeGuard):
    """`ScopeGuard` within the process, plus advisory locks and erase-job rows across workers."""

    def __init__(self, url: str, schema: str | None, keyring: Keyring) -> None:
        super().__init__()
        kwargs: dict[str, Any] = {"pool_size": 16, "max_overflow": 48, "pool_pre_ping": True}
        if schema:
            kwargs["connect_args"] = {"options": f"-csearch_path={schema}"}
        self._engine = create_engine(url, isolation_level="AUTOCOMMIT", **kwargs)
        self._keyring = keyring
        self._seen: dict[tuple[str, str], Any] = {}  # newest erase job of a user seen here
        self._born: dict[str, Any] = {}  # each tenant's `created_at` when this worker saw it
        self._subjects: dict[tuple[str, str], str | None] = {}  # erase job -> its agent

    def close(self) -> None:
        """Release the guard's connections."""
        self._engine.dispose()

    @contextmanager
    def using(
        self, tenant: str, user: str | None = None, agent: str | None = None
    ) -> Iterator[None]:
        """Run one operation; `ScopeErasing` while any worker erases a scope covering it (its
        agent, its user or its tenant)."""
        with super().using(tenant, user, agent), self._engine.connect() as conn:
            keys = lock_keys(tenant, user, agent)
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
                    self._check_jobs(conn, tenant, user, agent)
                else:
                    self._check_tenant(tenant, conn.execute(_BORN, {"t": tenant}).scalar())
                yield
            finally:
                for k in granted:
                    conn.execute(text("SELECT pg_advisory_unlock_shared(:k)"), {"k": k})

    def erasing(self, tenant: str, user: str | None = None, agent: str | None = None) -> bool:
        """Whether an erase in this process, or a running erase job of any worker, covers the
        scope now (the advisory locks are not consulted: the job row outlives them)."""
        if super().erasing(tenant, user, agent):
            return True
        if user is None:
            return False
        with self._engine.connect() as conn:
            conn.execute(text("SELECT set_config('app.tenant_id', :t, false)"), {"t": tenant})
            try:
                self._check_jobs(conn, tenant, user, agent)
            except ScopeErasing:
                return True
        return False

    def _check_tenant(self, tenant: str, born: Any) -> bool:
        """Drop every unwrapped key of a tenant deleted (and maybe created again) since this
        worker last saw it: its tenant and index keys were shredded by another worker."""
        changed = tenant in self._born and self._born[tenant] != born
        if changed:
            self._keyring.forget(tenant)
            self._seen = {scope: at for scope, at in self._seen.items() if scope[0] != tenant}
        self._born[tenant] = born
        return changed

    def _check_jobs(self, conn: Connection, tenant: str, user: str, agent: str | None) -> None:
        tag = user_tag(self._keyring.index_key(tenant).tag, user)
        running, newest, born = conn.execute(_CHECK, {"t": tenant, "tag": tag}).one()
        if self._check_tenant(tenant, born):  # the tag was made under a shredded index key
            tag = user_tag(self._keyring.index_key(tenant).tag, user)
            running, newest, born = conn.execute(_CHECK, {"t": tenant, "tag": tag}).one()
        seen = self._seen.get((tenant, user))
        if not running and seen == newest:
            return
        fresh = seen != newest  # new jobs since this worker last looked: forget their keys
        since = -1.0 if seen is None else seen  # not fresh: only the running jobs come back
        blocked = False
        for job_id, sealed, state in conn.execute(_JOBS, {"t": tenant, "tag": tag, "since": since}):
            erased = self._erased_agent(tenant, job_id, sealed)
            if fresh:  # another worker may have shredded its subject's keys
                self._keyring.forget(tenant, user, erased)
            if state == "running" and (erased is None or agent is None or erased == agent):
                blocked = True
        self._seen[(tenant, user)] = newest
        if blocked:
            raise ScopeErasing("this scope is being erased; the write was not stored")

    def _erased_agent(self, tenant: str, job_id: str, sealed: bytes) -> str | None:
        """The agent an erase job erases (None: the whole user), from its sealed subject."""
        if (tenant, job_id) in self._subjects:
            return self._subjects[(tenant, job_id)]
        raw = self._keyring.open_record(tenant, ERASURE_JOB_PURPOSE, job_id, bytes(sealed))
        found = json.loads(raw).get("agent_id")
        agent = found if isinstance(found, str) else None
        if len(self._subjects) >= _MAX_SUBJECTS:
            self._subjects.clear()
        self._subjects[(tenant, job_id)] = agent
        return agent

    @contextmanager
    def blocking(
        self,
        tenant: str,
        user: str | None = None,
        agent: str | None = None,
        *,
        before_drain: Callable[[], None] | None = None,
        drain_seconds: float = DEFAULT_DRAIN_SECONDS,
    ) -> Iterator[None]:
        """Block and drain the scope in this process, then in every worker; run the body."""
        with (
            super().blocking(
                tenant, user, agent, before_drain=before_drain, drain_seconds=drain_seconds
            ),
            self._engine.connect() as conn,
        ):
            held: list[tuple[int, bool]] = []
            conn.execute(text(f"SET lock_timeout = {max(1, int(drain_seconds * 1000))}"))
            try:
                for key, exclusive in erase_locks(tenant, user, agent):
                    lock = "pg_advisory_lock" if exclusive else "pg_advisory_lock_shared"
                    conn.execute(text(f"SELECT {lock}(:k)"), {"k": key})
                    held.append((key, exclusive))
            except Exception:
                _unlock(conn, held)
                raise ScopeBusy("writes to this scope are still in flight; try again") from None
            finally:
                conn.execute(text("RESET lock_timeout"))
            if user is not None:
                self._keyring.forget(tenant, user, agent)
            try:
                yield
            finally:
                _unlock(conn, held)


def _unlock(conn: Connection, held: list[tuple[int, bool]]) -> None:
    for key, exclusive in reversed(held):
        unlock = "pg_advisory_unlock" if exclusive else "pg_advisory_unlock_shared"
        conn.execute(text(f"SELECT {unlock}(:k)"), {"k": key})
