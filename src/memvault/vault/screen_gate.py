"""Where the write screen meets the vault: tenant policy in, refusal log out.

Every write (add, update, shared, and later dialogue and consolidation) passes
`ScreenGate.screen_note` before anything is embedded or persisted: the text, and every other
client-supplied string that is stored (`source`, each topic). Identifier fields (`readers`, ids)
never reach the screen: they must match the id grammar, which cannot hold a secret. A refused
value is never stored, logged or echoed; the refusal log keeps the principal, the time, the
detector and the field name only.

PII is replaced by a typed placeholder with a keyed pseudonym, `[PHONE:7f3a9c01]`: an HMAC of the
normalised value under the tenant's index key. Two facts that differ only in a phone number stay
two notes, and the same number matches across notes, without the number being stored.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sqlalchemy import func, select

from memvault.audit.format import safe_name
from memvault.audit.log import AuditLog
from memvault.errors import ScreenRefused
from memvault.ids import uuid7
from memvault.observability import count_refusal, timed_call
from memvault.scope import Scope
from memvault.store.database import Database
from memvault.store.models import RefusalRow, TenantRow
from memvault.vault.drafts import agent_tag, user_tag
from memvault.vault.fields import check_ttl

if TYPE_CHECKING:
    from memvault.screening import Screen, ScreenPolicy, ScreenResult


@dataclass(frozen=True, slots=True)
class Screened:
    """What the screen lets through: the (redacted) text, flags and redacted PII types."""

    text: str
    flags: frozenset[str] = frozenset()
    redacted_types: tuple[str, ...] = ()


Pseudonym = Callable[[str, str], str]
"""(pii type, normalised value) -> short hex: the keyed pseudonym in a placeholder."""

POLICY_TTL_SECONDS = 5.0
"""How long a tenant's policy is served from memory when another process may have changed it."""

PSEUDONYM_HEX = 8
"""32 bits: 10,000 distinct numbers in a tenant collide with probability about 1%."""


def refusal_principal(tag: Callable[[str], str], user: str, agent: str | None = None) -> str:
    """How a refusal names its principal: blind tags `<user tag>/<agent tag prefix>` (64 chars).

    With `agent=None`, the prefix every refusal of the user starts with (for erasure).
    """
    prefix = user_tag(tag, user) + "/"
    return prefix if agent is None else prefix + agent_tag(tag, agent)[:31]


def keyed_pseudonym(tag: Callable[[str], str]) -> Pseudonym:
    """The pseudonym function of a tenant, from its index key's `tag`."""

    def pseudonym(pii_type: str, value: str) -> str:
        return tag(f"pii:{pii_type}:{value}")[:PSEUDONYM_HEX]

    return pseudonym


@dataclass(frozen=True, slots=True)
class ScreenedNote:
    """Every screened string of one write."""

    text: str
    source: str | None
    topics: tuple[str, ...]
    flags: frozenset[str] = frozenset()
    redacted_types: tuple[str, ...] = ()


NOTE_TYPES = ("memory", "knowledge")


@dataclass(frozen=True, slots=True)
class TenantPolicy:
    """A tenant's stored policy: the write screen's settings and the default TTL per note type.

    `screen` is None when the tenant keeps the screen's defaults. `ttl_days` maps each note type
    to the days a note of that type lives when its write names no `ttl_days` (None: no expiry).
    """

    screen: ScreenPolicy | None = None
    ttl_days: tuple[tuple[str, float | None], ...] = ()
    llm: str | None = None
    """`off` or `anthropic`: may A-MEM send this tenant's text to the LLM processor? None: the
    deployment's setting (`MEMVAULT_LLM`)."""
    timezone: str | None = None
    """IANA timezone of the tenant's daily consolidation (None: UTC)."""
    read_alerts: str | None = None
    """The tenant's `read_alerts` thresholds as stored (JSON object), None for the defaults."""

    def ttl_for(self, note_type: str) -> float | None:
        """The default TTL in days of `note_type` (None: notes of that type do not expire)."""
        return dict(self.ttl_days).get(note_type)


