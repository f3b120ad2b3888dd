"""Idempotency records in the data store: erasure, tenant deletion and expiry.

The middleware that reads and writes them lives in `memvault.api.idempotency`; these helpers sit
in the vault layer so erasure (which must not import the API) can delete and count them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable

from sqlalchemy import delete, func, select, text
from sqlalchemy.orm import Session

from memvault.keyring import envelope_key_version
from memvault.store.database import REPLAY_EXPIRED_FUNCTION, Database
from memvault.store.models import IdempotencyRow

TTL_SECONDS = 24 * 3600.0
"""A key is remembered this long after its first use."""


def delete_idempotency_records(
    sess: Session, tenant: str, user: str, agent: str | None = None
) -> int:
    """Delete the records of principals of (tenant, user[, agent]); returns how many went.

    Call it in the erase transaction (a `Database.session(tenant)`), with the same selector as
    `Keyring.shred`: the records are sealed under the scope keys that shred destroys.
    """
    where = [IdempotencyRow.tenant_id == tenant, IdempotencyRow.user_id == user]
    if agent is not None:
        where.append(IdempotencyRow.agent_id == agent)
    result = sess.execute(
        delete(IdempotencyRow).where(*where).execution_options(synchronize_session=False)
    )
    return int(result.rowcount)  # type: ignore[attr-defined]


def delete_tenant_idempotency_records(sess: Session, tenant: str) -> int:
    """Delete every record of a tenant (tenant deletion), in a `Database.session(tenant)`."""
    result = sess.execute(
        delete(IdempotencyRow)
        .where(IdempotencyRow.tenant_id == tenant)
        .execution_options(synchronize_session=False)
    )
    return int(result.rowcount)  # type: ignore[attr-defined]


def count_idempotency_records(
    sess: Session, tenant: str, user: str | None = None, agent: str | None = None
) -> int:
    """Records of (tenant[, user[, agent]]) still stored (for erasure verification)."""
    where = [IdempotencyRow.tenant_id == tenant]
    if user is not None:
        where.append(IdempotencyRow.user_id == user)
        if agent is not None:
            where.append(IdempotencyRow.agent_id == agent)
    return int(
        sess.execute(select(func.count()).select_from(IdempotencyRow).where(*where)).scalar_one()
    )


def sealing_versions(
    sess: Session, tenant: str, user: str, agent: str, *, live_after: float
) -> set[int]:
    """The data key versions sealing the stored responses of one principal scope's records
    created after `live_after` (not expired): a key rotation keeps them (`compliance.rotation`).

    Read from the envelopes' headers; nothing is decrypted (the associated data binds the
    client's key, which is not stored, so a record cannot be re-sealed without its retry).
    """
    rows = sess.execute(
        select(IdempotencyRow.response_ct).where(
            IdempotencyRow.tenant_id == tenant,
            IdempotencyRow.user_id == user,
            IdempotencyRow.agent_id == agent,
            IdempotencyRow.response_ct.is_not(None),
            IdempotencyRow.created_at > live_after,
        )
    ).scalars()
    versions = (envelope_key_version(bytes(ct)) for ct in rows if ct is not None)
    return {v for v in versions if v is not None}


def purge_expired(
    db: Database,
    now: float,
    *,
    ttl_seconds: float = TTL_SECONDS,
    tenants: Iterable[str] | None = None,
) -> int:
    """Delete records older than `ttl_seconds` at `now` (epoch seconds); returns how many went.

    Runs one `db.session(tenant)` per tenant, so row-level security holds on PostgreSQL.
    `tenants` defaults to the tenants that have an expired record (one query across tenants,
    on PostgreSQL through `memvault_replay_expired_tenants`, as `Database.tenant_ids()`).
    """
    if tenants is None:
        tenants = _tenants_with_expired(db, now - ttl_seconds)
    cutoff = now - ttl_seconds
    purged = 0
    for tenant in tenants:
        with db.session(tenant) as sess:
            result = sess.execute(
                delete(IdempotencyRow)
                .where(IdempotencyRow.tenant_id == tenant, IdempotencyRow.created_at <= cutoff)
                .execution_options(synchronize_session=False)
            )
            purged += int(result.rowcount)  # type: ignore[attr-defined]
    return purged


def _tenants_with_expired(db: Database, cutoff: float) -> list[str]:
    with db.session(None) as sess:
        if db.is_postgres:
            query = text(f"SELECT tenant_id FROM {REPLAY_EXPIRED_FUNCTION}(:cutoff)")
            return sorted(str(t) for t in sess.execute(query, {"cutoff": cutoff}).scalars())
        rows = sess.execute(
            select(IdempotencyRow.tenant_id).where(IdempotencyRow.created_at <= cutoff).distinct()
        )
        return sorted(str(t) for t in rows.scalars())


def idempotency_sweeper(db: Database, clock: Callable[[], float] = time.time) -> Callable[[], int]:
    """A periodic sweeper (`Maintenance.add_sweeper`): `purge_expired(db, clock())`."""

    def sweep() -> int:
        return purge_expired(db, clock())

    return sweep
