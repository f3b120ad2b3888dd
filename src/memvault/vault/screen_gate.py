"""Where the write screen meets the vault: tenant policy in, refusal log out.

Every write (add, update, shared, and later dialogue and consolidation) passes `ScreenGate.screen`
before anything is embedded or persisted. A refused text is never stored, logged or echoed; the
refusal log keeps the principal, the time and the detector only.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sqlalchemy import func, select

from memvault.errors import ScreenRefused
from memvault.scope import Scope
from memvault.vault.ids import uuid7
from memvault.vault.store.database import Database
from memvault.vault.store.models import RefusalRow, TenantRow

if TYPE_CHECKING:
    from memvault.screening import Screen, ScreenPolicy


@dataclass(frozen=True, slots=True)
class Screened:
    """What the screen lets through: the (redacted) text, flags and redacted PII types."""

    text: str
    flags: frozenset[str] = frozenset()
    redacted_types: tuple[str, ...] = ()


class ScreenGate:
    """Runs the screen with the tenant's policy and records refusals without content."""

    def __init__(self, db: Database, screen: Screen | None, clock: Callable[[], float]) -> None:
        self._db = db
        self._screen = screen
        self._clock = clock

    def screen(self, scope: Scope, text: str, *, shared: bool) -> Screened:
        """Screened text, or `ScreenRefused` (after logging the refusal) for a refused text."""
        if self._screen is None:
            return Screened(text)
        result = self._screen.check(text, policy=self.policy(scope.tenant), shared=shared)
        if result.refusal_code is not None:
            detector = result.detector or result.refusal_code
            self._record_refusal(scope, result.refusal_code, detector)
            raise ScreenRefused(result.refusal_code, detector)
        return Screened(result.text, frozenset(result.flags), tuple(result.redacted_types))

    def policy(self, tenant: str) -> ScreenPolicy | None:
        """The tenant's screen policy (None: the screen's defaults)."""
        from memvault.screening import ScreenPolicy

        with self._db.session(tenant) as sess:
            raw = sess.execute(
                select(TenantRow.policy_json).where(TenantRow.tenant_id == tenant)
            ).scalar_one_or_none()
        if not raw or raw == "{}":
            return None
        data = json.loads(raw)
        return ScreenPolicy(
            pii=data.get("pii", {}),
            allow_suspicious_shared=bool(data.get("allow_suspicious_shared", False)),
        )

    def refusal_counts(self, tenant: str) -> dict[str, int]:
        """Refusals per detector for a tenant (for an admin to review the rate)."""
        with self._db.session(tenant) as sess:
            rows = sess.execute(
                select(RefusalRow.detector, func.count())
                .where(RefusalRow.tenant_id == tenant)
                .group_by(RefusalRow.detector)
            ).all()
        return {detector: int(n) for detector, n in rows}

    def _record_refusal(self, scope: Scope, code: str, detector: str) -> None:
        with self._db.session(scope.tenant) as sess:
            sess.add(
                RefusalRow(
                    tenant_id=scope.tenant,
                    id=uuid7(),
                    ts=self._clock(),
                    principal=f"{scope.user}/{scope.agent}"[:64],
                    code=code,
                    detector=detector[:64],
                )
            )
