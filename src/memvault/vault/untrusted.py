"""Untrusted-content mode: sessions an agent's runtime marked untrusted refuse memory reads.

An agent that processed external content (a web page, an email) may have been told by it to
read memory and send it elsewhere. Its runtime marks the session untrusted; until the mark is
removed or runs out, every memory read that names the session (`X-Session-Id`) is refused with
`SessionUntrusted` (HTTP 423) and returns no memory.

A mark is a row of `untrusted_sessions` keyed by a keyed tag of (user, agent, session id), so
every worker on the database sees it at once: a mark made on one worker refuses reads on all.
A read that names no session never touches the table; one that names a session costs one
primary-key lookup (no cache: a cached "not marked" would let a read through on another worker
after a mark, a cached "marked" would keep refusing after an unmark). The mark's reason is
screened like any written field (a credential refuses the mark, PII is redacted) and never
stored: its keyed tag goes to the audit event, so an auditor can match a known reason.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy import bindparam, delete, select
from sqlalchemy.orm import Session

from memvault.errors import InvalidRequest, SessionUntrusted
from memvault.keyring import Keyring
from memvault.scope import Scope
from memvault.store.database import Database
from memvault.store.driver_sql import DriverStatement
from memvault.store.models import UntrustedSessionRow
from memvault.vault.screen_gate import ScreenGate

_MARK_EXPIRES = DriverStatement(
    select(UntrustedSessionRow.expires_at).where(
        UntrustedSessionRow.tenant_id == bindparam("tenant_id"),
        UntrustedSessionRow.mark_tag == bindparam("mark_tag"),
    ),
    "select",
)

MAX_TTL_S = 24 * 3600
"""A mark lasts at most a day; a runtime that needs longer marks again."""


@dataclass(frozen=True, slots=True)
class Mark:
    """A mark as made: when it runs out, and the keyed tag of its screened reason."""

    expires_at: float
    reason_tag: str


class UntrustedSessions:
    """Marks, unmarks and checks untrusted sessions of one database (every worker shares them)."""

    def __init__(
        self,
        db: Database,
        keyring: Keyring,
        gate: ScreenGate,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._db = db
        self._keyring = keyring
        self._gate = gate
        self._clock = clock

    def _tag(self, scope: Scope, session_id: str) -> str:
        key = self._keyring.index_key(scope.tenant)
        return key.tag(f"untrusted|{scope.user}|{scope.agent}|{session_id}")

    def mark(self, scope: Scope, session_id: str, *, reason: str, ttl_s: float) -> Mark:
        """Mark `session_id` of `scope`'s agent untrusted for `ttl_s` seconds (a mark already
        there is renewed). `reason` is screened: a credential refuses the mark."""
        if not 0 < ttl_s <= MAX_TTL_S:
            raise InvalidRequest(f"ttl_s must be in (0, {MAX_TTL_S}]")
        (screened,) = self._gate.screen_strings(scope, "reason", [reason])
        reason_tag = self._keyring.index_key(scope.tenant).tag(f"untrusted-reason|{screened}")
        now = self._clock()
        row = UntrustedSessionRow(
            tenant_id=scope.tenant,
            mark_tag=self._tag(scope, session_id),
            marked_at=now,
            expires_at=now + ttl_s,
        )
        with self._db.session(scope.tenant) as sess:
            self._delete_expired(sess, scope.tenant, now)
            sess.merge(row)
        return Mark(expires_at=row.expires_at, reason_tag=reason_tag)

    def unmark(self, scope: Scope, session_id: str) -> bool:
        """End the mark; True when a live mark ended (an expired one is removed too)."""
        tag = self._tag(scope, session_id)
        with self._db.session(scope.tenant) as sess:
            expires = sess.execute(
                delete(UntrustedSessionRow)
                .where(
                    UntrustedSessionRow.tenant_id == scope.tenant,
                    UntrustedSessionRow.mark_tag == tag,
                )
                .returning(UntrustedSessionRow.expires_at)
            ).scalar_one_or_none()
        return expires is not None and expires > self._clock()

    def is_marked(self, scope: Scope, session_id: str) -> bool:
        """Whether the session is marked now: one primary-key lookup on the driver's connection
        (no ORM session: the read path pays for this on every read that names a session)."""
        tag = self._tag(scope, session_id)
        with self._db.driver_transaction(scope.tenant) as conn:
            found = _MARK_EXPIRES.rows(conn, {"tenant_id": scope.tenant, "mark_tag": tag})
        return bool(found) and float(found[0][0]) > self._clock()

    def refuse_if_marked(self, scope: Scope, session_id: str | None) -> None:
        """Raise `SessionUntrusted` when the read names a marked session; nothing when it
        names none (no lookup)."""
        if session_id is not None and self.is_marked(scope, session_id):
            raise SessionUntrusted("this session is marked untrusted: memory reads are refused")

    @staticmethod
    def _delete_expired(sess: Session, tenant: str, now: float) -> int:
        """Delete the tenant's expired marks (each mark call sweeps its tenant)."""
        result = sess.execute(
            delete(UntrustedSessionRow)
            .where(UntrustedSessionRow.tenant_id == tenant, UntrustedSessionRow.expires_at <= now)
            .execution_options(synchronize_session=False)
        )
        return int(result.rowcount)  # type: ignore[attr-defined]
