"""Daily consolidation and the quality scan, each on one scope's decrypted view.

- `consolidate(amem, view)`: the caller's own current notes (its storage scope: never the
  shared scope, never another agent's), grouped by category; each near-duplicate is related to
  the group's oldest note (`duplicate_of`, `supersedes`, `expands`, `conflicts_with`). No text
  moves and nothing is deleted. Running it again changes nothing.
- `quality_scan(view)`: flags `too_short`, `expired_ephemeral` and `pending_conflict` notes as
  `low_quality`; `review(view)` renders the flagged ones as an Obsidian review batch.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sqlalchemy import select

from memvault.amem.attrs import set_flags
from memvault.amem.consolidate import plan_consolidation
from memvault.amem.judge import Judge, JudgeRejected, JudgeUnavailable
from memvault.amem.quality import QualityFlag, scan
from memvault.amem.relating import changed_slot, relate, restates, version_action
from memvault.amem.review import review_markdown
from memvault.amem.thresholds import thresholds_for
from memvault.amem.views import Candidate, NoteView
from memvault.scope import SHARED_AGENT, Scope, may_write
from memvault.store.models import NoteRow
from memvault.vault.notes import Note

if TYPE_CHECKING:
    from memvault.amem.service import Amem
    from memvault.vault.service import ScopedVault

PAGE = 1000


@dataclass(frozen=True, slots=True)
class ConsolidationReport:
    """What one consolidation did: groups of near-duplicates found and relations written."""

    scopes: int = 0
    groups: int = 0
    related: int = 0
    relations: tuple[tuple[str, str, str], ...] = ()
    """(newer note id, kind, older note id) for every relation written."""

    def __add__(self, other: ConsolidationReport) -> ConsolidationReport:
        return ConsolidationReport(
            self.scopes + other.scopes,
            self.groups + other.groups,
            self.related + other.related,
            self.relations + other.relations,
        )


def own_notes(view: ScopedVault) -> list[Note]:
    """Every live note the caller reads (its own, shared ones, those it was made a reader of)."""
    notes: list[Note] = []
    cursor: str | None = None
    while True:  # by cursor: a note deleted meanwhile never makes the walk skip another
        page = view.list_page(limit=PAGE, cursor=cursor)
        notes.extend(page.notes)
        if page.next_cursor is None:
            return notes
        cursor = page.next_cursor


def as_views(view: ScopedVault, notes: Sequence[Note]) -> list[NoteView]:
    """A-MEM views of notes with their vectors (embedded by the vault's cached embedder)."""
    agent = view.scope.agent
    vectors = view.vault.parts.embedder.embed_documents(view.scope, [n.text for n in notes])
    return [
        NoteView(
            id=n.id,
            text=n.text,
            created_at=n.created_at,
            note_type=n.note_type,
            category=n.category,
            keywords=n.keywords,
            tags=n.tags,
            context=n.context,
            shared=n.agent == SHARED_AGENT,
            writable=may_write(agent, n.writers),
            ephemeral="ephemeral" in n.flags,
            conflict="conflict" in n.flags,
            vector=vector.tolist(),
            untrusted=n.provenance == "untrusted",
        )
        for n, vector in zip(notes, vectors, strict=True)
    ]


def consolidate(amem: Amem, view: ScopedVault) -> ConsolidationReport:
    """Relate the caller's near-duplicate notes, category by category (idempotent): each later
    note of a group is related to the group's oldest note by the judge's decision
    (`amem/relating.py`): a restatement, a new version, an expansion or a conflict. No note is
    changed or deleted; a note gone meanwhile is skipped."""
    notes = [
        n
        for n in own_notes(view)
        if n.agent == view.scope.agent and n.current and "duplicate_of" not in n.relations
    ]
    if len(notes) < 2:
        return ConsolidationReport(scopes=1)
    views = as_views(view, notes)
    by_id = {v.id: v for v in views}
    threshold = thresholds_for(view.vault.parts.embedder.model_id).consolidate
    groups = plan_consolidation(views, threshold)
    judge = amem.judge_for(view.scope.tenant)
    written: list[tuple[str, str, str]] = []
    for group in groups:
        oldest = by_id[group.survivor_id]
        for note_id in group.absorbed_ids:
            action = _action(judge, by_id[note_id], oldest)
            kind = relate(view, note_id, oldest.id, action) if action else None
            if kind is not None:
                written.append((note_id, kind, oldest.id))
    return ConsolidationReport(1, len(groups), len(written), tuple(written))


def _action(judge: Judge, newer: NoteView, older: NoteView) -> str | None:
    """What consolidation records between two grouped notes (None: nothing)."""
    if restates(newer.text, older.text):
        return "DUPLICATE"
    if changed_slot(newer.text, older.text):
        return version_action("SUPERSEDE", newer.text, older.text)
    candidate = Candidate(1, older.text, 1.0, older.context, older.tags)
    try:
        action = judge.evolve(newer.text, candidate).action
    except (JudgeRejected, JudgeUnavailable):
        return None
    if action not in ("EVOLVE", "EXPAND", "CONFLICT"):
        return None
    return version_action(action, newer.text, older.text)


def scopes_of(amem: Amem, tenant: str) -> list[Scope]:
    """The (tenant, user, agent) scopes holding private notes of a tenant."""
    with amem.vault.parts.db.session(tenant) as sess:
        rows = sess.execute(
            select(NoteRow.user_id, NoteRow.agent_id)
            .where(NoteRow.tenant_id == tenant, NoteRow.agent_id != SHARED_AGENT)
            .group_by(NoteRow.user_id, NoteRow.agent_id)
            .order_by(NoteRow.user_id, NoteRow.agent_id)
        ).all()
    return [Scope(tenant, user, agent) for user, agent in rows]


def consolidate_tenant(
    amem: Amem, tenant: str, progress: Callable[[int], None] | None = None
) -> ConsolidationReport:
    """Consolidate every scope of a tenant, each on its own decrypted view."""
    total = ConsolidationReport()
    for scope in scopes_of(amem, tenant):
        total = total + consolidate(amem, amem.vault.scoped(scope))
        if progress is not None:
            progress(1)
    return total


def flagged(view: ScopedVault, now: float | None = None) -> Iterator[tuple[Note, QualityFlag]]:
    """The caller's notes the quality scan flags, with their reasons."""
    notes = own_notes(view)
    by_id = {n.id: n for n in notes}
    views = [
        NoteView(
            id=n.id,
            text=n.text,
            created_at=n.created_at,
            note_type=n.note_type,
            ephemeral="ephemeral" in n.flags,
            conflict="conflict" in n.flags,
        )
        for n in notes
    ]
    for flag in scan(views, time.time() if now is None else now):
        yield by_id[flag.note_id], flag


def quality_scan(view: ScopedVault) -> list[QualityFlag]:
    """Flag the caller's low-quality notes (`low_quality`) among those it may write (a note it
    may only read is reported, never marked); the flags found."""
    agent = view.scope.agent
    found = list(flagged(view))
    writable = [f.note_id for n, f in found if may_write(agent, n.writers)]
    set_flags(view, writable, low_quality=1)
    return [flag for _, flag in found]


def review(view: ScopedVault) -> str:
    """An Obsidian-compatible markdown review batch of the caller's flagged notes."""
    pairs = [
        (NoteView(id=n.id, text=n.text, created_at=n.created_at, note_type=n.note_type), flag)
        for n, flag in flagged(view)
    ]
    label = f"{view.scope.user}/{view.scope.agent}"
    return review_markdown(pairs, generated_at=time.time(), scope_label=label)
