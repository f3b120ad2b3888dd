"""The per-tenant, hash-chained audit log, in the DESIGN "Audit event" format.

An event is `{"seq", "tenant_id", "at", "actor", "action", "subject", "details", "prev", "hash"}`:
`seq` counts 1, 2, … per tenant with no gap, `prev` is the previous event's `hash` (64 zeros for
seq 1) and `hash` is SHA-256 of the canonical JSON of the event without `hash`. Events carry ids,
counts and detector names, never text; a subject's user id is stored as a keyed pseudonym (the
tenant's index key: `tag("user:" + user_id)`), and so are note ids (`tag("note:" + id)`), so no
clear user id or note id stays after an erase.

Appends are serialised per tenant: one batch at a time in this process (concurrent events of a
tenant share one transaction, `Batcher`), `pg_advisory_xact_lock` on PostgreSQL (across
processes), and a retry when another process took the same `seq` first (the primary key refuses
the second). Each event is one INSERT guarded by its predecessor, after the head this process
last wrote (read again only when the guard finds it stale). Canonical JSON, the chain hash and
the time stamps are `memvault.canonical` (the one copy, which the offline verifier in compliance
uses too); the detail rules are `audit_format`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Integer, Table, bindparam, exists, func, insert, literal, select, text

from memvault.audit.format import SAFE_STRING, check_detail, row_to_event
from memvault.batcher import Batcher
from memvault.canonical import GENESIS, event_hash
from memvault.canonical import canonical_json as canonical
from memvault.canonical import rfc3339 as utc
from memvault.errors import InvalidRequest, VaultError
from memvault.keyring import Keyring
from memvault.observability import count_audit_batch
from memvault.scope import is_valid_id
from memvault.store.database import Database
from memvault.store.driver_sql import DriverConnection, DriverStatement
from memvault.store.models import ApiKeyRow, AuditEventRow

SUBJECT_KEYS = ("user_id", "agent_id", "key_id", "note_id", "target_id", "erasure_id")
"""Keyword arguments of `record` with these names are ids: they go to `subject`."""
PSEUDONYMOUS = {"user_id": "user:", "note_id": "note:", "target_id": "note:"}
"""Subject fields stored as keyed pseudonyms (tag prefix per kind), never in clear: an erased
user's id and its notes' ids must be in no file after the erase."""
MAX_ATTEMPTS = 50
BURST_WINDOW_SECONDS = 60.0
"""401/403 refusals of a tenant are summed over this window into one event."""
BATCH = 500
MAX_BATCH_EVENTS = 64
"""Concurrent events of a tenant written in one transaction at most."""
_LOCK_CLASS = 0x6D76_6175  # pg_advisory_xact_lock(class, hashtext(tenant)): one appender per tenant
_PG_LOCK = text("SELECT pg_advisory_xact_lock(:c, hashtext(:t))")
_EVENTS: Table = AuditEventRow.__table__  # type: ignore[assignment]
_COLUMNS = ("tenant_id", "seq", "at", "actor", "action", "subject", "details", "prev", "hash")
_VALUES = select(*(bindparam(c, type_=_EVENTS.c[c].type) for c in _COLUMNS))
_ANY_EVENT = select(literal(1)).where(_EVENTS.c.tenant_id == bindparam("tenant_id"))
_APPEND_FIRST = (
    insert(_EVENTS)
    .from_select(list(_COLUMNS), _VALUES.where(~exists(_ANY_EVENT)))
    .returning(_EVENTS.c.seq)
)
_APPEND_AFTER = (
    insert(_EVENTS)
    .from_select(
        list(_COLUMNS),
        _VALUES.where(
            exists(
                _ANY_EVENT.where(
                    _EVENTS.c.seq == bindparam("prev_seq", type_=Integer),
                    _EVENTS.c.hash == bindparam("prev"),
                )
            )
        ),
    )
    .returning(_EVENTS.c.seq)
)
"""Seq 1 only when the tenant has no event; seq n only right after event n-1 with hash `prev`.
RETURNING says whether the row went in (psycopg reports no rowcount for INSERT ... SELECT)."""
_HEAD = (
    select(_EVENTS.c.seq, _EVENTS.c.hash)
    .where(_EVENTS.c.tenant_id == bindparam("tenant_id"))
    .order_by(_EVENTS.c.seq.desc())
    .limit(1)
)
# Every event of every add goes through these: run on the driver's cursor (`driver_sql`).
_DRIVER_LOCK = DriverStatement(_PG_LOCK, "select")
_DRIVER_HEAD = DriverStatement(_HEAD, "select")
_DRIVER_APPEND_FIRST = DriverStatement(_APPEND_FIRST, "insert")
_DRIVER_APPEND_AFTER = DriverStatement(_APPEND_AFTER, "insert")


_Pending = tuple[dict[str, str], dict[str, "str | None"], dict[str, Any]]
"""An event waiting for its transaction: its row's text columns, its subject and details."""


