"""Background maintenance: reconcile at startup (before the server reports ready), then often.

The server owns one `Maintenance`. `start()` runs a first reconcile synchronously — on the
embedded default with no grace period, since the data-directory lock proves no other process has
writes in flight — and then a daemon thread repeats it every `interval` seconds with the normal
grace period, plus any registered sweeper (expired idempotency records, later the retention
sweeper). Errors are logged by type and never stop the loop.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from memvault.vault.reconcile import Reconciler, ReconcileReport

log = logging.getLogger(__name__)

DEFAULT_INTERVAL_SECONDS = 60.0
DEFAULT_GRACE_SECONDS = 60.0

Sweeper = Callable[[], object]


class Maintenance:
    """Startup and periodic reconcile (and sweepers) for one running service."""

    def __init__(
        self,
        reconciler: Reconciler,
        *,
        startup_grace: float,
        grace: float = DEFAULT_GRACE_SECONDS,
        interval: float = DEFAULT_INTERVAL_SECONDS,
    ) -> None:
        self._reconciler = reconciler
        self._startup_grace = startup_grace
        self._grace = grace
        self._interval = interval
        self._sweepers: list[Sweeper] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.ready = threading.Event()
        self.last_report: ReconcileReport | None = None

    def add_sweeper(self, sweeper: Sweeper) -> None:
        """Run `sweeper()` on every periodic pass (it must be safe to call from a thread)."""
        self._sweepers.append(sweeper)

    def start(self) -> ReconcileReport:
        """Reconcile once now, mark ready, and start the periodic thread."""
        report = self._reconciler.run(self._startup_grace)
        self.last_report = report
        if report.completed or report.updates_completed or report.removed or report.orphans_deleted:
            log.info(
                "startup reconcile: %d adds and %d updates completed, %d removed, %d orphans",
                report.completed,
                report.updates_completed,
                report.removed,
                report.orphans_deleted,
            )
        if report.failed or report.tenants_skipped:
            log.warning(
                "startup reconcile skipped %d rows and %d tenants (see the log above)",
                report.failed,
                report.tenants_skipped,
            )
        self.ready.set()
        if self._interval > 0 and self._thread is None:
            self._thread = threading.Thread(
                target=self._loop, name="memvault-maintenance", daemon=True
            )
            self._thread.start()
        return report

    def _loop(self) -> None:
        while not self._stop.wait(self._interval):
            self.run_once()

    def run_once(self) -> None:
        """One periodic pass: reconcile with the grace period, then every sweeper."""
        try:
            self.last_report = self._reconciler.run(self._grace)
        except Exception as exc:
            log.error("periodic reconcile failed (%s)", type(exc).__name__)
        for sweeper in self._sweepers:
            try:
                sweeper()
            except Exception as exc:
                log.error("maintenance sweeper failed (%s)", type(exc).__name__)

    def stop(self) -> None:
        """Stop the periodic thread (waits for a pass in progress)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
            self._thread = None
