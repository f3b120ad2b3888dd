"""`NoteRecord`: the columns of a note that a search returns, as a plain tuple.

A search hydrates its hits on the driver's cursor (`DriverStatement`), so its rows come back
as tuples, not ORM objects. `NoteRecord` names the columns that decrypting a note, scoring its
heat and re-checking its scope read (never the staged next version, the keyed content hash or
the session tag), and `NoteFields` is what the code that decrypts a row takes: either.
"""

from __future__ import annotations

from typing import NamedTuple, TypeAlias

from sqlalchemy import ColumnElement

from memvault.store.models import NoteRow


class NoteRecord(NamedTuple):
    """A note's `NoteFields` as read by a search, and whether the note has any link."""

    tenant_id: str
    id: str
    user_id: str
    agent_id: str
    owner: str
    readers: str
    writers: str
    visibility: str
    note_type: str
    conflict: int
    ephemeral: int
    low_quality: int
    suspicious: int
    redacted_types: str
    created_at: float
    updated_at: float
    retrieval_count: int
    last_accessed: float
    expires_at: float | None
    key_version: int
    text_ct: bytes
    attrs_ct: bytes
    occurred_at: float | None
    enrichment: str | None
    invalidated_at: float | None
    has_links: bool


RECORD_COLUMNS: tuple[ColumnElement[object], ...] = tuple(
    NoteRow.__table__.c[name] for name in NoteRecord._fields if name != "has_links"
)
"""The `notes` columns of a `NoteRecord`, in its order (`has_links` is computed)."""


def record_of(values: tuple[object, ...]) -> NoteRecord:
    """A record from a driver row of `RECORD_COLUMNS` and the has-links flag.

    The driver hands back what the column holds: `bytes` for the envelopes on SQLite and on
    PostgreSQL (psycopg returns `bytea` as `bytes`), 0/1 or a boolean for the flag.
    """
    record = NoteRecord._make(values)
    return record._replace(has_links=bool(record.has_links))


NoteFields: TypeAlias = NoteRow | NoteRecord
"""What decrypting a note, scoring its heat and re-checking its scope read: an ORM row or a
search's record (the fields both have)."""
