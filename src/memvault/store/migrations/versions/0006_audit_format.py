"""audit events in the DESIGN format: `at`, `subject`, `details`, `prev`; existing rows re-chained.

Each tenant's existing events are renumbered 1, 2, … in their old order and re-chained with the new
hash (SHA-256 of the canonical JSON of the event without `hash`). Old `detail` ids move to
`subject`; a clear `user_id` in an old event cannot be pseudonymised here (the keyed pseudonym
needs the keystore), so it is dropped and the event says so (`details.user_id_removed`).
On PostgreSQL the table keeps its row-level security: FORCE is lifted for this transaction only,
so the migrating owner can read every tenant's rows, and set again before commit.

The hashing below is frozen with this revision (it must not follow later code changes).

Revision ID: 0006
Revises: 0005
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.engine import Connection, Row

from memvault.store.migrations._ddl import force_lifted

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

GENESIS = "0" * 64
SUBJECT_KEYS = ("agent_id", "key_id", "note_id", "target_id")

events = sa.table(
    "audit_events",
    sa.column("tenant_id", sa.String),
    sa.column("seq", sa.Integer),
    sa.column("ts", sa.Float),
    sa.column("actor", sa.String),
    sa.column("action", sa.String),
    sa.column("detail", sa.Text),
    sa.column("prev_hash", sa.String),
    sa.column("at", sa.String),
    sa.column("subject", sa.Text),
    sa.column("details", sa.Text),
    sa.column("prev", sa.String),
    sa.column("hash", sa.String),
)


def _canonical(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _utc(epoch: float) -> str:
    moment = datetime.fromtimestamp(epoch, tz=UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def _integers(value: Any) -> Any:
    """Canonical JSON has no floats: an old float count becomes an integer."""
    if isinstance(value, float):
        return int(value)
    if isinstance(value, dict):
        return {str(k): _integers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_integers(v) for v in value]
    return value


def _convert(tenant: str, seq: int, row: Any, prev: str) -> dict[str, Any]:
    detail = _integers(json.loads(row.detail or "{}"))
    subject = {k: detail.pop(k) for k in SUBJECT_KEYS if k in detail}
    if "user_id" in detail:
        detail.pop("user_id")
        detail["user_id_removed"] = True
    event: dict[str, Any] = {
        "seq": seq,
        "tenant_id": tenant,
        "at": _utc(float(row.ts)),
        "actor": row.actor,
        "action": row.action,
        "subject": subject,
        "details": detail,
        "prev": prev,
    }
    event["hash"] = hashlib.sha256(_canonical(event).encode()).hexdigest()
    return event


def _events_by_tenant(bind: Connection) -> Iterator[tuple[str, Sequence[Row[Any]]]]:
    """Each tenant's events in `seq` order; a tenant's rows are read when its turn comes."""
    tenants = bind.execute(sa.select(events.c.tenant_id).distinct()).scalars().all()
    for tenant in tenants:
        rows = bind.execute(
            sa.select(events).where(events.c.tenant_id == tenant).order_by(events.c.seq)
        ).all()
        yield tenant, rows


def upgrade() -> None:
    bind = op.get_bind()
    with force_lifted("audit_events"):  # the owner reads and rewrites every tenant's events
        op.add_column("audit_events", sa.Column("at", sa.String(length=32), nullable=True))
        op.add_column("audit_events", sa.Column("subject", sa.Text(), nullable=True))
        op.add_column("audit_events", sa.Column("details", sa.Text(), nullable=True))
        op.add_column("audit_events", sa.Column("prev", sa.String(length=64), nullable=True))
        for tenant, rows in _events_by_tenant(bind):
            converted, prev = [], GENESIS
            for seq, row in enumerate(rows, start=1):
                event = _convert(tenant, seq, row, prev)
                converted.append((row, event))
                prev = event["hash"]
            bind.execute(sa.delete(events).where(events.c.tenant_id == tenant))
            for row, event in converted:
                bind.execute(
                    events.insert().values(
                        tenant_id=tenant,
                        seq=event["seq"],
                        ts=row.ts,
                        actor=event["actor"],
                        action=event["action"],
                        detail="{}",
                        prev_hash=event["prev"],
                        at=event["at"],
                        subject=_canonical(event["subject"]),
                        details=_canonical(event["details"]),
                        prev=event["prev"],
                        hash=event["hash"],
                    )
                )
        with op.batch_alter_table("audit_events") as batch:
            for column in ("ts", "detail", "prev_hash"):
                batch.drop_column(column)
            batch.alter_column("at", existing_type=sa.String(length=32), nullable=False)
            batch.alter_column("subject", existing_type=sa.Text(), nullable=False)
            batch.alter_column("details", existing_type=sa.Text(), nullable=False)
            batch.alter_column("prev", existing_type=sa.String(length=64), nullable=False)


def downgrade() -> None:
    """Back to 0005's columns; the events keep their content, re-chained with the old hash."""
    bind = op.get_bind()
    with force_lifted("audit_events"):  # the owner reads and rewrites every tenant's events
        op.add_column("audit_events", sa.Column("ts", sa.Float(), nullable=True))
        op.add_column("audit_events", sa.Column("detail", sa.Text(), nullable=True))
        op.add_column("audit_events", sa.Column("prev_hash", sa.String(length=64), nullable=True))
        for tenant, rows in _events_by_tenant(bind):
            prev = GENESIS
            for row in rows:
                detail = {**json.loads(row.details), **json.loads(row.subject)}
                body = json.dumps(detail, separators=(",", ":"), sort_keys=True)
                ts = datetime.fromisoformat(row.at.replace("Z", "+00:00")).timestamp()
                material = json.dumps(
                    [prev, row.seq, ts, row.actor, row.action, body], separators=(",", ":")
                )
                digest = hashlib.sha256(material.encode()).hexdigest()
                bind.execute(
                    sa.update(events)
                    .where(events.c.tenant_id == tenant, events.c.seq == row.seq)
                    .values(ts=ts, detail=body, prev_hash=prev, hash=digest)
                )
                prev = digest
        with op.batch_alter_table("audit_events") as batch:
            for column in ("at", "subject", "details", "prev"):
                batch.drop_column(column)
            batch.alter_column("ts", existing_type=sa.Float(), nullable=False)
            batch.alter_column("detail", existing_type=sa.Text(), nullable=False)
            batch.alter_column("prev_hash", existing_type=sa.String(length=64), nullable=False)
