"""Read alerts: unusual memory reads, counted per key in memory, persisted only when one fires.

A tenant's policy `read_alerts` sets each rule's threshold (null turns a rule off):
- `records_per_key_per_minute`: records one key was returned within a clock minute;
- `records_per_session`: records returned in one session (`X-Session-Id`) of a key;
- `new_topics_per_session`: distinct topics and note types read in one session that the key
  never read in its earlier sessions (the key's usual mix; counted once it has a history);
- `untrusted_after_read_seconds`: a session marked untrusted this many seconds or less after
  one of its reads (`note_session_marked`, called by the untrusted-session route).
`on_alert: "suspend_key"` also suspends the key (401 `key_suspended` until resumed).

`observe` is on every read: a lock and a few dict operations, never SQL. The policy comes from
a cache that the deliverer's thread refreshes (`refresh`), so a read waits on no database
either. A crossing fires once per key and minute, or per session and rule: one row in
`read_alerts`, an audit event `read.alert` (key id, rule, counts, note pseudonyms), the
Prometheus counter `memvault_read_alerts_total`, and a `read.alert` webhook event (note ids).
Topics are counted in memory only and never leave it.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from memvault.audit.log import AuditLog
from memvault.canonical import rfc3339
from memvault.ids import uuid7
from memvault.observability import count_read_alert
from memvault.store.database import Database
from memvault.store.models import ReadAlertRow
from memvault.webhooks.hub import Webhooks, newest_rows

log = logging.getLogger(__name__)

DEFAULTS: dict[str, int | None] = {
    "records_per_key_per_minute": 500,
    "records_per_session": 200,
    "new_topics_per_session": 12,
    "untrusted_after_read_seconds": 60,
}
RULES = tuple(DEFAULTS)
MAX_SESSIONS = 10_000
MAX_NOTE_IDS = 50
MAX_USUAL_TOPICS = 512


@dataclass(frozen=True, slots=True)
class AlertPolicy:
    """One tenant's thresholds (None: the rule is off) and what a firing alert does."""

    thresholds: Mapping[str, int | None] = field(default_factory=lambda: dict(DEFAULTS))
    suspend_key: bool = False

    @classmethod
    def parse(cls, raw: Mapping[str, Any] | None) -> AlertPolicy:
        """The policy of a stored `read_alerts` object (defaults for what it leaves out)."""
        raw = raw or {}
        thresholds = {rule: raw.get(rule, default) for rule, default in DEFAULTS.items()}
        return cls(thresholds, raw.get("on_alert") == "suspend_key")


@dataclass
class _Session:
    records: int = 0
    topics: set[str] = field(default_factory=set)
    note_ids: deque[str] = field(default_factory=lambda: deque(maxlen=MAX_NOTE_IDS))
    last_read: float = 0.0
    fired: set[str] = field(default_factory=set)


@dataclass
class _Key:
    minute: int = -1
    records: int = 0
    fired_minute: int = -1
    note_ids: deque[str] = field(default_factory=lambda: deque(maxlen=MAX_NOTE_IDS))
    usual: set[str] = field(default_factory=set)
    sessions_seen: int = 0


