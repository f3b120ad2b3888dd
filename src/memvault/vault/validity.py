"""Ending and restoring a note's validity without touching its text.

- `invalidate(view, note_id)`: the note stops being current (`invalidated_at`, transaction
  time): searches leave it out by default, `include_history` and an `as_of` before that time
  still find it, and GET still answers with its text and `valid_to`. The dialogue gate's DELETE.
- `restore(vault, tenant, note_id)`: an admin's reversal of the dialogue gate's UPDATE or DELETE:
  the invalidation is cleared and every `supersedes` relation to the note is removed, so it is
  current again (the newer notes stay, as written). Possible until retention removes the note.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlalchemy import select, update

from memvault.errors import NotFound
from memvault.ids import canonical_uuid
from memvault.store.models import LinkRow, NoteRow
from memvault.store.scoping import scoped_update
from memvault.vault.relations import SUPERSEDES

if TYPE_CHECKING:
    from memvault.vault.service import ScopedVault, Vault


def invalidate(view: ScopedVault, note_id: str) -> bool:
    """End a note the caller may write (PermissionDenied / NotFound otherwise); False when it
    was invalidated already."""
    vault = view.vault
    with vault.note_lock(note_id):
        row = view.writable_row(note_id)
        if row.invalidated_at is not None:
            return False
        with vault.parts.db.session(row.tenant_id) as sess:
            done = sess.execute(
                scoped_update(
                    view.readable,
                    NoteRow.id == row.id,
                    NoteRow.invalidated_at.is_(None),
                    invalidated_at=vault.parts.clock(),
                )
            )
        return bool(done.rowcount)  # type: ignore[attr-defined]


def restore(vault: Vault, tenant: str, note_id: str) -> dict[str, int]:
    """Make a live note of `tenant` current again (an admin's call): what was undone,
    `{"invalidation": 0|1, "superseded": n}`. NotFound for an id that is not a live note."""
    canonical = canonical_uuid(note_id) if isinstance(note_id, str) else None
    if canonical is None:
        raise NotFound("no such memory")
    now = vault.parts.clock()
    with vault.note_lock(canonical), vault.parts.db.session(tenant) as sess:
        row = sess.execute(
            select(NoteRow).where(
                NoteRow.tenant_id == tenant,
                NoteRow.id == canonical,
                NoteRow.is_active == 1,
                NoteRow.expires_at.is_(None) | (NoteRow.expires_at > now),
            )
        ).scalar_one_or_none()
        if row is None:
            raise NotFound("no such memory")
        cleared = 0
        if row.invalidated_at is not None:
            sess.execute(
                update(NoteRow)
                .where(NoteRow.tenant_id == tenant, NoteRow.id == canonical)
                .values(invalidated_at=None)
            )
            cleared = 1
        newer = (
            sess.execute(
                select(LinkRow).where(
                    LinkRow.tenant_id == tenant,
                    LinkRow.dst_id == canonical,
                    LinkRow.kind == SUPERSEDES,
                )
            )
            .scalars()
            .all()
        )
        for link in newer:
            sess.delete(link)
    return {"invalidation": cleared, "superseded": len(newer)}
