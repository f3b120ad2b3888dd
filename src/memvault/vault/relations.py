"""Typed relations between notes, and the timeline they make: which version of a fact is
current, which notes restate another, and what was valid at a given time.

A relation is a `links` row (one per pair of notes, `LinkRow.kind`), read from `src` to `dst`:

- `supersedes`: src is the newer version of dst. dst stays whole, with `valid_to` = src's
  `valid_from`, until src expires, is deleted or erased: then dst is current again.
- `duplicate_of`: src restates dst (the canonical note). A search shows dst, listing src.
- `expands`, `conflicts_with`, `derived_from`: both notes stay current; results say so.

No relation moves text between notes (DESIGN.md, rule 8), and none may widen what anyone reads:
a relation that hides a note (`supersedes`, `duplicate_of`) is only ever written between notes
with the same storage scope, owner, visibility and readers (`may_relate`), and it is only
applied when the reader can read both ends now (the other end is read back in the reader's
scope, live); otherwise the note shows as it is.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from sqlalchemy import or_, select
from sqlalchemy.orm import Session

from memvault.index.base import Hit
from memvault.store.models import LinkRow, NoteRow
from memvault.store.records import NoteFields
from memvault.vault.links import add_link, pair_links
from memvault.vault.notes import Note, SearchHit

if TYPE_CHECKING:
    from memvault.vault.scoped_reads import ScopedReads

SUPERSEDES = "supersedes"
DUPLICATE_OF = "duplicate_of"
EXPANDS = "expands"
CONFLICTS_WITH = "conflicts_with"
DERIVED_FROM = "derived_from"
TYPED_KINDS = (SUPERSEDES, DUPLICATE_OF, EXPANDS, CONFLICTS_WITH, DERIVED_FROM)
"""The relations A-MEM writes besides a plain `link` (and the session's `sequence`)."""

VERSION_HOPS = 3
"""How far a search follows `supersedes` from a hit to the version it shows."""

_OUT = {  # the name of a relation seen from its src, then from its dst
    SUPERSEDES: ("supersedes", "superseded_by"),
    DUPLICATE_OF: ("duplicate_of", "duplicates"),
    EXPANDS: ("expands", "expanded_by"),
    CONFLICTS_WITH: ("conflicts_with", "conflicts_with"),
    DERIVED_FROM: ("derived_from", "sources_of"),
}


def may_relate(a: NoteFields, b: NoteFields) -> bool:
    """Whether a relation may hide one of these notes behind the other: same tenant, user,
    storage scope, owner, visibility and readers, so anyone who reads one reads the other."""
    return (
        a.tenant_id == b.tenant_id
        and a.user_id == b.user_id
        and a.agent_id == b.agent_id
        and a.owner == b.owner
        and a.visibility == b.visibility
        and a.readers == b.readers
    )


def put_relation(
    sess: Session,
    tenant: str,
    user: str,
    src: str,
    dst: str,
    kind: str,
    strength: float | None = None,
) -> bool:
    """Record `src kind dst` (replacing a plain link of the pair, either way). False when the
    pair already has a typed relation, or `src` is `dst`: a pair has one relation."""
    if src == dst or kind not in TYPED_KINDS:
        return False
    existing = sess.execute(select(LinkRow).where(pair_links(tenant, src, dst))).scalars().all()
    if any(row.kind in TYPED_KINDS for row in existing):
        return False
    for row in existing:
        strength = row.strength if strength is None else strength
        sess.delete(row)
    sess.flush()
    add_link(sess, tenant, user, src, dst, time.time(), kind=kind, strength=strength)
    return True


def drop_typed_relations(sess: Session, tenant: str, note_id: str) -> int:
    """Delete every typed relation of a note whose text its writer replaced: what A-MEM judged
    about the old text does not hold for the new one (plain links stay)."""
    rows = (
        sess.execute(
            select(LinkRow).where(
                LinkRow.tenant_id == tenant,
                LinkRow.kind.in_(TYPED_KINDS),
                or_(LinkRow.src_id == note_id, LinkRow.dst_id == note_id),
            )
        )
        .scalars()
        .all()
    )
    for row in rows:
        sess.delete(row)
    return len(rows)


def typed_relations(
    sess: Session, tenant: str, user: str, ids: Iterable[str]
) -> list[tuple[str, str, str]]:
    """The typed relations touching any of `ids`, within one tenant and user: (src, kind, dst)."""
    wanted = list(dict.fromkeys(ids))
    if not wanted:
        return []
    rows = sess.execute(
        select(LinkRow.src_id, LinkRow.kind, LinkRow.dst_id).where(
            LinkRow.tenant_id == tenant,
            LinkRow.user_id == user,
            LinkRow.kind.in_(TYPED_KINDS),
            or_(LinkRow.src_id.in_(wanted), LinkRow.dst_id.in_(wanted)),
        )
    ).all()
    return [(str(s), str(k), str(d)) for s, k, d in rows]


def valid_from(row: NoteFields | Note) -> float:
    """When a note's fact became true: its event time, else its write time."""
    occurred = row.occurred_at
    return float(occurred) if occurred is not None else float(row.created_at)


@dataclass
class Timeline:
    """The typed relations around a set of notes, as one reader sees them.

    Built by `Timeline.load`, which reads the relations of the notes and of the notes they reach
    (up to `VERSION_HOPS` steps of `supersedes`) and keeps only those whose other end the reader
    can read now: a relation to a deleted, expired, erased or unreadable note does not count.
    """

    rows: dict[str, NoteRow] = field(default_factory=dict)
    edges: list[tuple[str, str, str]] = field(default_factory=list)

    @classmethod
    def load(cls, view: ScopedReads, ids: Sequence[str]) -> Timeline:
        """The timeline of `ids` for `view`'s reader: one statement per hop when there are
        typed relations, a single (index) lookup when there are none."""
        scope = view.scope
        timeline = cls()
        parts = view.vault.parts
        seen: set[str] = set()
        frontier = list(dict.fromkeys(ids))
        with parts.db.session(scope.tenant) as sess:
            for _ in range(VERSION_HOPS):
                if not frontier:
                    break
                seen.update(frontier)
                found = typed_relations(sess, scope.tenant, scope.user, frontier)
                new = [e for e in found if e not in timeline.edges]
                if not new:
                    break
                timeline.edges.extend(new)
                ends = {x for s, _, d in new for x in (s, d)} - set(timeline.rows)
                timeline.rows.update(view.live_rows(sess, sorted(ends)))
                frontier = [x for x in ends if x not in seen and x in timeline.rows]
        timeline.edges = [
            e for e in timeline.edges if e[0] in timeline.rows and e[2] in timeline.rows
        ]
        return timeline

    # -- what the relations say ------------------------------------------------------------

    def _versions(self, note_id: str, forward: bool) -> list[str]:
        """The notes that supersede `note_id` (forward) or that it supersedes, newest first."""
        if forward:
            found = [s for s, k, d in self.edges if k == SUPERSEDES and d == note_id]
        else:
            found = [d for s, k, d in self.edges if k == SUPERSEDES and s == note_id]
        return sorted(found, key=lambda i: valid_from(self.rows[i]), reverse=True)

    def superseded_by(self, note_id: str, as_of: float | None = None) -> str | None:
        """The newest live note superseding `note_id` (valid by `as_of`, when given)."""
        for newer in self._versions(note_id, forward=True):
            if as_of is None or valid_from(self.rows[newer]) <= as_of:
                return newer
        return None

    def canonical_of(self, note_id: str) -> str | None:
        """The note `note_id` restates (`duplicate_of`), if the reader can read it."""
        for s, k, d in self.edges:
            if k == DUPLICATE_OF and s == note_id:
                return d
        return None

    def valid_to(self, row: NoteFields) -> float | None:
        """When `row` stopped being current: its successor's `valid_from`, else its
        invalidation time (None: current)."""
        newer = self.superseded_by(row.id)
        if newer is not None:
            return max(valid_from(row), valid_from(self.rows[newer]))
        return row.invalidated_at

    def relations_of(self, note_id: str) -> dict[str, tuple[str, ...]]:
        """The compact relations of one note: kind as seen from the note → other ids."""
        out: dict[str, list[str]] = {}
        for s, k, d in self.edges:
            if s == note_id:
                out.setdefault(_OUT[k][0], []).append(d)
            elif d == note_id:
                out.setdefault(_OUT[k][1], []).append(s)
        return {k: tuple(sorted(set(v))) for k, v in sorted(out.items())}

    def shown(self, note_id: str, as_of: float | None) -> str | None:
        """The version a search shows for a hit on `note_id`: the current one by default, the
        one valid at `as_of` when given; None when no version of it is valid then."""
        current = note_id
        for _ in range(VERSION_HOPS):
            canonical = self.canonical_of(current)
            if canonical is not None:
                current = canonical
                continue
            newer = self.superseded_by(current, as_of)
            if newer is not None:
                current = newer
                continue
            if (
                as_of is not None
                and current in self.rows
                and valid_from(self.rows[current]) > as_of
            ):
                older = [
                    o
                    for o in self._versions(current, forward=False)
                    if valid_from(self.rows[o]) <= as_of
                ]
                if not older:
                    return None
                current = older[0]
                continue
            break
        return current

    # -- applied to a search -------------------------------------------------------------------

    def resolve(self, hits: Sequence[Hit], as_of: float | None, history: bool) -> list[Hit]:
        """Each hit replaced by the version shown for it (`shown`), each note once at its best
        rank; with `history`, every hit as it is."""
        if history or not self.edges:
            return list(hits)
        out: list[Hit] = []
        seen: set[str] = set()
        for hit in hits:
            shown = self.shown(hit.id, as_of)
            if shown is None or shown in seen:
                continue
            seen.add(shown)
            out.append(hit if shown == hit.id else Hit(shown, hit.score, hit.payload))
        return out

    def annotate(self, note: Note) -> Note:
        """The note with its validity and relations as this timeline sees them."""
        row = self.rows.get(note.id)
        valid_to = self.valid_to(row) if row is not None else note.valid_to
        relations = self.relations_of(note.id)
        if valid_to == note.valid_to and not relations:
            return note
        return replace(note, valid_to=valid_to, relations=relations)


def apply_timeline(
    view: ScopedReads,
    results: Sequence[SearchHit],
    timeline: Timeline,
    as_of: float | None,
    history: bool,
) -> list[SearchHit]:
    """Search results annotated with validity and relations, and filtered to what the search
    asked: current notes (default), notes valid at `as_of`, or every version (`history`)."""
    needed = [r.note.id for r in results if r.note.id not in timeline.rows]
    if needed:
        extra = Timeline.load(view, needed)
        timeline = Timeline({**timeline.rows, **extra.rows}, _merged(timeline.edges, extra.edges))
    out: list[SearchHit] = []
    for result in results:
        note = timeline.annotate(result.note)
        if not history and not _valid(note, as_of):
            continue
        out.append(replace(result, note=note))
    return out


def annotate_notes(view: ScopedReads, notes: Sequence[Note]) -> list[Note]:
    """Notes read by id or listed, with their validity and relations."""
    if not notes:
        return list(notes)
    timeline = Timeline.load(view, [n.id for n in notes])
    return [timeline.annotate(n) for n in notes]


def _valid(note: Note, as_of: float | None) -> bool:
    """Whether a result belongs in a search without history: not a restatement shown through
    its canonical note, and current (or valid at `as_of`)."""
    if note.relations.get("duplicate_of"):
        return False
    if as_of is None:
        return note.valid_to is None
    start = note.occurred_at if note.occurred_at is not None else note.created_at
    return start <= as_of and (note.valid_to is None or note.valid_to > as_of)


def _merged(a: Sequence[Any], b: Sequence[Any]) -> list[Any]:
    return list(dict.fromkeys([*a, *b]))
