"""Typed results. The note and key models are the API's own Pydantic response models
(`memvault.api.schemas`), so the SDK and the server cannot drift apart."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, Field

from memvault.api.schemas import MEMORY_NOTICE, NoteList, NoteOut
from memvault.api.schemas import SearchResult as _SearchResult
from memvault.api.schemas_admin import IssuedKeyOut, ScreenPolicyIn
from memvault.api.schemas_admin import TtlDefaults as _TtlDefaults

Note = NoteOut
"""A memory as the API returns it: id, text (after redaction), visibility, owner, readers,
writers, note_type, topics, source, created_at, updated_at, flags, redacted; with A-MEM also
session_id, occurred_at, keywords, tags, context, category, enrichment and (on an add)
evolution; valid_from, valid_to (null while current) and relations (A-MEM's typed relations);
provenance (`trusted`, or `untrusted` when written in a session marked untrusted). The A-MEM
fields and provenance are optional, so an older server's notes still parse (as `trusted`)."""

SearchHit = _SearchResult
"""One search result: the note's fields plus score, age_days, via and scope, and provenance."""

Page = NoteList
"""One page of `GET /v1/memories`: items, total, limit, offset."""

IssuedKey = IssuedKeyOut
"""A freshly issued API key (`api_key` is shown once)."""

Policy = ScreenPolicyIn
"""A tenant's policy: per PII type redact | refuse | allow, allow_suspicious_shared, ttl_days."""

TtlDefaults = _TtlDefaults


class Link(BaseModel):
    """One note linked to another (`GET /v1/memories/{id}/links`): `kind` is `link` (made by
    A-MEM or a client), `sequence` (a session neighbour) or a typed relation (`supersedes`,
    `duplicate_of`, `expands`, `conflicts_with`, `derived_from`); `strength` in [0, 1] or None."""

    id: str
    kind: str
    strength: float | None = None


class DialogueDecision(BaseModel):
    """What the dialogue gate decided for one extracted fact: `action` is NEW, UPDATE, DELETE,
    NONE or REFUSED (`reason` then names the detector, never the value)."""

    action: str
    fact_index: int
    note_id: str | None = None
    reason: str | None = None
    target_id: str | None = None


class DialogueResult(BaseModel):
    """The answer of `POST /v1/dialogues`: one decision per fact; nothing written on a dry run."""

    decisions: list[DialogueDecision] = Field(default_factory=list)
    dry_run: bool = False


class Consolidation(BaseModel):
    """What `POST /v1/consolidate` did: groups of near-duplicates found, and relations written
    between their later notes and the oldest (no note is changed)."""

    groups: int = 0
    related: int = 0


class QualityFlag(BaseModel):
    """A note the quality scan flagged `low_quality`, and why (`too_short`,
    `expired_ephemeral`, `pending_conflict`). Ids and reasons only: no text."""

    id: str
    reasons: list[str] = Field(default_factory=list)


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
    """An audit export: the hash-chained events, the signed head line, the SDK's verdict
    (None when `verify=False`) and the signed audit checkpoints the export carries."""

    events: list[dict[str, Any]]
    head: dict[str, Any]
    verdict: str | None = None
    lines: list[str] = field(default_factory=list, repr=False)
    checkpoints: list[dict[str, Any]] = field(default_factory=list)


__all__ = [
    "MEMORY_NOTICE",
    "AuditExport",
    "Consolidation",
    "DialogueDecision",
    "DialogueResult",
    "Erasure",
    "IssuedKey",
    "Link",
    "Note",
    "Page",
    "Policy",
    "QualityFlag",
    "SearchHit",
    "TtlDefaults",
]
