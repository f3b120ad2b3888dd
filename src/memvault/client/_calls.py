"""What each SDK method sends and how it reads the answer, shared by `Client` and `AsyncClient`.

A `Call` is a request description (method, path, exact body bytes, query, idempotency key) plus
a parser for the successful response. The two clients only differ in how they send it.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Generic, TypeVar
from urllib.parse import quote

import httpx

from memvault.client.errors import (
    InvalidRequestError,
    error_from_response,
)
from memvault.client.models import (
    Consolidation,
    DialogueResult,
    Erasure,
    IssuedKey,
    Link,
    Note,
    Page,
    Policy,
    QualityFlag,
    SearchHit,
    TtlDefaults,
)
from memvault.ids import is_note_id

T = TypeVar("T")

DEFAULT_URL = "http://127.0.0.1:8700"
WRITE_METHODS = frozenset({"POST", "PATCH", "DELETE"})
USER_AGENT = "memvault-python-sdk/0.1"


def resolve(base_url: str | None, api_key: str | None) -> tuple[str, str | None]:
    """`base_url` or env `MEMVAULT_URL` or the default; `api_key` or env `MEMVAULT_API_KEY`."""
    url = base_url or os.environ.get("MEMVAULT_URL") or DEFAULT_URL
    key = api_key if api_key is not None else os.environ.get("MEMVAULT_API_KEY") or None
    return url.rstrip("/"), key


def default_headers(api_key: str | None) -> dict[str, str]:
    headers = {"User-Agent": USER_AGENT, "Accept": "application/json"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    return headers


@dataclass(frozen=True, slots=True)
class Call(Generic[T]):
    """One API request, ready to send (and resend byte for byte), and its result parser."""

    method: str
    path: str
    parse: Callable[[httpx.Response], T]
    body: bytes | None = None
    params: Mapping[str, str | int] = field(default_factory=dict)
    idempotency_key: str | None = None

    def headers(self) -> dict[str, str]:
        headers: dict[str, str] = {}
        if self.body is not None:
            headers["Content-Type"] = "application/json"
        if self.idempotency_key:
            headers["Idempotency-Key"] = self.idempotency_key
        return headers


def call(
    method: str,
    path: str,
    parse: Callable[[httpx.Response], T],
    *,
    body: Any = None,
    params: Mapping[str, str | int | None] | None = None,
    idempotency_key: str | None = None,
) -> Call[T]:
    """Build a call. Writes get an `Idempotency-Key` (a fresh UUIDv4 unless given), which every
    retry of this call reuses with the same body bytes (docs/idempotency.md)."""
    raw = None if body is None else json.dumps(body, ensure_ascii=False).encode()
    if method in WRITE_METHODS and idempotency_key is None:
        idempotency_key = str(uuid.uuid4())
    query = {k: v for k, v in (params or {}).items() if v is not None}
    return Call(method, path, parse, raw, query, idempotency_key)


def raise_for_error(response: httpx.Response) -> None:
    """Raise the mapped `MemvaultError` for a non-2xx response (the body must be read)."""
    if response.is_success:
        return
    try:
        body = response.json()
    except ValueError:
        body = None
    raise error_from_response(response.status_code, body, dict(response.headers))


def seg(value: str) -> str:
    """One path segment, percent-encoded (an id can never add a path component)."""
    return quote(value, safe="")


def note_seg(note_id: str) -> str:
    """A note id as a path segment; `InvalidRequestError` (nothing sent) for anything that is
    not a note id (`.`, `..`, a path, an empty string), which would reach another route."""
    if not is_note_id(note_id):
        raise InvalidRequestError("note_id must be a note id (UUID)")
    return note_id


def _plain(value: Any) -> Any:
    return list(value) if isinstance(value, list | tuple) else value


def _json(response: httpx.Response) -> Any:
    return response.json()


def _none(_response: httpx.Response) -> None:
    return None


def _model(model: Callable[..., T]) -> Callable[[httpx.Response], T]:
    validate: Callable[[Any], T] = model.model_validate  # type: ignore[attr-defined]
    return lambda response: validate(response.json())


def _items(model: Any, key: str) -> Callable[[httpx.Response], list[Any]]:
    """A parser for `{key: [item, ...]}`: each item validated by `model`."""
    return lambda response: [model.model_validate(r) for r in response.json()[key]]


def _text(response: httpx.Response) -> str:
    return response.text


def rfc3339(value: str | datetime) -> str:
    """`occurred_at` as the API takes it: an RFC 3339 string, or an aware datetime."""
    if isinstance(value, datetime):
        if value.tzinfo is None or value.utcoffset() is None:
            raise ValueError("occurred_at needs a timezone (RFC 3339 with an offset)")
        return value.isoformat().replace("+00:00", "Z")
    return value


def _erasure(response: httpx.Response) -> Erasure:
    return Erasure.from_body(response.json())


def _receipt_keys(response: httpx.Response) -> list[dict[str, Any]]:
    return list(response.json()["keys"])


# --- agent calls --------------------------------------------------------------------------


def add(
    text: str,
    *,
    visibility: str = "private",
    readers: Sequence[str] | None = None,
    note_type: str = "memory",
    topics: Sequence[str] | None = None,
    source: str | None = None,
    ttl_days: float | None = None,
    session_id: str | None = None,
    occurred_at: str | datetime | None = None,
    idempotency_key: str | None = None,
) -> Call[Note]:
    """Store a memory (screened by the server; an exact duplicate returns the existing
    note). Raises `ScreenRefusedError` (with `.detector`) when the screen refuses it.
    `session_id` groups a conversation's notes; `occurred_at` (RFC 3339 or an aware
    datetime) is when the remembered event happened."""
    body: dict[str, Any] = {"text": text, "visibility": visibility, "note_type": note_type}
    optional = {
        "readers": readers,
        "topics": topics,
        "source": source,
        "ttl_days": ttl_days,
        "session_id": session_id,
        "occurred_at": None if occurred_at is None else rfc3339(occurred_at),
    }
    for name, value in optional.items():
        if value is not None:
            body[name] = _plain(value)
    return call("POST", "/v1/memories", _model(Note), body=body, idempotency_key=idempotency_key)


def search(
    query: str,
    *,
    limit: int = 5,
    topics: Sequence[str] | None = None,
    mode: str = "full",
    fusion: str | None = None,
    as_of: str | None = None,
    include_history: bool = False,
) -> Call[list[SearchHit]]:
    """Search the memories this key may read (`mode`: dense, sparse, hybrid or full;
    `fusion`: `score` or `rrf` for the hybrid modes, the server's default when None).
    Current notes only by default; `as_of` (RFC 3339): what was valid then;
    `include_history`: superseded and invalidated notes too. Each hit carries
    `valid_from`, `valid_to` and `relations`."""
    body: dict[str, Any] = {"query": query, "limit": limit, "mode": mode}
    if topics is not None:
        body["topics"] = list(topics)
    if fusion is not None:  # an older server refuses a field it does not know
        body["fusion"] = fusion
    if as_of is not None:
        body["as_of"] = as_of
    if include_history:
        body["include_history"] = True
    # A search stores nothing: no Idempotency-Key, and a retry is harmless.
    return call(
        "POST", "/v1/memories/search", _items(SearchHit, "results"), body=body, idempotency_key=""
    )


def get(note_id: str) -> Call[Note]:
    """One memory by id (`NotFoundError` outside the key's readable scopes)."""
    return call("GET", f"/v1/memories/{note_seg(note_id)}", _model(Note))


def list_notes(limit: int = 50, offset: int = 0, cursor: str | None = None) -> Call[Page]:
    """One page of memories, newest first: `items`, `total` and `next_cursor` (null on
    the last page). Pass a page's `next_cursor` as `cursor` for the next one (stable
    while notes are written and deleted); `offset` is kept for compatibility and moves
    under writes. Not both."""
    params: dict[str, str | int | None] = {"limit": limit, "cursor": cursor}
    if cursor is None:  # the server refuses a cursor with an offset
        params["offset"] = offset
    return call("GET", "/v1/memories", _model(Page), params=params)


def next_page(page: Page, offset: int) -> tuple[str | None, int] | None:
    """Where `iter_notes` reads next after `page` (read at `offset`): `(cursor, 0)` when the
    server pages by cursor, `(None, next offset)` for a server from before cursors (which
    sends no `next_cursor`), or None after the last page."""
    if "next_cursor" in page.model_fields_set:
        return None if page.next_cursor is None else (page.next_cursor, 0)
    offset += len(page.items)
    return None if not page.items or offset >= page.total else (None, offset)


def update(
    note_id: str,
    *,
    text: str | None = None,
    topics: Sequence[str] | None = None,
    readers: Sequence[str] | None = None,
    source: str | None = None,
) -> Call[Note]:
    """Change a memory's text, topics, readers or source (screened like a new write)."""
    fields = {"text": text, "topics": topics, "readers": readers, "source": source}
    body = {k: _plain(v) for k, v in fields.items() if v is not None}
    return call("PATCH", f"/v1/memories/{note_seg(note_id)}", _model(Note), body=body)


def delete(note_id: str, *, purge: bool = False) -> Call[None]:
    """Soft-delete a memory, or with `purge=True` remove its row and vector."""
    params = {"purge": "true"} if purge else None
    return call("DELETE", f"/v1/memories/{note_seg(note_id)}", _none, params=params)


def link(source_id: str, target_id: str) -> Call[None]:
    """Link a memory this key may write to one it may read (feeds `full` search)."""
    path = f"/v1/memories/{note_seg(source_id)}/links"
    return call("POST", path, _none, body={"target_id": note_seg(target_id)})


def links(note_id: str) -> Call[list[Link]]:
    """The notes linked to a memory (both directions) that this key may read."""
    return call("GET", f"/v1/memories/{note_seg(note_id)}/links", _items(Link, "links"))


def mark_untrusted(session_id: str, *, reason: str, ttl_s: int = 300) -> Call[dict[str, Any]]:
    """Mark a session of this agent untrusted for `ttl_s` seconds: reads that name it
    (`X-Session-Id`) raise `SessionUntrustedError` until `unmark_untrusted` or the ttl ends.
    `reason` is screened (a credential in it refuses the mark)."""
    path = f"/v1/sessions/{seg(session_id)}/untrusted"
    return call("POST", path, _json, body={"reason": reason, "ttl_s": ttl_s})


def unmark_untrusted(session_id: str) -> Call[None]:
    """End a session's untrusted mark."""
    return call("DELETE", f"/v1/sessions/{seg(session_id)}/untrusted", _none)


# --- A-MEM calls (409 `conflict` when the server runs with MEMVAULT_AMEM=off) --------------


def dialogue(
    messages: Sequence[Mapping[str, str]],
    *,
    dry_run: bool = False,
    idempotency_key: str | None = None,
) -> Call[DialogueResult]:
    """Run a conversation (`[{"role", "content"}]`) through the dialogue gate: one
    NEW / UPDATE / DELETE / NONE / REFUSED decision per fact from the user and assistant
    turns (tool and system turns are dropped). `dry_run` decides and writes nothing."""
    turns = [{"role": m["role"], "content": m["content"]} for m in messages]
    body = {"messages": turns, "dry_run": dry_run}
    return call(
        "POST", "/v1/dialogues", _model(DialogueResult), body=body, idempotency_key=idempotency_key
    )


def consolidate(*, idempotency_key: str | None = None) -> Call[Consolidation]:
    """Merge this key's near-duplicate notes into their oldest now (the daily run)."""
    return call("POST", "/v1/consolidate", _model(Consolidation), idempotency_key=idempotency_key)


def quality_scan() -> Call[list[QualityFlag]]:
    """Flag this key's too-short, expired-ephemeral and conflicting notes `low_quality`."""
    return call("POST", "/v1/quality/scan", _items(QualityFlag, "flagged"))


def quality_review() -> Call[str]:
    """The flagged notes as an Obsidian-compatible markdown review batch."""
    return call("GET", "/v1/quality/review", _text)


# --- admin calls --------------------------------------------------------------------------


def issue_key(
    user_id: str, agent_id: str, role: str = "agent", isolation: str | None = None
) -> Call[IssuedKey]:
    """Issue an API key for a user and agent of this admin's tenant (secret shown once).

    `isolation`: `"shared"` (Mode A, the default for a new agent) or `"dedicated"` (Mode B: a
    partition of its own, no shared notes); omitted, the agent keeps its mode. An agent's mode
    never changes: asking for the other one raises the 409 `isolation_conflict` error."""
    body: dict[str, Any] = {"user_id": user_id, "agent_id": agent_id, "role": role}
    if isolation is not None:
        body["isolation"] = isolation
    return call("POST", "/v1/admin/keys", _model(IssuedKey), body=body)


def revoke_key(key_id: str) -> Call[None]:
    """Revoke a key of this admin's tenant; it stops working at once."""
    return call("DELETE", f"/v1/admin/keys/{seg(key_id)}", _none)


def start_erase(user_id: str, agent_id: str | None = None) -> Call[Erasure]:
    body: dict[str, Any] = {"user_id": user_id}
    if agent_id is not None:
        body["agent_id"] = agent_id
    return call("POST", "/v1/admin/erase", _erasure, body=body)


def erasure(job_id: str) -> Call[Erasure]:
    """An erase job's progress, or its receipt once done."""
    return call("GET", f"/v1/admin/erasures/{seg(job_id)}", _erasure)


def erasures(limit: int = 100) -> Call[list[dict[str, Any]]]:
    """The tenant's erase jobs, newest first."""

    def parse(r: httpx.Response) -> list[dict[str, Any]]:
        return list(r.json()["erasures"])

    return call("GET", "/v1/admin/erasures", parse, params={"limit": limit})


def inventory(user_id: str, agent_id: str | None = None) -> Call[dict[str, Any]]:
    """Per store of the deletion inventory: what it holds about the user, and how much."""
    params = {"user_id": user_id, "agent_id": agent_id}
    return call("GET", "/v1/admin/inventory", _json, params=params)


def refusals() -> Call[dict[str, int]]:
    """Refused writes per detector."""

    def parse(r: httpx.Response) -> dict[str, int]:
        return dict(r.json()["refusals"])

    return call("GET", "/v1/admin/refusals", parse)


def set_policy(
    pii: Mapping[str, str] | None = None,
    *,
    allow_suspicious_shared: bool = False,
    ttl_days: TtlDefaults | Mapping[str, float | None] | None = None,
) -> Call[Policy]:
    """Replace the tenant policy: PII actions per type, shared-note screening, TTLs."""
    ttl = ttl_days if isinstance(ttl_days, TtlDefaults) else TtlDefaults(**dict(ttl_days or {}))
    policy = Policy(
        pii=dict(pii or {}),  # type: ignore[arg-type]
        allow_suspicious_shared=allow_suspicious_shared,
        ttl_days=ttl,
    )
    return call("PUT", "/v1/admin/policy", _model(Policy), body=policy.model_dump(mode="json"))


def get_policy() -> Call[Policy]:
    """The tenant policy."""
    return call("GET", "/v1/admin/policy", _model(Policy))


def receipt_keys() -> Call[list[dict[str, Any]]]:
    """The deployment's Ed25519 public keys (no API key needed)."""
    return call("GET", "/v1/receipt-keys", _receipt_keys)


def audit_lines(since_seq: int) -> Call[str]:
    """The export's JSON lines as text (`audit_from_lines` reads and checks them)."""
    return call("GET", "/v1/admin/audit/export", _text, params={"since_seq": since_seq})


def dsar_lines(user_id: str) -> Call[None]:
    """Streamed: the client reads its lines (`DsarCheck`), never the parser."""
    return call("GET", "/v1/admin/export", _none, params={"user_id": user_id})


# --- operator calls -----------------------------------------------------------------------


def create_tenant(tenant_id: str) -> Call[IssuedKey]:
    """Create a tenant; the result holds its first tenant-admin key."""
    body = {"tenant_id": tenant_id}
    return call("POST", "/v1/operator/tenants", _model(IssuedKey), body=body)


def start_tenant_deletion(tenant_id: str) -> Call[Erasure]:
    return call("DELETE", f"/v1/operator/tenants/{seg(tenant_id)}", _erasure)
