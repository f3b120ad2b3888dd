"""A tenant's webhook endpoints and the durable outbox of their events.

`Webhooks.create` stores an endpoint (URL, subscribed event types) and a fresh signing secret
sealed under the tenant key; the secret is returned once. `emit` writes one outbox row per
subscribed endpoint (`webhook_deliveries`); `memvault.webhooks.delivery.Deliverer` posts them.
Which endpoints a tenant has is cached in memory for `cache_seconds`, so an event of a tenant
with no endpoint costs no SQL. Payloads carry ids, keyed scope pseudonyms and event types,
never text.
"""

from __future__ import annotations

import ipaddress
import json
import logging
import secrets
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, Literal, get_args
from urllib.parse import urlsplit

from sqlalchemy import delete, select
from sqlalchemy.orm import InstrumentedAttribute

from memvault.canonical import canonical_json, rfc3339
from memvault.errors import InvalidRequest, NotFound
from memvault.ids import uuid7
from memvault.keyring import Keyring
from memvault.store.database import Database
from memvault.store.models import WebhookDeliveryRow, WebhookRow

log = logging.getLogger(__name__)

EventType = Literal[
    "memory.added",
    "memory.updated",
    "memory.deleted",
    "memory.superseded",
    "scope.erased",
    "read.alert",
]
"""The event types a webhook subscribes to (the API's `WebhookIn.events` admits these)."""
EVENT_TYPES: tuple[str, ...] = get_args(EventType)
AUDIT_EVENTS = {
    "note.added": "memory.added",
    "note.updated": "memory.updated",
    "note.deleted": "memory.deleted",
    "note.expired": "memory.deleted",
}
"""Audit actions that are memory events (`on_audit`): the audit log already sees them all."""
SECRET_PURPOSE = "webhook-secret"
MAX_WEBHOOKS = 10
_ID_FIELDS = (
    "note_id",
    "superseded_by",
    "target_id",
    "key_id",
    "job_id",
    "receipt_id",
    "alert_id",
)


def check_url(url: str) -> str:
    """An endpoint URL: HTTPS, or plain HTTP to a loopback host only (tests); no credentials."""
    if not isinstance(url, str) or len(url) > 2048:
        raise InvalidRequest("url must be a URL of at most 2048 characters")
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        parts.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError:
        raise InvalidRequest("url is not a valid URL") from None
    if parts.scheme not in ("https", "http") or not host:
        raise InvalidRequest("url must be https://host/...")
    if parts.username is not None or parts.password is not None:
        raise InvalidRequest("url must not carry credentials")
    if parts.scheme == "http" and not _loopback(host):
        raise InvalidRequest("url must use https (plain http only to a loopback address)")
    return url


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_events(events: list[str]) -> list[str]:
    """Known event types, each once, in the order of `EVENT_TYPES`."""
    unknown = [e for e in events if e not in EVENT_TYPES]
    if unknown or not events:
        raise InvalidRequest(f"events must be a non-empty list of: {', '.join(EVENT_TYPES)}")
    return [e for e in EVENT_TYPES if e in events]