class ScreenGate:
    """Runs the screen with the tenant's policy and records refusals without content."""

    audit: AuditLog | None = None
    """Set by the factory: each refusal is also an audit event (detector and code, no value)."""

    def __init__(
        self,
        db: Database,
        screen: Screen | None,
        clock: Callable[[], float],
        *,
        policy_ttl: float = POLICY_TTL_SECONDS,
        tagger: Callable[[str], Callable[[str], str]] | None = None,
    ) -> None:
        self._db = db
        # The tenant's keyed tag function: refusals name the principal by blind tags, never ids.
        self._tagger = tagger
        self._screen = screen
        self._clock = clock
        self._policy_ttl = policy_ttl
        self._policies: dict[str, tuple[float, TenantPolicy]] = {}
        self._policies_lock = threading.Lock()

    def _policy_if_screening(self, scope: Scope) -> ScreenPolicy | None:
        return None if self._screen is None else self.policy(scope.tenant)

    def _text(
        self,
        scope: Scope,
        text: str,
        shared: bool,
        pseudonym: Pseudonym | None,
        policy: ScreenPolicy | None,
    ) -> Screened:
        if self._screen is None:
            return Screened(text)
        result = self._screen.check(text, policy=policy, shared=shared, pseudonym=pseudonym)
        self._raise_if_refused(scope, result)
        return Screened(result.text, frozenset(result.flags), tuple(result.redacted_types))

    def _field(
        self,
        scope: Scope,
        field: str,
        value: str,
        pseudonym: Pseudonym | None,
        policy: ScreenPolicy | None,
    ) -> Screened:
        if self._screen is None:
            return Screened(value)
        result = self._screen.check_field(value, field=field, policy=policy, pseudonym=pseudonym)
        self._raise_if_refused(scope, result, field)
        return Screened(result.text, frozenset(), tuple(result.redacted_types))

    def screen_strings(
        self, scope: Scope, field: str, values: Sequence[str], shared: bool = False
    ) -> list[str]:
        """Screen free-text values written back by a layer above the vault (A-MEM's context
        and tags): a credential refuses the write, PII is redacted. `shared` is accepted for
        symmetry with `screen_note` (fields are screened alike either way)."""
        policy = self._policy_if_screening(scope)
        return [self._field(scope, field, value, None, policy).text for value in values]

    @timed_call("screen", "ids")
    def screen_ids(self, scope: Scope, field: str, values: Sequence[str]) -> None:
        """Identifier values (`readers`): already in the id grammar; refuse a credential shape.

        An AWS key id matches the id grammar, so the grammar alone cannot keep a secret out of a
        reader list: the credential detectors run on each value too. PII is not redacted here
        (an id is kept verbatim or refused, never rewritten).
        """
        if self._screen is None:
            return
        from memvault.screening import PII_TYPES, PiiAction, ScreenPolicy

        allow_pii = ScreenPolicy(pii=dict.fromkeys(PII_TYPES, PiiAction.ALLOW))
        for value in values:
            self._raise_if_refused(
                scope, self._screen.check_field(value, field=field, policy=allow_pii), field
            )

    def _raise_if_refused(self, scope: Scope, result: ScreenResult, field: str = "text") -> None:
        """Log a refusal (principal, time, detector: never the value) and raise it."""
        if result.refusal_code is None:
            return
        detector = result.detector or result.refusal_code
        count_refusal(detector)
        self._record_refusal(scope, result.refusal_code, detector)
        message = f"refused by {detector}" if field == "text" else f"{field} refused by {detector}"
        raise ScreenRefused(result.refusal_code, detector, message)

    @timed_call("screen", "note")
    def screen_note(
        self,
        scope: Scope,
        *,
        text: str | None,
        source: str | None,
        topics: Sequence[str] | None,
        shared: bool,
        pseudonym: Pseudonym | None = None,
    ) -> ScreenedNote:
        """Screen every stored string of a write; the first refusal refuses the whole write.

        `None` leaves a field out (an update that does not change it); it comes back `None`
        (`()` for topics).
        """
        policy = self._policy_if_screening(scope)
        body = (
            self._text(scope, text, shared, pseudonym, policy) if text is not None else Screened("")
        )
        redacted = list(body.redacted_types)
        clean_source: str | None = None
        if source is not None:
            screened = self._field(scope, "source", source, pseudonym, policy)
            clean_source = screened.text
            redacted.extend(screened.redacted_types)
        clean_topics: list[str] = []
        for topic in topics or ():
            screened = self._field(scope, "topics", topic, pseudonym, policy)
            clean_topics.append(screened.text)
            redacted.extend(screened.redacted_types)
        return ScreenedNote(
            text=body.text,
            source=clean_source,
            topics=tuple(dict.fromkeys(clean_topics)),
            flags=body.flags,
            redacted_types=tuple(dict.fromkeys(redacted)),
        )

    def policy(self, tenant: str) -> ScreenPolicy | None:
        """The tenant's screen policy (None: the screen's defaults), cached per tenant."""
        return self.tenant_policy(tenant).screen

    def ttl_default(self, tenant: str, note_type: str) -> float | None:
        """Days a new note of `note_type` lives when its write names no `ttl_days` (None: ever).

        Read at write time only: a policy change applies to notes written after it.
        """
        return self.tenant_policy(tenant).ttl_for(note_type)

    def tenant_policy(self, tenant: str) -> TenantPolicy:
        """The tenant's whole stored policy, cached per tenant.

        `forget_policy` drops the entry when this process changes a policy; another process's
        change is seen within `policy_ttl` seconds (5 by default).
        """
        now = time.monotonic()
        with self._policies_lock:
            cached = self._policies.get(tenant)
        if cached is not None and now - cached[0] < self._policy_ttl:
            return cached[1]
        policy = self._load_policy(tenant)
        with self._policies_lock:
            self._policies[tenant] = (now, policy)
        return policy

    def forget_policy(self, tenant: str) -> None:
        """Drop the cached policy of `tenant` (after a change, or when the tenant is deleted)."""
        with self._policies_lock:
            self._policies.pop(tenant, None)

    def _load_policy(self, tenant: str) -> TenantPolicy:
        from memvault.screening import ScreenPolicy

        with self._db.session(tenant) as sess:
            raw = sess.execute(
                select(TenantRow.policy_json).where(TenantRow.tenant_id == tenant)
            ).scalar_one_or_none()
        if not raw or raw == "{}":
            return TenantPolicy()
        data = json.loads(raw)
        ttl = data.get("ttl_days") or {}
        return TenantPolicy(
            screen=ScreenPolicy(
                pii=data.get("pii", {}),
                allow_suspicious_shared=bool(data.get("allow_suspicious_shared", False)),
            ),
            ttl_days=tuple((kind, check_ttl(ttl.get(kind))) for kind in NOTE_TYPES),
            llm=data.get("llm") if data.get("llm") in ("off", "anthropic") else None,
            timezone=data.get("timezone") if isinstance(data.get("timezone"), str) else None,
            read_alerts=(
                json.dumps(data["read_alerts"])
                if isinstance(data.get("read_alerts"), dict)
                else None
            ),
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

    def _refusal_principal(self, scope: Scope) -> str:
        if self._tagger is None:
            return "unknown"
        return refusal_principal(self._tagger(scope.tenant), scope.user, scope.agent)

    def _record_refusal(self, scope: Scope, code: str, detector: str) -> None:
        with self._db.session(scope.tenant) as sess:
            sess.add(
                RefusalRow(
                    tenant_id=scope.tenant,
                    id=uuid7(),
                    ts=self._clock(),
                    principal=self._refusal_principal(scope),
                    code=code,
                    detector=detector[:64],
                )
            )
        if self.audit is not None:
            self.audit.record(
                scope.tenant,
                "system",
                "screen.refused",
                subject={"user_id": scope.user, "agent_id": scope.agent},
                detector=safe_name(detector),
                code=safe_name(code),
            )
