"""The in-process daily consolidation: every tenant at `MEMVAULT_CONSOLIDATE_AT` (02:30 by
default) in the tenant's timezone (policy `timezone`, an IANA name; UTC when unset).

A thread wakes every minute; a tenant whose local time has passed the hour and that has not
been consolidated on its local date yet is consolidated then. A server started after the hour
waits for the next day. Consolidation is idempotent, so a restart that runs it twice in a day
changes nothing.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import UTC, date, datetime
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from memvault.amem.maintenance import consolidate_tenant

if TYPE_CHECKING:
    from memvault.amem.service import Amem
    from memvault.runtime.factory import Services

log = logging.getLogger(__name__)

TICK_SECONDS = 60.0


def tenant_zone(name: str | None) -> ZoneInfo:
    """The tenant's timezone (UTC for none or an unknown name)."""
    if not name:
        return ZoneInfo("UTC")
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return ZoneInfo("UTC")


def due(now: float, zone: ZoneInfo, at: str, last: date | None) -> date | None:
    """The local date to consolidate for, if `at` has passed there and it was not done yet."""
    local = datetime.fromtimestamp(now, tz=UTC).astimezone(zone)
    hour, minute = (int(x) for x in at.split(":"))
    if (local.hour, local.minute) < (hour, minute):
        return None
    today = local.date()
    return today if last != today else None


class ConsolidationScheduler:
    """Runs `consolidate_tenant` for each tenant once a day at its local hour."""

    def __init__(
        self, services: Services, amem: Amem, clock: Callable[[], float] = time.time
    ) -> None:
        self._services = services
        self._amem = amem
        self._clock = clock
        self._at = services.settings.consolidate_at
        self._last: dict[str, date] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.runs = 0

    def _zone(self, tenant: str) -> ZoneInfo:
        return tenant_zone(self._services.gate.tenant_policy(tenant).timezone)

    def start(self) -> None:
        """Start the thread; tenants whose hour already passed today wait for tomorrow."""
        now = self._clock()
        for tenant in self._services.db.tenant_ids():
            today = due(now, self._zone(tenant), self._at, None)
            if today is not None:
                self._last[tenant] = today
        self._thread = threading.Thread(target=self._loop, name="amem-consolidation", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None

    def tick(self) -> int:
        """Consolidate every tenant that is due now; how many were."""
        ran = 0
        now = self._clock()
        for tenant in self._services.db.tenant_ids():
            day = due(now, self._zone(tenant), self._at, self._last.get(tenant))
            if day is None:
                continue
            self._last[tenant] = day
            try:
                report = consolidate_tenant(self._amem, tenant)
            except Exception as exc:  # the next day retries; one tenant never stops the others
                log.warning("daily consolidation failed: %s", type(exc).__name__)
                continue
            ran += 1
            self.runs += 1
            log.info(
                "daily consolidation: %d scopes, %d groups, %d relations",
                report.scopes,
                report.groups,
                report.related,
            )
        return ran

    def _loop(self) -> None:
        while not self._stop.wait(TICK_SECONDS):
            self.tick()
