"""A stored row and its decrypted text and attributes, made into the `Note` the API returns."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from memvault.store.records import NoteFields
from memvault.store.scoping import parse_member_list
from memvault.vault.notes import Note
from memvault.vault.provenance import of_attrs


def note_from_row(row: NoteFields, text: str, attrs: Mapping[str, Any]) -> Note:
    """The note of a row whose plaintext the caller holds: what it just sealed itself."""
    flags = [
        name
        for name, value in (
            ("ephemeral", row.ephemeral),
            ("suspicious", row.suspicious),
            ("conflict", row.conflict),
            ("low_quality", row.low_quality),
        )
        if value
    ]
    return Note(
        id=row.id,
        tenant=row.tenant_id,
        user=row.user_id,
        agent=row.agent_id,
        owner=row.owner,
        readers=tuple(parse_member_list(row.readers)),
        writers=tuple(parse_member_list(row.writers)),
        visibility="shared" if row.visibility == "shared" else "private",
        note_type="knowledge" if row.note_type == "knowledge" else "memory",
        text=text,
        topics=tuple(attrs.get("topics", ())),
        source=attrs.get("source"),
        created_at=row.created_at,
        updated_at=row.updated_at,
        last_accessed=row.last_accessed,
        retrieval_count=row.retrieval_count,
        flags=tuple(flags),
        redacted=tuple(t for t in row.redacted_types.split(",") if t),
        expires_at=row.expires_at,
        session_id=attrs.get("session_id"),
        occurred_at=row.occurred_at if row.occurred_at is not None else row.created_at,
        keywords=tuple(attrs.get("keywords", ())),
        tags=tuple(attrs.get("tags", ())),
        context=attrs.get("context"),
        category=attrs.get("category"),
        enrichment=row.enrichment,
        history=len(attrs.get("evolution_history", ())),
        valid_to=row.invalidated_at,
        provenance=of_attrs(attrs),
    )
