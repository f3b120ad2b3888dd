"""Links between notes of one tenant and user. Both ends must be readable by the caller."""

from __future__ import annotations

import time
from collections.abc import Sequence

from sqlalchemy import ColumnElement, CompoundSelect, delete, exists, or_, select, union
from sqlalchemy.orm import Session

from memvault.store.models import LinkRow, NoteRow


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


def pair_links(tenant: str, a: str, b: str) -> ColumnElement[bool]:
    """The condition on the links between notes `a` and `b` of `tenant`, either way round."""
    return (LinkRow.tenant_id == tenant) & or_(
        (LinkRow.src_id == a) & (LinkRow.dst_id == b),
        (LinkRow.src_id == b) & (LinkRow.dst_id == a),
    )


def add_link(
    sess: Session,
    tenant: str,
    user: str,
    src: str,
    dst: str,
    created_at: float,
    *,
    kind: str = "link",
    strength: float | None = None,
) -> None:
    """Stage the `links` row `src kind dst` of `user` (callers check the pair has none yet)."""
    sess.add(
        LinkRow(
            tenant_id=tenant,
            src_id=src,
            dst_id=dst,
            user_id=user,
            created_at=created_at,
            kind=kind,
            strength=strength,
        )
    )


def put_link(
    sess: Session, tenant: str, user: str, src: str, dst: str, strength: float | None
) -> bool:
    """Link two notes of one user (one undirected row; walks follow both directions).

    False when they are already linked either way, or `src` is `dst`.
    """
    if src == dst:
        return False
    existing = sess.execute(select(LinkRow.src_id).where(pair_links(tenant, src, dst))).first()
    if existing is not None:
        return False
    add_link(sess, tenant, user, src, dst, time.time(), strength=strength)
    return True


def cascade_links(sess: Session, tenant: str, gone: str, survivor: str) -> int:
    """Move every link of `gone` to `survivor` (a merge); links that would duplicate one of
    the survivor's, or join it to itself, are dropped. Returns how many moved."""
    rows = (
        sess.execute(
            select(LinkRow).where(
                LinkRow.tenant_id == tenant, or_(LinkRow.src_id == gone, LinkRow.dst_id == gone)
            )
        )
        .scalars()
        .all()
    )
    moved = 0
    for link in rows:
        other = link.dst_id if link.src_id == gone else link.src_id
        user, kind, strength = link.user_id, link.kind, link.strength
        sess.delete(link)
        sess.flush()
        if kind == "link" and put_link(sess, tenant, user, survivor, other, strength):
            moved += 1
    return moved


def links_of(
    sess: Session, tenant: str, user: str, note_id: str
) -> list[tuple[str, str, float | None]]:
    """The notes linked to `note_id` within one user: (other id, kind, strength)."""
    rows = sess.execute(
        select(LinkRow.src_id, LinkRow.dst_id, LinkRow.kind, LinkRow.strength).where(
            LinkRow.tenant_id == tenant,
            LinkRow.user_id == user,
            or_(LinkRow.src_id == note_id, LinkRow.dst_id == note_id),
        )
    ).all()
    out = []
    for src, dst, kind, strength in rows:
        out.append((dst if src == note_id else src, str(kind), strength))
    return sorted(out)


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
