"""Signed audit checkpoints, kept in the keystore (apart from the data store they vouch for).

A checkpoint is the deployment's Ed25519 signature over a tenant's audit chain head:
`{"type": "checkpoint", "tenant_id", "seq", "hash", "at", "key_id", "signature"}`, signed over
the canonical JSON of everything but `signature`. Whoever can write the data store can delete
audit events and recompute the (unkeyed) SHA-256 chain, but cannot reach these rows or the
signing key: an export carries the checkpoints it covers, and a re-chained log no longer
matches any checkpoint made before the edit.

The table holds ids, sequence numbers, hashes and signatures: no key material and nothing
personal. A user's erase leaves it alone (its events stay in the log, pseudonymised); the
deletion of a tenant, which deletes the tenant's audit log, deletes its checkpoints too
(`Keyring.shred(tenant)`), so a tenant id used again starts a new chain with no stale anchor.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy import BigInteger, Column, Engine, String, Table, delete, select
from sqlalchemy.exc import IntegrityError

from memvault.keyring._keystore import metadata
from memvault.keyring._signing import SigningKeys

checkpoints = Table(
    "keyring_audit_checkpoints",
    metadata,
    Column("tenant_id", String(128), primary_key=True),
    Column("seq", BigInteger, primary_key=True, autoincrement=False),
    Column("hash", String(64), nullable=False),
    Column("at", String(32), nullable=False),
    Column("key_id", String(64), nullable=False),
    Column("signature", String(128), nullable=False),
)

FIELDS = ("type", "tenant_id", "seq", "hash", "at", "key_id", "signature")
"""A checkpoint document's fields, in the order an export writes them."""


class AuditCheckpoints:
    """The keystore's signed audit checkpoints. Thread-safe (one short transaction per call)."""

    def __init__(
        self,
        engine: Engine,
        signing_keys: SigningKeys,
        check_open: Callable[[], None] = lambda: None,
    ) -> None:
        """`engine` is the keystore's; the table is created with the keystore's others."""
        self._engine = engine
        self._signing_keys = signing_keys
        self._check_open = check_open
        checkpoints.create(engine, checkfirst=True)

    def sign(self, tenant: str, seq: int, chain_hash: str, at: str) -> dict[str, Any]:
        """Sign the head `(seq, chain_hash)` of `tenant`'s audit chain at time `at` (RFC 3339)
        and keep the checkpoint. If one exists at that seq already (another worker made it),
        that one is kept and returned."""
        self._check_open()
        document = self._signing_keys.sign_with_key_id(
            {"type": "checkpoint", "tenant_id": tenant, "seq": seq, "hash": chain_hash, "at": at}
        )
        row = {name: document[name] for name in FIELDS if name != "type"}
        try:
            with self._engine.begin() as conn:
                conn.execute(checkpoints.insert().values(**row))
        except IntegrityError:
            existing = self.listed(tenant, after_seq=seq - 1, limit=1)
            if existing and existing[0]["seq"] == seq:
                return existing[0]
            raise
        return document

    def latest(self, tenant: str) -> dict[str, Any] | None:
        """The tenant's newest checkpoint, or None."""
        self._check_open()
        query = (
            select(checkpoints)
            .where(checkpoints.c.tenant_id == tenant)
            .order_by(checkpoints.c.seq.desc())
        ).limit(1)
        with self._engine.connect() as conn:
            row = conn.execute(query).first()
        return None if row is None else _document(row)

    def listed(
        self, tenant: str, *, after_seq: int = 0, limit: int | None = None
    ) -> list[dict[str, Any]]:
        """The tenant's checkpoints with `seq > after_seq`, oldest first (at most `limit`)."""
        self._check_open()
        query = (
            select(checkpoints)
            .where(checkpoints.c.tenant_id == tenant, checkpoints.c.seq > after_seq)
            .order_by(checkpoints.c.seq)
        )
        if limit is not None:
            query = query.limit(limit)
        with self._engine.connect() as conn:
            return [_document(row) for row in conn.execute(query)]

    def forget_tenant(self, tenant: str) -> int:
        """Delete the tenant's checkpoints (its audit log is deleted with it); how many went."""
        with self._engine.begin() as conn:
            return int(
                conn.execute(delete(checkpoints).where(checkpoints.c.tenant_id == tenant)).rowcount
            )

    def __repr__(self) -> str:
        return "AuditCheckpoints()"


def _document(row: Any) -> dict[str, Any]:
    return {
        "type": "checkpoint",
        "tenant_id": str(row.tenant_id),
        "seq": int(row.seq),
        "hash": str(row.hash),
        "at": str(row.at),
        "key_id": str(row.key_id),
        "signature": str(row.signature),
    }
