"""Links between notes of one tenant and user. Both ends must be readable by the caller."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import ColumnElement, CompoundSelect, delete, exists, or_, select, union
from sqlalchemy.orm import Session

from memvault.vault.store.models import LinkRow, NoteRow


def delete_links_of(sess: Session, tenant: str, note_ids: Sequence[str]) -> int:
    """Delete every link touching these notes; returns how many."""
    if not note_ids:
        return 0
    result = sess.execute(
        delete(LinkRow).where(
            LinkRow.tenant_id == tenant,
            or_(LinkRow.src_id.in_(note_ids), LinkRow.dst_id.in_(note_ids)),
        )
    )
    return int(result.rowcount)  # type: ignore[attr-defined]


def neighbours(sess: Session, tenant: str, user: str, note_ids: Sequence[str]) -> set[str]:
    """Ids linked to any of `note_ids` (either direction) within one tenant and user."""
    if not note_ids:
        return set()
    rows = sess.execute(
        select(LinkRow.src_id, LinkRow.dst_id).where(
            LinkRow.tenant_id == tenant,
            LinkRow.user_id == user,
            or_(LinkRow.src_id.in_(note_ids), LinkRow.dst_id.in_(note_ids)),
        )
    ).all()
    found: set[str] = set()
    for src, dst in rows:
        found.add(src)
        found.add(dst)
    return found - set(note_ids)


def linked_ids(tenant: str, user: str, note_ids: Sequence[str]) -> CompoundSelect:
    """A subquery of the ids linked to any of `note_ids` (either direction), one tenant and
    user; `note_ids` themselves may be among them."""
    ids = list(note_ids)
    return union(
        select(LinkRow.dst_id).where(
            LinkRow.tenant_id == tenant, LinkRow.user_id == user, LinkRow.src_id.in_(ids)
        ),
        select(LinkRow.src_id).where(
            LinkRow.tenant_id == tenant, LinkRow.user_id == user, LinkRow.dst_id.in_(ids)
        ),
    )


def note_has_links() -> ColumnElement[bool]:
    """Correlated to `notes`: true when the note is an end of any link of its tenant.

    A superset of what a walk can follow (no user filter), so it may only ever be used to
    skip a walk that would find nothing. Each arm is an index lookup.
    """
    return or_(
        exists().where(LinkRow.tenant_id == NoteRow.tenant_id, LinkRow.src_id == NoteRow.id),
        exists().where(LinkRow.tenant_id == NoteRow.tenant_id, LinkRow.dst_id == NoteRow.id),
    )
