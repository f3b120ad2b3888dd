"""The note as callers see it (decrypted), and what a search returns."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

Visibility = Literal["private", "shared"]
NoteType = Literal["memory", "knowledge"]
Provenance = Literal["trusted", "untrusted"]


@dataclass(frozen=True, slots=True)
class Note:
    """A decrypted memory note. `agent` is the scope it is stored under (`shared` for shared)."""

    id: str
    tenant: str
    user: str
    agent: str
    owner: str
    readers: tuple[str, ...]
    writers: tuple[str, ...]
    visibility: Visibility
    note_type: NoteType
    text: str
    topics: tuple[str, ...]
    source: str | None
    created_at: float
    updated_at: float
    last_accessed: float
    retrieval_count: int
    flags: tuple[str, ...] = ()
    redacted: tuple[str, ...] = ()
    expires_at: float | None = None
    session_id: str | None = None
    occurred_at: float | None = None
    """When the remembered event happened (epoch seconds); the write time unless a client said."""
    keywords: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    context: str | None = None
    category: str | None = None
    enrichment: str | None = None
    """A-MEM: `pending`, `done` or `failed` (None: written without A-MEM)."""
    evolution: dict[str, Any] | None = None
    """What A-MEM did as this note was written: `{action, target_id, links}` (add only)."""
    history: int = 0
    """How many evolution steps the note has been through (the history itself stays sealed)."""
    valid_to: float | None = None
    """When the note stopped being current: its successor's `valid_from`, or the time it was
    invalidated (None: current). Its `valid_from` is `occurred_at`."""
    relations: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """Typed relations the reader may see, compact: `superseded_by`, `supersedes`,
    `duplicate_of`, `duplicates`, `expands`, `expanded_by`, `conflicts_with`,
    `derived_from` (each a tuple of note ids; only the kinds the note has)."""
    provenance: Provenance = "trusted"
    """`untrusted`: written in a session marked untrusted (`memvault.vault.provenance`)."""

    @property
    def current(self) -> bool:
        """Whether the note is current (not superseded, not invalidated)."""
        return self.valid_to is None


@dataclass(frozen=True, slots=True)
class SearchHit:
    """A search result: the note, its score, and how it was found (`search` or `graph`)."""

    note: Note
    score: float
    via: str = "search"


@dataclass(frozen=True, slots=True)
class ErasureReport:
    """What an erase destroyed, and the verification counts (all zero when it succeeded)."""

    tenant: str
    user: str
    agent: str | None
    keys_destroyed: int
    vectors_deleted: int
    rows_deleted: int
    links_deleted: int
    remaining: dict[str, int] = field(default_factory=dict)

    @property
    def verified(self) -> bool:
        return all(v == 0 for v in self.remaining.values())
