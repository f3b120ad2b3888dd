"""Import memories from mem0 (its `get_all` / export JSON) or from JSON lines, over REST.

Every record goes through the server's write screen like any other write. The import is
idempotent and resumable: each record's `Idempotency-Key` is derived from the target scope, the
record's id and a hash of its text, so a rerun (or a run resumed after an interruption) replays
the first answers instead of writing again, and past the server's 24 hours its exact-duplicate
check returns the existing note. The report names records by their index in the file and
refusals by detector; it never holds a memory's text.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memvault.api.schemas import ID_PATTERN
from memvault.client import _calls
from memvault.client.errors import (
    AuthenticationError,
    ForbiddenError,
    InvalidRequestError,
    MemvaultError,
    ScreenRefusedError,
    TransportError,
)
from memvault.client.sync import Client

FORMATS = ("mem0", "jsonl")
MAX_TOPICS = 5
MAX_TOPIC_CHARS = 64
_ID = re.compile(ID_PATTERN)
_NOT_ID_CHAR = re.compile(r"[^A-Za-z0-9._@-]")
REPLAYED = "idempotent-replayed"


class ImportFileError(MemvaultError):
    """The input file is not in the announced format (names the record, never its content)."""

    code = "import_file_invalid"


@dataclass(frozen=True, slots=True)
class ImportRecord:
    """One memory to import. `index` is its 1-based position in the file."""

    index: int
    text: str
    source_id: str | None = None
    user_id: str | None = None
    agent_id: str | None = None
    topics: tuple[str, ...] = ()
    source: str | None = None
    note_type: str = "memory"
    expires_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class Outcome:
    """What happened to one record: `added`, `present` (imported before), `refused` (by the
    write screen: `code` and `detector`), `invalid` (`code` and a message naming the field),
    `expired` (its mem0 expiration date has passed) or `skipped` (no text)."""

    index: int
    status: str
    code: str | None = None
    detector: str | None = None
    message: str | None = None
    note_id: str | None = None


@dataclass
class ImportReport:
    """Counts and per-record outcomes of one run."""

    outcomes: list[Outcome] = field(default_factory=list)
    ids_rewritten: int = 0

    def count(self, status: str) -> int:
        return sum(1 for o in self.outcomes if o.status == status)

    @property
    def refused(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.status == "refused"]

    def as_dict(self) -> dict[str, Any]:
        statuses = ("added", "present", "refused", "invalid", "expired", "skipped")
        return {
            "records": len(self.outcomes),
            **{status: self.count(status) for status in statuses},
            "ids_rewritten": self.ids_rewritten,
            "problems": [
                {k: v for k, v in _fields(o).items() if v is not None and k != "note_id"}
                for o in self.outcomes
                if o.status in ("refused", "invalid", "expired", "skipped")
            ],
        }

    def lines(self) -> list[str]:
        """The human report: counts, then one line per record not imported."""
        d = self.as_dict()
        out = [
            f"{d['records']} records: {d['added']} added, {d['present']} already present, "
            f"{d['refused']} refused, {d['invalid']} invalid, {d['expired']} expired, "
            f"{d['skipped']} skipped"
        ]
        if self.ids_rewritten:
            out.append(f"records whose user or agent id was rewritten: {self.ids_rewritten}")
        for o in self.outcomes:
            if o.status == "refused":
                out.append(f"record {o.index}: refused ({o.code}, detector {o.detector})")
            elif o.status == "invalid":
                out.append(f"record {o.index}: invalid ({o.code}: {o.message})")
            elif o.status in ("expired", "skipped"):
                out.append(f"record {o.index}: {o.status}")
        return out


def _fields(outcome: Outcome) -> dict[str, Any]:
    return {name: getattr(outcome, name) for name in Outcome.__slots__}


# --- reading -------------------------------------------------------------------------------


def load(path: Path, fmt: str) -> list[ImportRecord]:
    """Read a mem0 export (`fmt="mem0"`) or a JSON lines file (`fmt="jsonl"`)."""
    raw = path.read_text(encoding="utf-8")
    if fmt == "mem0":
        try:
            data = json.loads(raw)
        except ValueError:
            raise ImportFileError("the file is not JSON") from None
        return read_mem0(data)
    if fmt == "jsonl":
        return read_jsonl(raw.splitlines())
    raise ImportFileError(f"unknown format (use one of: {', '.join(FORMATS)})")


def read_mem0(data: Any) -> list[ImportRecord]:
    """mem0's `Memory.get_all()` / `search()` output `{"results": [{"id", "memory", "hash",
    "metadata", "created_at", "updated_at", "user_id", "agent_id", "run_id", ...}]}`, a bare
    list of such items (`MemoryClient.get_all`), or `{"memories": [...]}`."""
    items = data.get("results", data.get("memories")) if isinstance(data, dict) else data
    if not isinstance(items, list):
        raise ImportFileError('expected {"results": [...]} or a list of memories')
    records = []
    for index, item in enumerate(items, start=1):
        if not isinstance(item, dict):
            raise ImportFileError(f"record {index} is not an object")
        text = item.get("memory", item.get("data", item.get("text")))
        metadata = item.get("metadata")
        meta: dict[str, Any] = metadata if isinstance(metadata, dict) else {}
        categories = (
            item.get("categories")
            or meta.get("categories")
            or meta.get("topics")
            or meta.get("category")
        )
        records.append(
            ImportRecord(
                index=index,
                text=text if isinstance(text, str) else "",
                source_id=_str(item.get("id")),
                user_id=_str(item.get("user_id")),
                agent_id=_str(item.get("agent_id")),
                topics=_topics(categories),
                note_type="memory",
                expires_at=_date(item.get("expiration_date")),
            )
        )
    return records


def read_jsonl(lines: Iterable[str]) -> list[ImportRecord]:
    """One JSON object per line: `text` (or `memory`), and optionally `id`, `user_id`,
    `agent_id`, `topics`, `source`, `note_type`."""
    records = []
    index = 0
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        index += 1
        try:
            item = json.loads(line)
        except ValueError:
            raise ImportFileError(f"line {number} is not JSON") from None
        if not isinstance(item, dict):
            raise ImportFileError(f"line {number} is not an object")
        text = item.get("text", item.get("memory"))
        note_type = "knowledge" if item.get("note_type") == "knowledge" else "memory"
        records.append(
            ImportRecord(
                index=index,
                text=text if isinstance(text, str) else "",
                source_id=_str(item.get("id")),
                user_id=_str(item.get("user_id")),
                agent_id=_str(item.get("agent_id")),
                topics=_topics(item.get("topics")),
                source=_str(item.get("source")),
                note_type=note_type,
            )
        )
    return records


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _topics(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        return ()
    topics = [t.strip()[:MAX_TOPIC_CHARS] for t in value if isinstance(t, str) and t.strip()]
    return tuple(dict.fromkeys(topics))[:MAX_TOPICS]


def _date(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def as_id(value: str | None, default: str) -> tuple[str, bool]:
    """`value` if it matches the id grammar, else a rewrite of it that does (and True)."""
    if value is None:
        return default, False
    if _ID.fullmatch(value):
        return value, False
    rewritten = _NOT_ID_CHAR.sub("-", value)
    if not rewritten[:1].isalnum():
        rewritten = "x" + rewritten
    return rewritten[:128], True


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
        """Import every record; `advance(1)` is called after each one (a progress bar)."""
        report = ImportReport()
        self._now = datetime.now(UTC)
        if self._api_key is not None:
            with self._make(self._base_url, self._api_key) as client:
                scope = "key:" + _key_id(self._api_key)
                for record in records:
                    report.outcomes.append(self._one(client, record, scope))
                    if advance:
                        advance(1)
            return report
        return self._run_as_admin(records, report, advance)

    def _run_as_admin(
        self,
        records: list[ImportRecord],
        report: ImportReport,
        advance: Callable[[int], None] | None,
    ) -> ImportReport:
        assert self._admin_key is not None
        clients: dict[tuple[str, str], tuple[Client, str]] = {}
        with self._make(self._base_url, self._admin_key) as admin:
            try:
                for record in records:
                    user, user_changed = as_id(record.user_id, self._default_user)
                    agent, agent_changed = as_id(record.agent_id, self._default_agent)
                    report.ids_rewritten += int(user_changed or agent_changed)
                    if (user, agent) not in clients:
                        issued = admin.issue_key(user, agent)
                        clients[(user, agent)] = (
                            self._make(self._base_url, issued.api_key),
                            issued.key_id,
                        )
                    client, _key = clients[(user, agent)]
                    report.outcomes.append(self._one(client, record, f"scope:{user}/{agent}"))
                    if advance:
                        advance(1)
            finally:
                for client, key_id in clients.values():
                    client.close()
                    # The import's own temporary key; if this fails an admin can revoke it later.
                    with contextlib.suppress(MemvaultError):
                        admin.revoke_key(key_id)
        return report

    def _one(self, client: Client, record: ImportRecord, scope: str) -> Outcome:
        if not record.text.strip():
            return Outcome(record.index, "skipped", message="no text")
        ttl_days = None
        if record.expires_at is not None:
            ttl_days = (record.expires_at - self._now).total_seconds() / 86_400
            if ttl_days <= 0:
                return Outcome(record.index, "expired")
        # The record's id is not stored: mem0's UUIDs hold digit runs the PII screen would
        # redact as phone numbers. It keys the idempotency instead.
        source = record.source or self._source_prefix
        call = _calls.add(
            record.text,
            note_type=record.note_type,
            topics=list(record.topics) or None,
            source=source,
            ttl_days=ttl_days,
            idempotency_key=idempotency_key(record, scope),
        )
        response = client._send(call)  # the replay header tells an earlier run's write apart
        try:
            _calls.raise_for_error(response)
        except ScreenRefusedError as exc:
            return Outcome(record.index, "refused", code=exc.code, detector=exc.detector)
        except (AuthenticationError, ForbiddenError, TransportError):
            raise
        except InvalidRequestError as exc:
            return Outcome(record.index, "invalid", code=exc.code, message=exc.message)
        note = call.parse(response)
        existed = response.headers.get(REPLAYED) == "true" or _before(note.created_at, self._now)
        return Outcome(record.index, "present" if existed else "added", note_id=note.id)


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
