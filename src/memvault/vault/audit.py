"""A hash-chained audit log per tenant. Events carry ids, counts and detector names, never text."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator
from typing import Any

from sqlalchemy import func, select

from memvault.vault.store.database import Database
from memvault.vault.store.models import AuditEventRow

GENESIS = "0" * 64


def _event_hash(prev_hash: str, seq: int, ts: float, actor: str, action: str, detail: str) -> str:
    material = json.dumps([prev_hash, seq, ts, actor, action, detail], separators=(",", ":"))
    return hashlib.sha256(material.encode("utf-8")).hexdigest()


class AuditLog:
    """Appends events whose hashes chain to the previous event of the same tenant."""

    def __init__(self, db: Database, clock: Callable[[], float]) -> None:
        self._db = db
        self._clock = clock

    def record(self, tenant: str, actor: str, action: str, **detail: Any) -> None:
        """Append one event. `detail` must hold ids and counts only."""
        body = json.dumps(detail, separators=(",", ":"), sort_keys=True)
        with self._db.session(tenant) as sess:
            last = sess.execute(
                select(AuditEventRow)
                .where(AuditEventRow.tenant_id == tenant)
                .order_by(AuditEventRow.seq.desc())
                .limit(1)
                .with_for_update()
            ).scalar_one_or_none()
            seq = 1 if last is None else last.seq + 1
            prev = GENESIS if last is None else last.hash
            ts = self._clock()
            sess.add(
                AuditEventRow(
                    tenant_id=tenant,
                    seq=seq,
                    ts=ts,
                    actor=actor,
                    action=action,
                    detail=body,
                    prev_hash=prev,
                    hash=_event_hash(prev, seq, ts, actor, action, body),
                )
            )

    def events(self, tenant: str) -> Iterator[dict[str, Any]]:
        """Every event of a tenant, oldest first, as plain dicts (for JSONL export)."""
        with self._db.session(tenant) as sess:
            rows = sess.execute(
                select(AuditEventRow)
                .where(AuditEventRow.tenant_id == tenant)
                .order_by(AuditEventRow.seq)
            ).scalars()
            for row in rows:
                yield {
                    "seq": row.seq,
                    "ts": row.ts,
                    "actor": row.actor,
                    "action": row.action,
                    "detail": json.loads(row.detail),
                    "prev_hash": row.prev_hash,
                    "hash": row.hash,
                }

    def verify(self, tenant: str) -> bool:
        """True when every event's hash matches its content and its predecessor."""
        prev = GENESIS
        for event in self.events(tenant):
            body = json.dumps(event["detail"], separators=(",", ":"), sort_keys=True)
            expected = _event_hash(
                prev, event["seq"], event["ts"], event["actor"], event["action"], body
            )
            if event["prev_hash"] != prev or event["hash"] != expected:
                return False
            prev = event["hash"]
        return True

    def count(self, tenant: str) -> int:
        with self._db.session(tenant) as sess:
            return int(
                sess.execute(
                    select(func.count())
                    .select_from(AuditEventRow)
                    .where(AuditEventRow.tenant_id == tenant)
                ).scalar_one()
            )
