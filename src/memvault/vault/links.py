"""Links between notes of one tenant and user. Both ends must be readable by the caller."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import delete, or_, select
from sqlalchemy.orm import Session

from memvault.vault.store.models import LinkRow


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