def _pending(
    tenant: str, actor: str, action: str, subject: dict[str, str | None], details: dict[str, Any]
) -> _Pending:
    """An event for the batcher: its row's text columns (canonical JSON), subject, details."""
    row = {
        "tenant_id": tenant,
        "actor": actor,
        "action": action,
        "subject": canonical(subject).decode(),
        "details": canonical(details).decode(),
    }
    return (row, subject, details)


class _StaleHead(Exception):
    """The head this process knew is not the tenant's last event (rolls the batch back)."""


@dataclass
class _Burst:
    first: float
    last: float
    count: int = 0
    keys: set[str] = field(default_factory=set)


def _ignore(*_args: object) -> None:
    return None


class AuditLog:
    """Appends events chained per tenant; reads them back in the export format."""

    def __init__(
        self,
        db: Database,
        clock: Callable[[], float],
        keyring: Keyring,
        *,
        burst_window: float = BURST_WINDOW_SECONDS,
    ) -> None:
        self._db = db
        self._clock = clock
        self._keyring = keyring
        self._burst_window = burst_window
        self._batchers: dict[str, Batcher] = {}  # one per tenant: its appends, one at a time
        self._heads: dict[str, tuple[int, str]] = {}  # (seq, hash) this process last appended
        self._batchers_guard = threading.Lock()
        self._bursts: dict[tuple[str, str], _Burst] = {}
        self._bursts_guard = threading.Lock()
        self.on_appended: Callable[[str, int], None] | None = None
        """Told `(tenant, seq)` after each committed append (the checkpointer marks the tenant)."""
        self.on_recorded: Callable[[str, str, str, Mapping[str, Any], Mapping[str, Any]], None]
        self.on_recorded = _ignore
        """Told `(tenant, actor, action, subject, details)` after an event committed, with the
        subject's ids as given (before pseudonyms): the webhook outbox. Must not raise."""

    # writing -----------------------------------------------------------------------------------
    def record(
        self,
        tenant: str,
        actor: str,
        action: str,
        *,
        subject: Mapping[str, str | None] | None = None,
        **details: Any,
    ) -> dict[str, Any]:
        """Append one event and return it. `details` hold counts, flags, names and ids only.

        Keyword arguments named like ids (`user_id`, `agent_id`, `key_id`, `note_id`, …) join
        `subject`; a subject `user_id` is replaced by its keyed pseudonym.
        """
        merged: dict[str, str | None] = dict(subject or {})
        for name in SUBJECT_KEYS:
            if name in details:
                merged[name] = details.pop(name)
        clean_subject = self._subject(tenant, merged)
        for name, value in details.items():
            check_detail(name, value)  # `_append` writes them canonically, before any SQL
        if not SAFE_STRING.fullmatch(actor) or not SAFE_STRING.fullmatch(action):
            raise InvalidRequest("audit actor and action must be ids or names")
        event = self._append(tenant, actor[:64], action[:64], clean_subject, details)
        self.on_recorded(tenant, actor, action, merged, details)
        return event

    def record_many(
        self,
        tenant: str,
        actor: str,
        action: str,
        events: Sequence[tuple[Mapping[str, str | None], Mapping[str, Any]]],
    ) -> list[dict[str, Any]]:
        """Append one event per `(subject, details)`, in order, in one transaction (a batch
        write's events: the same events as that many `record` calls, without a transaction
        each). Checked like `record` before anything is written."""
        if not SAFE_STRING.fullmatch(actor) or not SAFE_STRING.fullmatch(action):
            raise InvalidRequest("audit actor and action must be ids or names")
        pending: list[_Pending] = []
        for subject, details in events:
            for name, value in details.items():
                check_detail(name, value)
            clean = self._subject(tenant, subject)
            pending.append(_pending(tenant, actor[:64], action[:64], clean, dict(details)))
        if not pending:
            return []
        appended: list[dict[str, Any]] = self._batcher(tenant).submit(pending)
        for subject, details in events:
            self.on_recorded(tenant, actor, action, subject, details)
        return appended

    def _subject(self, tenant: str, subject: Mapping[str, str | None]) -> dict[str, str | None]:
        out: dict[str, str | None] = {}
        for name, value in subject.items():
            if value is None:
                out[name] = None
                continue
            if not isinstance(value, str) or not is_valid_id(value):
                raise InvalidRequest(f"audit subject {name} must be an id")
            if name in PSEUDONYMOUS:
                value = self._keyring.index_key(tenant).tag(PSEUDONYMOUS[name] + value)
            out[name] = value
        return out

    def _append(
        self,
        tenant: str,
        actor: str,
        action: str,
        subject: dict[str, str | None],
        details: dict[str, Any],
    ) -> dict[str, Any]:
        """Append one event, in one transaction with the tenant's concurrent events, if any.

        Concurrent appends of a tenant coalesce (`Batcher`, no window: a lone event is written
        at once): the events that arrive while one transaction runs go into the next one, in
        arrival order, and each caller returns once its transaction has committed.
        """
        event: dict[str, Any] = self._batcher(tenant).submit(
            _pending(tenant, actor, action, subject, details)
        )
        return event

    def _append_batch(self, tenant: str, pending: Sequence[_Pending]) -> list[dict[str, Any]]:
        """Guarded INSERTs after the head this process last wrote (no head read per event).

        Each insert names its predecessor (`seq - 1` with hash `prev`, or no event at all for
        seq 1) and stores nothing when that is not the tenant's last event. Then the whole
        transaction rolls back: a stale head (another process appended, or the chain was
        deleted) costs a re-read and a retry of the batch, never a gap; the primary key refuses
        a second event with the same seq.
        """
        dbapi = self._db.engine.dialect.loaded_dbapi
        for attempt in range(MAX_ATTEMPTS):
            head = self._heads.pop(tenant, None)
            try:
                with self._db.driver_transaction(tenant) as conn:
                    if self._db.is_postgres:
                        _DRIVER_LOCK.rows(conn, {"c": _LOCK_CLASS, "t": tenant})
                    if head is None:
                        head = self._read_head(conn, tenant)
                    events = []
                    for item in pending:
                        event = self._insert(conn, head, item)
                        head = (event["seq"], event["hash"])
                        events.append(event)
                self._heads[tenant] = head
                if self.on_appended is not None:
                    self.on_appended(tenant, head[0])
                return events
            except _StaleHead:
                continue  # read the head again
            except (dbapi.IntegrityError, dbapi.OperationalError):
                # Another process appended the same seq first (or held SQLite's lock).
                if attempt == MAX_ATTEMPTS - 1:
                    raise
                time.sleep(min(0.2, 0.002 * (attempt + 1)))
        raise VaultError("audit append failed")

    def _insert(
        self, conn: DriverConnection, head: tuple[int, str], item: _Pending
    ) -> dict[str, Any]:
        """Insert one event right after `head`; `_StaleHead` if `head` is not the last event."""
        row, subject, details = item
        event: dict[str, Any] = {
            "seq": head[0] + 1,
            "tenant_id": row["tenant_id"],
            "at": utc(self._clock()),
            "actor": row["actor"],
            "action": row["action"],
            "subject": subject,
            "details": details,
            "prev": head[1],
        }
        event["hash"] = event_hash(event)
        params = {
            **row,
            "seq": event["seq"],
            "at": event["at"],
            "prev_seq": head[0],
            "prev": head[1],
            "hash": event["hash"],
        }
        stmt = _DRIVER_APPEND_FIRST if head[0] == 0 else _DRIVER_APPEND_AFTER
        if not stmt.rows(conn, params):
            raise _StaleHead
        return event

    def _append_jobs(
        self, tenant: str, jobs: Sequence[_Pending | list[_Pending]]
    ) -> list[dict[str, Any] | list[dict[str, Any]]]:
        """The batcher's runner: a job is one event (`record`) or a list of them
        (`record_many`); all are appended in one transaction, in order."""
        flat = [p for job in jobs for p in (job if isinstance(job, list) else [job])]
        events = iter(self._append_batch(tenant, flat))
        return [
            [next(events) for _ in job] if isinstance(job, list) else next(events) for job in jobs
        ]

    @staticmethod
    def _read_head(conn: DriverConnection, tenant: str) -> tuple[int, str]:
        found = _DRIVER_HEAD.rows(conn, {"tenant_id": tenant})
        return (0, GENESIS) if not found else (int(found[0][0]), str(found[0][1]))

    def _batcher(self, tenant: str) -> Batcher:
        with self._batchers_guard:
            batcher = self._batchers.get(tenant)
            if batcher is None:
                batcher = self._batchers[tenant] = Batcher(
                    lambda pending: self._append_jobs(tenant, pending),
                    max_batch=MAX_BATCH_EVENTS,
                    observe=count_audit_batch,
                )
            return batcher

    # security bursts ---------------------------------------------------------------------------
    def note_denied(self, tenant: str, kind: str, key_id: str) -> None:
        """Count one refused request (`kind`: "unauthorized" or "forbidden") of a known key.

        A tenant's refusals of one kind are summed over a window (`BURST_WINDOW_SECONDS` from the
        first one) into ONE event, written when the window is over (at the next refusal or the
        next `flush_bursts`). A key id that is not a key of `tenant` is ignored (metrics only).
        """
        if (
            not is_valid_id(tenant)
            or not is_valid_id(key_id)
            or not self._key_known(tenant, key_id)
        ):
            return
        now = self._clock()
        with self._bursts_guard:
            burst = self._bursts.get((tenant, kind))
            if burst is None:
                burst = self._bursts[(tenant, kind)] = _Burst(now, now)
            burst.count += 1
            burst.last = now
            if len(burst.keys) < 100:
                burst.keys.add(key_id)
        self.flush_bursts()

    def flush_bursts(self, *, force: bool = False) -> int:
        """Write one event per burst whose window is over (every burst with `force`)."""
        now = self._clock()
        with self._bursts_guard:
            due = [
                (key, burst)
                for key, burst in self._bursts.items()
                if force or now >= burst.first + self._burst_window
            ]
            for key, _ in due:
                del self._bursts[key]
        for (tenant, kind), burst in due:
            keys = sorted(burst.keys)
            self.record(
                tenant,
                "system",
                f"security.{kind}",
                subject={"key_id": keys[0]} if len(keys) == 1 else {},
                count=burst.count,
                distinct_keys=len(keys),
                first_at=utc(burst.first),
                last_at=utc(burst.last),
                window_seconds=int(self._burst_window),
            )
        return len(due)

    def _key_known(self, tenant: str, key_id: str) -> bool:
        with self._db.session(tenant) as sess:
            return (
                sess.execute(
                    select(ApiKeyRow.key_id).where(
                        ApiKeyRow.tenant_id == tenant, ApiKeyRow.key_id == key_id
                    )
                ).first()
                is not None
            )

    # reading -----------------------------------------------------------------------------------
    def head(self, tenant: str) -> tuple[int, str]:
        """`(seq, hash)` of the tenant's last event, `(0, 64 zeros)` when it has none."""
        with self._db.driver_transaction(tenant) as conn:
            return self._read_head(conn, tenant)

    def events(
        self, tenant: str, since_seq: int = 0, until_seq: int | None = None
    ) -> Iterator[dict[str, Any]]:
        """Events with `since_seq < seq <= until_seq`, oldest first, read in batches (no
        transaction stays open between batches, so a long export does not block writers)."""
        after = since_seq
        while True:
            query = (
                select(AuditEventRow)
                .where(AuditEventRow.tenant_id == tenant, AuditEventRow.seq > after)
                .order_by(AuditEventRow.seq)
                .limit(BATCH)
            )
            if until_seq is not None:
                query = query.where(AuditEventRow.seq <= until_seq)
            with self._db.session(tenant) as sess:
                batch = [row_to_event(row) for row in sess.execute(query).scalars()]
            yield from batch
            if len(batch) < BATCH:
                return
            after = batch[-1]["seq"]

    def verify(self, tenant: str) -> bool:
        """True when seqs run 1, 2, … and every hash matches its content and predecessor."""
        prev, expected_seq = GENESIS, 1
        for event in self.events(tenant):
            if event["seq"] != expected_seq or event["prev"] != prev:
                return False
            if event["hash"] != event_hash(event):
                return False
            prev, expected_seq = event["hash"], expected_seq + 1
        return True

    def count(self, tenant: str) -> int:
        """How many events the tenant has."""
        with self._db.session(tenant) as sess:
            return int(
                sess.execute(
                    select(func.count())
                    .select_from(AuditEventRow)
                    .where(AuditEventRow.tenant_id == tenant)
                ).scalar_one()
            )