class ReadAlerts:
    """In-memory read counters of every key served by this process, and the alerts they fire."""

    def __init__(
        self,
        db: Database,
        audit: AuditLog,
        hooks: Webhooks,
        policy_of: Callable[[str], Mapping[str, Any] | None],
        suspend: Callable[[str, str], None],
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._db = db
        self._audit = audit
        self._hooks = hooks
        self._policy_of = policy_of
        self._suspend = suspend
        self._clock = clock
        self._lock = threading.Lock()
        self._policies: dict[str, AlertPolicy] = {}
        self._keys: dict[tuple[str, str], _Key] = {}
        self._sessions: OrderedDict[tuple[str, str, str], _Session] = OrderedDict()

    # policy ------------------------------------------------------------------------------------
    def policy(self, tenant: str) -> AlertPolicy:
        """The tenant's policy from the cache (loaded once on a tenant's first read here)."""
        found = self._policies.get(tenant)
        if found is None:
            found = self._load(tenant)
        return found

    def _load(self, tenant: str) -> AlertPolicy:
        try:
            policy = AlertPolicy.parse(self._policy_of(tenant))
        except Exception as exc:
            log.error("read alert policy not loaded (%s)", type(exc).__name__)
            policy = AlertPolicy()
        self._policies[tenant] = policy
        return policy

    def refresh(self) -> None:
        """Reload every cached tenant's policy (the deliverer's thread, every pass)."""
        for tenant in list(self._policies):
            self._load(tenant)

    def forget(self, tenant: str) -> None:
        """Reload `tenant`'s policy now (after this process changed it)."""
        self._load(tenant)

    # counting ----------------------------------------------------------------------------------
    def observe(
        self,
        tenant: str,
        key_id: str,
        session_id: str | None,
        note_ids: Sequence[str],
        topics: Iterable[str] = (),
    ) -> None:
        """Count one read that returned `note_ids` (with their topics); fire what it crosses."""
        if not note_ids:
            return
        policy = self.policy(tenant)
        limits = policy.thresholds
        now = self._clock()
        fire: list[tuple[str, int, int, list[str]]] = []
        with self._lock:
            key = self._keys.get((tenant, key_id))
            if key is None:
                key = self._keys[(tenant, key_id)] = _Key()
            minute = int(now // 60)
            if key.minute != minute:
                key.minute, key.records = minute, 0
            key.records += len(note_ids)
            key.note_ids.extend(note_ids)
            limit = limits.get("records_per_key_per_minute")
            if limit is not None and key.records >= limit and key.fired_minute != minute:
                key.fired_minute = minute
                fire.append(("records_per_key_per_minute", key.records, limit, list(key.note_ids)))
            if session_id is not None:
                fire.extend(self._session_read(tenant, key_id, session_id, key, note_ids, topics))
                self._sessions[(tenant, key_id, session_id)].last_read = now
        for rule, count, limit, ids in fire:
            self._fire(tenant, key_id, session_id, rule, count, limit, ids, policy)

    def _session_read(
        self,
        tenant: str,
        key_id: str,
        session_id: str,
        key: _Key,
        note_ids: Sequence[str],
        topics: Iterable[str],
    ) -> list[tuple[str, int, int, list[str]]]:
        limits = self.policy(tenant).thresholds
        slot = (tenant, key_id, session_id)
        session = self._sessions.get(slot)
        if session is None:
            session = self._sessions[slot] = _Session()
            key.sessions_seen += 1
            self._evict(key)
        else:
            self._sessions.move_to_end(slot)
        session.records += len(note_ids)
        session.note_ids.extend(note_ids)
        session.topics.update(topics)
        fire = []
        limit = limits.get("records_per_session")
        if (
            limit is not None
            and session.records >= limit
            and "records_per_session" not in session.fired
        ):
            session.fired.add("records_per_session")
            fire.append(("records_per_session", session.records, limit, list(session.note_ids)))
        limit = limits.get("new_topics_per_session")
        if limit is not None and key.sessions_seen > 1:
            new = len(session.topics - key.usual)
            if new >= limit and "new_topics_per_session" not in session.fired:
                session.fired.add("new_topics_per_session")
                fire.append(("new_topics_per_session", new, limit, list(session.note_ids)))
        return fire

    def _evict(self, key: _Key) -> None:
        """Bound the sessions kept; an evicted session's topics join its key's usual mix."""
        while len(self._sessions) > MAX_SESSIONS:
            (tenant, key_id, _), old = self._sessions.popitem(last=False)
            owner = self._keys.get((tenant, key_id))
            if owner is not None and len(owner.usual) < MAX_USUAL_TOPICS:
                owner.usual.update(old.topics)

    def end_session(self, tenant: str, key_id: str, session_id: str) -> None:
        """Fold a finished session's topics into its key's usual mix and forget it."""
        with self._lock:
            session = self._sessions.pop((tenant, key_id, session_id), None)
            key = self._keys.get((tenant, key_id))
            if session is not None and key is not None and len(key.usual) < MAX_USUAL_TOPICS:
                key.usual.update(session.topics)

    def note_session_marked(self, tenant: str, key_id: str, session_id: str) -> bool:
        """The runtime marked `session_id` untrusted: fire `untrusted_after_read_seconds` when
        the session read memory that recently. True when an alert fired."""
        policy = self.policy(tenant)
        limit = policy.thresholds.get("untrusted_after_read_seconds")
        now = self._clock()
        with self._lock:
            session = self._sessions.get((tenant, key_id, session_id))
            if (
                limit is None
                or session is None
                or session.records == 0
                or now - session.last_read > limit
                or "untrusted_after_read_seconds" in session.fired
            ):
                return False
            session.fired.add("untrusted_after_read_seconds")
            ids, count, elapsed = (
                list(session.note_ids),
                session.records,
                int(now - session.last_read),
            )
        self._fire(
            tenant,
            key_id,
            session_id,
            "untrusted_after_read_seconds",
            count,
            limit,
            ids,
            policy,
            elapsed_seconds=elapsed,
        )
        return True

    # firing ------------------------------------------------------------------------------------
    def _fire(
        self,
        tenant: str,
        key_id: str,
        session_id: str | None,
        rule: str,
        count: int,
        threshold: int,
        note_ids: list[str],
        policy: AlertPolicy,
        **extra: int,
    ) -> None:
        alert_id = uuid7()
        now = self._clock()
        suspended = policy.suspend_key
        details: dict[str, Any] = {
            "count": count,
            "threshold": threshold,
            "in_session": session_id is not None,
            "key_suspended": suspended,
            **extra,
        }
        try:
            count_read_alert(rule)
            with self._db.session(tenant) as sess:
                sess.add(
                    ReadAlertRow(
                        tenant_id=tenant,
                        alert_id=alert_id,
                        at=now,
                        key_id=key_id,
                        rule=rule,
                        details=json.dumps({**details, "note_ids": note_ids}),
                    )
                )
            if suspended:
                self._suspend(tenant, key_id)
            tag = self._hooks.pseudonym
            self._audit.record(
                tenant,
                "system",
                "read.alert",
                key_id=key_id,
                rule=rule,
                alert_id=alert_id,
                notes=[tag(tenant, "note", n) for n in note_ids],
                **details,
            )
            self._hooks.emit(
                tenant,
                "read.alert",
                {
                    "alert_id": alert_id,
                    "key_id": key_id,
                    "rule": rule,
                    "note_ids": note_ids,
                    **details,
                },
            )
        except Exception as exc:  # a lost alert is logged; the read it reports stands
            log.error("read alert %s not recorded (%s)", rule, type(exc).__name__)

    def list(self, tenant: str, limit: int = 100) -> list[dict[str, Any]]:
        """The tenant's most recent alerts, newest first."""
        return [
            {
                "id": r.alert_id,
                "at": rfc3339(r.at),
                "key_id": r.key_id,
                "rule": r.rule,
                **json.loads(r.details),
            }
            for r in newest_rows(self._db, tenant, ReadAlertRow.at, limit)
        ]