class Webhooks:
    """Endpoints, their sealed secrets and the outbox, for every tenant of one database."""

    def __init__(
        self,
        db: Database,
        keyring: Keyring,
        clock: Callable[[], float] = time.time,
        *,
        cache_seconds: float = 5.0,
    ) -> None:
        self._db = db
        self._keyring = keyring
        self._clock = clock
        self._cache_seconds = cache_seconds
        self._cache: dict[str, tuple[float, dict[str, frozenset[str]]]] = {}
        self._lock = threading.Lock()

    # endpoints ---------------------------------------------------------------------------------
    def create(self, tenant: str, url: str, events: list[str]) -> tuple[str, str]:
        """Store an endpoint; returns (webhook id, secret). The secret is shown only here."""
        url, kinds = check_url(url), check_events(events)
        if len(self.endpoints(tenant)) >= MAX_WEBHOOKS:
            raise InvalidRequest(f"a tenant has at most {MAX_WEBHOOKS} webhooks")
        webhook_id = secrets.token_hex(8)
        secret = "whsec_" + secrets.token_urlsafe(32)
        sealed = self._keyring.seal_record(tenant, SECRET_PURPOSE, webhook_id, secret.encode())
        with self._db.session(tenant) as sess:
            sess.add(
                WebhookRow(
                    tenant_id=tenant,
                    webhook_id=webhook_id,
                    url=url,
                    events=json.dumps(kinds),
                    secret_ct=sealed,
                    created_at=self._clock(),
                )
            )
        self.forget(tenant)
        return webhook_id, secret

    def endpoints(self, tenant: str) -> list[dict[str, Any]]:
        """The tenant's endpoints (never their secrets)."""
        with self._db.session(tenant) as sess:
            rows = sess.scalars(
                select(WebhookRow)
                .where(WebhookRow.tenant_id == tenant)
                .order_by(WebhookRow.created_at)
            ).all()
            return [
                {
                    "id": r.webhook_id,
                    "url": r.url,
                    "events": json.loads(r.events),
                    "created_at": rfc3339(r.created_at),
                }
                for r in rows
            ]

    def delete(self, tenant: str, webhook_id: str) -> None:
        """Remove an endpoint and its pending deliveries; NotFound for an unknown id."""
        with self._db.session(tenant) as sess:
            gone = sess.execute(
                delete(WebhookRow).where(
                    WebhookRow.tenant_id == tenant, WebhookRow.webhook_id == webhook_id
                )
            )
            if not gone.rowcount:  # type: ignore[attr-defined]
                raise NotFound("no such webhook")
            sess.execute(
                delete(WebhookDeliveryRow).where(
                    WebhookDeliveryRow.tenant_id == tenant,
                    WebhookDeliveryRow.webhook_id == webhook_id,
                    WebhookDeliveryRow.status == "pending",
                )
            )
        self.forget(tenant)

    def secret(self, tenant: str, row: WebhookRow) -> str:
        """An endpoint's signing secret, opened from its sealed record."""
        return self._keyring.open_record(
            tenant, SECRET_PURPOSE, row.webhook_id, row.secret_ct
        ).decode()

    def forget(self, tenant: str) -> None:
        """Drop the cached endpoints of `tenant` (after a change made here)."""
        with self._lock:
            self._cache.pop(tenant, None)

    def has_endpoints(self, tenant: str) -> bool:
        """Whether `tenant` has an endpoint (from the cache of `cache_seconds`)."""
        return bool(self._subscriptions(tenant))

    def _subscriptions(self, tenant: str) -> dict[str, frozenset[str]]:
        now = time.monotonic()
        with self._lock:
            cached = self._cache.get(tenant)
        if cached is not None and now - cached[0] < self._cache_seconds:
            return cached[1]
        with self._db.session(tenant) as sess:
            rows = sess.execute(
                select(WebhookRow.webhook_id, WebhookRow.events).where(
                    WebhookRow.tenant_id == tenant
                )
            ).all()
        subs = {str(r[0]): frozenset(json.loads(r[1])) for r in rows}
        with self._lock:
            self._cache[tenant] = (now, subs)
        return subs

    # events ------------------------------------------------------------------------------------
    def emit(self, tenant: str, event_type: str, data: Mapping[str, Any]) -> int:
        """Queue `event_type` for every endpoint of `tenant` subscribed to it; how many rows.

        `data` holds ids, counts and pseudonyms only (the callers build it so)."""
        targets = [w for w, kinds in self._subscriptions(tenant).items() if event_type in kinds]
        if not targets:
            return 0
        now = self._clock()
        event_id = uuid7()
        body = canonical_json(
            {
                "id": event_id,
                "type": event_type,
                "tenant_id": tenant,
                "created_at": rfc3339(now),
                "data": dict(data),
            }
        ).decode()
        with self._db.session(tenant) as sess:
            for webhook_id in targets:
                sess.add(
                    WebhookDeliveryRow(
                        tenant_id=tenant,
                        delivery_id=uuid7(),
                        webhook_id=webhook_id,
                        event_type=event_type,
                        body=body,
                        status="pending",
                        attempts=0,
                        next_at=now,
                        created_at=now,
                    )
                )
        return len(targets)

    def pseudonym(self, tenant: str, kind: str, value: str | None) -> str | None:
        """The keyed pseudonym of a user or agent id (the audit log's for users)."""
        if value is None:
            return None
        return self._keyring.index_key(tenant).tag(f"{kind}:{value}")

    def on_audit(
        self,
        tenant: str,
        actor: str,
        action: str,
        subject: Mapping[str, Any],
        details: Mapping[str, Any],
    ) -> None:
        """The audit log's listener: audited note changes become memory events."""
        event_type = AUDIT_EVENTS.get(action)
        if event_type is not None:
            self.publish(tenant, event_type, subject, {**details, "action": action}, actor=actor)

    def publish(
        self,
        tenant: str,
        event_type: str,
        subject: Mapping[str, Any],
        details: Mapping[str, Any],
        *,
        actor: str = "system",
    ) -> None:
        """Queue an event about `subject` (ids: user and agent become keyed pseudonyms; note,
        key, job and receipt ids stay) with the integer, flag and name `details`. Never raises:
        a lost event is logged by type, and the change it reports stands."""
        try:
            data: dict[str, Any] = {
                "user": self.pseudonym(tenant, "user", subject.get("user_id")),
                "agent": self.pseudonym(tenant, "agent", subject.get("agent_id")),
                "actor": actor,
            }
            for name in _ID_FIELDS:
                value = subject.get(name, details.get(name))
                if value is not None:
                    data[name] = value
            for name, value in details.items():
                if name not in data and (isinstance(value, (bool, int, str)) or value is None):
                    data[name] = value
            self.emit(tenant, event_type, data)
        except Exception as exc:
            log.error("webhook event %s not queued (%s)", event_type, type(exc).__name__)

    def deliveries(self, tenant: str, limit: int = 100) -> list[dict[str, Any]]:
        """The tenant's most recent deliveries (status, attempts; never the secret)."""
        rows = newest_rows(self._db, tenant, WebhookDeliveryRow.created_at, limit)
        return [
            {
                "id": r.delivery_id,
                "webhook_id": r.webhook_id,
                "type": r.event_type,
                "status": r.status,
                "attempts": r.attempts,
                "last_status": r.last_status,
                "created_at": rfc3339(r.created_at),
            }
            for r in rows
        ]


def newest_rows(
    db: Database, tenant: str, at: InstrumentedAttribute[float], limit: int
) -> list[Any]:
    """The `limit` newest rows of `tenant` in the table of column `at`, newest first by it."""
    table = at.class_
    with db.session(tenant) as sess:
        return list(
            sess.scalars(
                select(table).where(table.tenant_id == tenant).order_by(at.desc()).limit(limit)
            ).all()
        )
