"""The outbox's deliverer: posts due deliveries, signed, and retries failures with backoff.

Every worker on a database runs one (a daemon thread started with the services). A pass takes,
per tenant, the due `pending` rows with `SELECT ... FOR UPDATE SKIP LOCKED` on PostgreSQL and
holds their row locks while it posts them and records the outcome in the same transaction, so
two workers never deliver one row at once (SQLite has one process, and one deliverer thread).
A row is `delivered` on a 2xx answer; otherwise it is retried after `retry_base * 2**(n-1)`
seconds (capped at an hour) until `max_attempts`, then `failed`. Rows are durable: deliveries
pending when a server stops are posted by the next one to start. Redirects are not followed.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

import httpx
from sqlalchemy import delete, select

from memvault.store.database import Database
from memvault.store.models import WebhookDeliveryRow, WebhookRow
from memvault.webhooks.hub import Webhooks
from memvault.webhooks.signing import HEADER, signature

log = logging.getLogger(__name__)

BATCH = 8
MAX_BACKOFF_SECONDS = 3600.0
KEEP_FINISHED_SECONDS = 7 * 86_400.0
"""Delivered and failed rows are deleted this long after they were created."""


class Deliverer:
    """Posts the outbox of every tenant; `start()` runs it every `poll` seconds in a thread."""

    def __init__(
        self,
        db: Database,
        hooks: Webhooks,
        tenants: Callable[[], list[str]],
        clock: Callable[[], float] = time.time,
        *,
        poll: float = 2.0,
        retry_base: float = 10.0,
        max_attempts: int = 8,
        timeout: float = 5.0,
    ) -> None:
        self._db = db
        self._hooks = hooks
        self._tenants = tenants
        self._clock = clock
        self.poll = poll
        self.retry_base = retry_base
        self.max_attempts = max_attempts
        self._http = httpx.Client(timeout=timeout, follow_redirects=False)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._pass = threading.Lock()
        self.on_pass: list[Callable[[], object]] = []
        """Also run on every pass of the thread (the read alerts' policy refresh)."""

    def start(self) -> None:
        """Start the background thread (once)."""
        if self._thread is None and self.poll > 0:
            self._thread = threading.Thread(
                target=self._loop, name="memvault-webhooks", daemon=True
            )
            self._thread.start()

    def stop(self) -> None:
        """Stop the thread (a pass in progress finishes) and close the HTTP client."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
            self._thread = None
        self._http.close()

    def _loop(self) -> None:
        while not self._stop.wait(self.poll):
            for extra in self.on_pass:
                try:
                    extra()
                except Exception as exc:
                    log.error("webhook thread task failed (%s)", type(exc).__name__)
            self.run_once()

    def run_once(self) -> int:
        """One pass over every tenant's due deliveries; how many were delivered."""
        delivered = 0
        with self._pass:
            for tenant in self._tenants():
                if not self._hooks.has_endpoints(tenant):
                    continue  # cached: a tenant without endpoints costs no query per pass
                try:
                    delivered += self._tenant_pass(tenant)
                except Exception as exc:
                    log.error("webhook pass failed for a tenant (%s)", type(exc).__name__)
        return delivered

    def _tenant_pass(self, tenant: str) -> int:
        now = self._clock()
        delivered = 0
        with self._db.session(tenant) as sess:
            sess.execute(
                delete(WebhookDeliveryRow).where(
                    WebhookDeliveryRow.tenant_id == tenant,
                    WebhookDeliveryRow.status.in_(("delivered", "failed")),
                    WebhookDeliveryRow.created_at < now - KEEP_FINISHED_SECONDS,
                )
            )
            query = (
                select(WebhookDeliveryRow)
                .where(
                    WebhookDeliveryRow.tenant_id == tenant,
                    WebhookDeliveryRow.status == "pending",
                    WebhookDeliveryRow.next_at <= now,
                )
                .order_by(WebhookDeliveryRow.next_at)
                .limit(BATCH)
            )
            if self._db.is_postgres:
                query = query.with_for_update(skip_locked=True)
            rows = sess.scalars(query).all()
            if not rows:
                return 0
            endpoints = {
                r.webhook_id: r
                for r in sess.scalars(select(WebhookRow).where(WebhookRow.tenant_id == tenant))
            }
            for row in rows:
                endpoint = endpoints.get(row.webhook_id)
                if endpoint is None:
                    row.status = "failed"
                    continue
                status = self._post(tenant, endpoint, row)
                row.attempts += 1
                row.last_status = status
                if 200 <= status < 300:
                    row.status, row.delivered_at = "delivered", self._clock()
                    delivered += 1
                elif row.attempts >= self.max_attempts:
                    row.status = "failed"
                else:
                    backoff = self.retry_base * 2 ** (row.attempts - 1)
                    row.next_at = self._clock() + min(backoff, MAX_BACKOFF_SECONDS)
        return delivered

    def _post(self, tenant: str, endpoint: WebhookRow, row: WebhookDeliveryRow) -> int:
        """POST one delivery; its HTTP status, or 0 when no answer came."""
        body = row.body.encode()
        try:
            secret = self._hooks.secret(tenant, endpoint)
        except Exception as exc:  # the tenant's keys are gone: nothing can be signed
            log.error("webhook secret unavailable (%s)", type(exc).__name__)
            return 0
        headers = {
            "Content-Type": "application/json",
            HEADER: signature(secret, body, int(self._clock())),
            "Memvault-Delivery": row.delivery_id,
            "Memvault-Event": row.event_type,
        }
        try:
            return self._http.post(endpoint.url, content=body, headers=headers).status_code
        except httpx.HTTPError as exc:
            log.info("webhook delivery %s not answered (%s)", row.delivery_id, type(exc).__name__)
            return 0
