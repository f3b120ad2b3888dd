"""Import memories from mem0 (its `get_all` / export JSON) or from JSON lines, over REST.

Records are sent with the SDK's `add_many` (`POST /v1/memories/batch`), up to 256 per request
per target scope, and every record goes through the server's write screen like any other write:
a refused record is answered in its place and never stops the others. The import is idempotent
and resumable: each chunk's `Idempotency-Key` is derived from the keys of its records (target
scope, record id, a hash of its text: `idempotency_key`), so a rerun of the same file (or a run
resumed after an interruption) replays the first answers instead of writing again, and past the
server's 24 hours its exact-duplicate check returns the existing note. The report names records
by their index in the file and refusals by detector; it never holds a memory's text.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any

from memvault.client.errors import (
    ApiError,
    AuthenticationError,
    ForbiddenError,
    InvalidRequestError,
    MemvaultError,
    RateLimitedError,
    ScreenRefusedError,
    ServerError,
    TransportError,
    UnavailableError,
)
from memvault.client.import_records import (
    FORMATS,
    ImportFileError,
    ImportRecord,
    as_id,
    load,
    read_jsonl,
    read_mem0,
)
from memvault.client.import_report import ImportReport, Outcome
from memvault.client.models import Note
from memvault.client.sync import Client
from memvault.scope import SHARED_AGENT
from memvault.screening import id_credential

__all__ = [
    "FORMATS",
    "ImportFileError",
    "ImportRecord",
    "ImportReport",
    "Importer",
    "Outcome",
    "as_id",
    "idempotency_key",
    "load",
    "read_jsonl",
    "read_mem0",
]

CHUNK = 256
"""Records per `add_many` request (the batch route's most)."""
IN_FLIGHT = 2
"""Chunks sent at once: the server screens one while it embeds the other (its embedder runs
in a child process), which a lone request cannot overlap."""
FATAL = (
    AuthenticationError,
    ForbiddenError,
    TransportError,
    RateLimitedError,
    UnavailableError,
    ServerError,
)
"""Errors about the run, not a record (wrong key, server away): the run stops, the report of
what was done so far is still returned."""


def idempotency_key(record: ImportRecord, scope: str) -> str:
    """A stable key per (scope, record id, text): a rerun replays, an edited record is new."""
    text_hash = hashlib.sha256(record.text.encode("utf-8", "surrogatepass")).hexdigest()
    material = "\0".join(("memvault-import.v1", scope, record.source_id or "", text_hash))
    return "imp-" + hashlib.sha256(material.encode()).hexdigest()


# --- importing -----------------------------------------------------------------------------


class Importer:
    """Imports records over REST, either all into one agent key's scope (`api_key`) or each
    under its own user and agent (`admin_key`: agent keys are issued per scope for the run and
    revoked at its end). Missing ids fall back to `default_user` / `default_agent`."""

    def __init__(
        self,
        base_url: str | None = None,
        *,
        api_key: str | None = None,
        admin_key: str | None = None,
        default_user: str = "default",
        default_agent: str = "mem0",
        source_prefix: str = "mem0",
        client_factory: Callable[[str | None, str], Client] | None = None,
    ) -> None:
        if (api_key is None) == (admin_key is None):
            raise MemvaultError("give exactly one of api_key and admin_key")
        self._base_url = base_url
        self._api_key = api_key
        self._admin_key = admin_key
        self._default_user = default_user
        self._default_agent = default_agent
        self._source_prefix = source_prefix
        self._make = client_factory or (lambda url, key: Client(url, key))
        self._now = datetime.now(UTC)

    def run(
        self, records: list[ImportRecord], advance: Callable[[int], None] | None = None
    ) -> ImportReport:
        """Import every record; `advance(n)` is called after each `n` records (a progress
        bar): 1 for a record settled here, the size of a batch once it is answered.

        A bad record never stops the run: it gets its outcome in the report. Only an error
        about the run itself (`FATAL`: a wrong key, the server away) stops it; the report then
        says so in `stopped`, and holds every outcome up to there.
        """
        report = ImportReport(records=len(records))
        self._now = datetime.now(UTC)
        try:
            if self._api_key is not None:
                with self._make(self._base_url, self._api_key) as client:
                    scope = "key:" + _key_id(self._api_key)
                    self._send_all(report, [(r, (client, scope)) for r in records], advance)
            else:
                self._run_as_admin(records, report, advance)
        except FATAL as exc:
            report.stopped = f"{getattr(exc, 'code', type(exc).__name__)}: {exc.message}"
        report.outcomes.sort(key=lambda o: o.index)
        return report

    def _send_all(
        self,
        report: ImportReport,
        targets: list[tuple[ImportRecord, tuple[Client, str] | Outcome]],
        advance: Callable[[int], None] | None,
    ) -> None:
        """Records checked here get their outcome at once; the others go to their scope's
        client in chunks of `CHUNK` (`Client.add_many`), in file order within each scope."""
        pending: dict[str, tuple[Client, list[tuple[ImportRecord, dict[str, Any]]]]] = {}
        for record, target in targets:
            item = target if isinstance(target, Outcome) else self._item(record)
            if isinstance(item, Outcome):
                report.outcomes.append(_at(record.index, item))
                if advance:
                    advance(1)
            elif not isinstance(target, Outcome):
                client, scope = target
                pending.setdefault(scope, (client, []))[1].append((record, item))
        jobs = [
            (client, scope, group[start : start + CHUNK])
            for scope, (client, group) in pending.items()
            for start in range(0, len(group), CHUNK)
        ]
        in_flight: deque[tuple[Future[list[Outcome]], int]] = deque()
        error: BaseException | None = None
        with ThreadPoolExecutor(IN_FLIGHT, thread_name_prefix="memvault-import") as pool:
            for job in jobs:
                if error is not None:
                    break  # the run stops: no new chunk is sent
                if len(in_flight) >= IN_FLIGHT:
                    error = _collect(in_flight.popleft(), report, advance)
                    if error is not None:
                        break
                in_flight.append((pool.submit(self._chunk, *job), len(job[2])))
            while in_flight:  # what was sent is reported, even when the run stops
                failed = _collect(in_flight.popleft(), report, advance)
                error = error or failed
        if error is not None:
            raise error

    def _item(self, record: ImportRecord) -> dict[str, Any] | Outcome:
        """The note a record becomes (`add`'s fields), or its outcome without a request."""
        if record.problem is not None:
            return Outcome(record.index, "invalid", code="invalid_record", message=record.problem)
        if not record.text.strip():
            return Outcome(record.index, "skipped", message="no text")
        ttl_days = None
        if record.expires_at is not None:
            ttl_days = (record.expires_at - self._now).total_seconds() / 86_400
            if ttl_days <= 0:
                return Outcome(record.index, "expired")
        # The record's id is not stored: mem0's UUIDs hold digit runs the PII screen would
        # redact as phone numbers. It keys the idempotency instead.
        return {
            "text": record.text,
            "note_type": record.note_type,
            "topics": list(record.topics) or None,
            "source": record.source or self._source_prefix,
            "ttl_days": ttl_days,
        }

    def _chunk(
        self, client: Client, scope: str, chunk: list[tuple[ImportRecord, dict[str, Any]]]
    ) -> list[Outcome]:
        """One `add_many` request for a chunk of one scope's records: an outcome per record."""
        keys = "\0".join(idempotency_key(record, scope) for record, _ in chunk)
        key = "imp-" + hashlib.sha256(keys.encode()).hexdigest()
        try:
            results = client.add_many([item for _, item in chunk], idempotency_key=key)
        except FATAL:
            raise
        except ApiError as exc:  # e.g. 409 scope_erasing: these records, not the run
            return [
                Outcome(r.index, "failed", code=exc.code, message=exc.message) for r, _ in chunk
            ]
        return [self._outcome(r.index, res) for (r, _), res in zip(chunk, results, strict=True)]

    def _outcome(self, index: int, result: Note | MemvaultError) -> Outcome:
        if isinstance(result, ScreenRefusedError):
            return Outcome(index, "refused", code=result.code, detector=result.detector)
        if isinstance(result, InvalidRequestError):
            return Outcome(index, "invalid", code=result.code, message=result.message)
        if isinstance(result, MemvaultError):
            return Outcome(index, "failed", code=result.code, message=result.message)
        # A replayed chunk, or the exact-duplicate check, returns a note from an earlier run.
        existed = _before(result.created_at, self._now)
        return Outcome(index, "present" if existed else "added", note_id=result.id)

    def _run_as_admin(
        self,
        records: list[ImportRecord],
        report: ImportReport,
        advance: Callable[[int], None] | None,
    ) -> None:
        assert self._admin_key is not None
        clients: dict[tuple[str, str], tuple[Client, str] | Outcome] = {}
        with self._make(self._base_url, self._admin_key) as admin:
            try:
                targets = [
                    (record, self._admin_one(admin, clients, record, report)) for record in records
                ]
                self._send_all(report, targets, advance)
            finally:
                for entry in clients.values():
                    if isinstance(entry, Outcome):
                        continue
                    client, key_id = entry
                    client.close()
                    # The import's own temporary key; if this fails an admin can revoke it later.
                    with contextlib.suppress(MemvaultError):
                        admin.revoke_key(key_id)

    def _admin_one(
        self,
        admin: Client,
        clients: dict[tuple[str, str], tuple[Client, str] | Outcome],
        record: ImportRecord,
        report: ImportReport,
    ) -> tuple[Client, str] | Outcome:
        """Where one record goes under its own user and agent (its scope's client and name),
        or its outcome: its ids are checked, then a key is issued for its scope (once per
        scope; a refusal is remembered for the scope's other records)."""
        if record.problem is not None:
            return Outcome(record.index, "invalid", code="invalid_record", message=record.problem)
        for name, value in (("user_id", record.user_id), ("agent_id", record.agent_id)):
            detector = id_credential(value) if value else None
            if detector is not None:  # checked before the rewrite: `ghp_…` would hide as `ghp-…`
                return Outcome(
                    record.index,
                    "refused",
                    code="credential_refused",
                    detector=detector,
                    message=f"{name} has the form of a credential",
                )
        user, user_changed = as_id(record.user_id, self._default_user)
        agent, agent_changed = as_id(record.agent_id, self._default_agent)
        if agent == SHARED_AGENT:
            return Outcome(
                record.index,
                "invalid",
                code="reserved_id",
                message=f"agent_id '{SHARED_AGENT}' is reserved for the shared scope",
            )
        report.ids_rewritten += int(user_changed or agent_changed)
        entry = clients.get((user, agent))
        if entry is None:
            try:
                issued = admin.issue_key(user, agent)
            except ScreenRefusedError as exc:
                entry = Outcome(0, "refused", code=exc.code, detector=exc.detector)
            except InvalidRequestError as exc:
                entry = Outcome(0, "invalid", code=exc.code, message=exc.message)
            else:
                entry = (self._make(self._base_url, issued.api_key), issued.key_id)
            clients[(user, agent)] = entry
        if isinstance(entry, Outcome):
            return _at(record.index, entry)
        return entry[0], f"scope:{user}/{agent}"


def _collect(
    entry: tuple[Future[list[Outcome]], int],
    report: ImportReport,
    advance: Callable[[int], None] | None,
) -> BaseException | None:
    """Wait for one sent chunk: its outcomes join the report, or its error is returned."""
    future, size = entry
    try:
        report.outcomes.extend(future.result())
    except FATAL as exc:
        return exc
    if advance:
        advance(size)
    return None


def _at(index: int, outcome: Outcome) -> Outcome:
    """`outcome` for the record at `index`."""
    return Outcome(index, outcome.status, outcome.code, outcome.detector, outcome.message)


def _before(created_at: str, start: datetime) -> bool:
    """The exact-duplicate check returned a note written before this run began."""
    try:
        created = datetime.fromisoformat(created_at.replace("Z", "+00:00"))
    except ValueError:
        return False
    return created < start


def _key_id(api_key: str) -> str:
    """The key id of `mvk_<tenant>.<key id>.<secret>` (never the secret), else a hash."""
    parts = api_key.split(".")
    if len(parts) == 3 and parts[1]:
        return parts[0] + "." + parts[1]
    return hashlib.sha256(api_key.encode()).hexdigest()[:16]
