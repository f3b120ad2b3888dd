"""Typed results. The note and key models are the API's own Pydantic response models
(`memvault.api.schemas`), so the SDK and the server cannot drift apart."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from memvault.api.schemas import MEMORY_NOTICE, IssuedKeyOut, NoteList, NoteOut, ScreenPolicyIn
from memvault.api.schemas import SearchResult as _SearchResult
from memvault.api.schemas import TtlDefaults as _TtlDefaults

Note = NoteOut
"""A memory as the API returns it: id, text (after redaction), visibility, owner, readers,
writers, note_type, topics, source, created_at, updated_at, flags, redacted."""

SearchHit = _SearchResult
"""One search result: the note's fields plus score, age_days, via and scope."""

Page = NoteList
"""One page of `GET /v1/memories`: items, total, limit, offset."""

IssuedKey = IssuedKeyOut
"""A freshly issued API key (`api_key` is shown once)."""

Policy = ScreenPolicyIn
"""A tenant's policy: per PII type redact | refuse | allow, allow_suspicious_shared, ttl_days."""

TtlDefaults = _TtlDefaults


@dataclass(frozen=True, slots=True)
class Erasure:
    """An erase job (or a tenant deletion) and, once done, its signed receipt.

    `verdict` is the SDK's check of the signature against `GET /v1/receipt-keys` (None when not
    checked or not done yet). `document` is what `memvault receipt verify` takes offline.
    """

    id: str
    state: str
    receipt: dict[str, Any] | None = None
    key_id: str | None = None
    signature: str | None = None
    verdict: str | None = None
    progress: dict[str, Any] = field(default_factory=dict)

    @property
    def done(self) -> bool:
        return self.state == "done"

    @property
    def document(self) -> dict[str, Any]:
        """`{"receipt", "key_id", "signature"}`: the signed document as the server signed it."""
        return {"receipt": self.receipt, "key_id": self.key_id, "signature": self.signature}

    @classmethod
    def from_body(cls, body: dict[str, Any]) -> Erasure:
        known = {"id", "state", "receipt", "key_id", "signature"}
        return cls(
            id=str(body.get("id", "")),
            state=str(body.get("state", "")),
            receipt=body.get("receipt"),
            key_id=body.get("key_id"),
            signature=body.get("signature"),
            progress={k: v for k, v in body.items() if k not in known},
        )


@dataclass(frozen=True, slots=True)
class AuditExport:
    """An audit export: the hash-chained events, the signed head line, and the SDK's verdict
    (None when `verify=False`)."""

    events: list[dict[str, Any]]
    head: dict[str, Any]
    verdict: str | None = None
    lines: list[str] = field(default_factory=list, repr=False)


__all__ = [
    "MEMORY_NOTICE",
    "AuditExport",
    "Erasure",
    "IssuedKey",
    "Note",
    "Page",
    "Policy",
    "SearchHit",
    "TtlDefaults",
]
