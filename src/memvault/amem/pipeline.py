"""A-MEM after a note is stored, on the caller's decrypted scoped view: same-day merge,
evolution (EVOLVE / CONFLICT / EXPAND / NEW), link generation and neighbour evolution.

Every candidate comes from one dense search with the caller's scope filter inside the store,
so nothing here ever reads, links or changes a note of another scope. Only notes the caller may
write are changed; a readable-only note (a shared note of another writer) is linked, never
changed. Every text written back goes through the vault's own update, so it is screened again.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from memvault.amem.attrs import append_history, set_flags, update_attrs
from memvault.amem.consolidate import merged_text
from memvault.amem.judge import Judge
from memvault.amem.thresholds import AmemThresholds
from memvault.amem.views import Candidate, NoteView
from memvault.scope import SHARED_AGENT
from memvault.vault.links import cascade_links, put_link
from memvault.vault.notes import Note
from memvault.vault.sessions import enrichment_embed_text
from memvault.vault.store.models import NoteRow
from memvault.vault.store.scoping import parse_member_list

if TYPE_CHECKING:
    from memvault.vault.service import ScopedVault

CANDIDATES = 6
NEIGHBOURS = 3
DAY = 86_400


@dataclass(frozen=True, slots=True)
class Near:
    """A candidate note: its row, its decrypted note and its cosine to the new note."""

    row: NoteRow
    note: Note
    similarity: float

    def writable_by(self, agent: str) -> bool:
        writers = parse_member_list(self.row.writers)
        return agent in writers or "*" in writers

    @property
    def shared(self) -> bool:
        return self.row.agent_id == SHARED_AGENT

    def candidate(self, number: int) -> Candidate:
        return Candidate(number, self.note.text, self.similarity, self.note.context, self.note.tags)


@dataclass(frozen=True, slots=True)
class Outcome:
    """What A-MEM did with a new note: the evolution action and its target, and links made."""

    action: str
    target_id: str | None = None
    links: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {"action": self.action, "target_id": self.target_id, "links": self.links}


class AmemPipeline:
    """Runs A-MEM for notes just stored by one scoped view."""

    def __init__(self, view: ScopedVault, judge: Judge, thresholds: AmemThresholds) -> None:
        self._view = view
        self._parts = view.vault.parts
        self._judge = judge
        self._t = thresholds

    def run(self, note: Note) -> Outcome:
        """Same-day merge, else evolution, then links and neighbour evolution."""
        near = self._candidates(note)
        agent = self._view.scope.agent
        mine = note.visibility == "private" and note.note_type == "memory"
        same_day = [
            c
            for c in near
            if mine
            and c.similarity >= self._t.same_day
            and c.writable_by(agent)
            and not c.shared
            and c.note.note_type == "memory"
            and int(c.note.created_at // DAY) == int(note.created_at // DAY)
        ]
        if same_day:  # a same-day duplicate merges, unless the judge sees a contradiction
            target = same_day[0]
            decision = self._judge.evolve(note.text, target.candidate(1))
            if decision.action != "CONFLICT":  # the survivor keeps what the duplicate adds
                text = merged_text(_view(target.note), [_view(note)], self._judge)
                self._absorb(note, target, "MERGE", text)
                return Outcome("MERGE", target.note.id)
            set_flags(self._view, [note.id, target.note.id], conflict=1)
            return Outcome("CONFLICT", target.note.id, self._link(note, near))
        judged = [c for c in near if c.similarity >= self._t.evolve_low and c.writable_by(agent)]
        if judged:
            target = judged[0]
            decision = self._judge.evolve(note.text, target.candidate(1))
            if decision.action in ("EVOLVE", "EXPAND") and decision.merged_text:
                self._absorb(note, target, decision.action, decision.merged_text)
                return Outcome(decision.action, target.note.id)
            if decision.action == "CONFLICT":
                set_flags(self._view, [note.id, target.note.id], conflict=1)
                links = self._link(note, near)
                return Outcome("CONFLICT", target.note.id, links)
        links = self._link(note, near)
        return Outcome("NEW", None, links)

    # -- steps ----------------------------------------------------------------------------------

    def _candidates(self, note: Note) -> list[Near]:
        """The top candidates in the caller's readable scopes, most similar first."""
        scope = self._view.scope
        # Embedded as the note's point was (its text, then A-MEM's keywords and context), so
        # the query matches stored vectors like for like (and the embedding cache answers).
        extra = enrichment_embed_text({"context": note.context}, note.text)
        text = f"{note.text}\n{extra}" if extra else note.text
        vector = self._parts.embedder.embed_documents(scope, [text])[0].tolist()
        where = replace(self._view.point_filter(), exclude_ids=(note.id,))
        hits = self._parts.index.search_dense(self._view.namespace, vector, where, CANDIDATES)
        self._view.check_hits(hits)
        if not hits:
            return []
        with self._parts.db.session(scope.tenant) as sess:
            rows = self._view.live_rows(sess, [h.id for h in hits])
        # Only notes written before this one: a job run late must not fold an older note into
        # a newer one (ids are time-ordered and monotonic).
        return [
            Near(rows[h.id], self._view.note_of(rows[h.id]), h.score)
            for h in hits
            if h.id in rows and h.id < note.id
        ]

    def _absorb(self, note: Note, target: Near, action: str, text: str | None) -> None:
        """Fold `note` into `target`: update its text (re-screened), append its history, then
        soft-delete `note` and move its links to `target`."""
        previous = target.note.text
        if text is not None and text != previous:
            self._view.update(target.note.id, text=text)
        update_attrs(
            self._view,
            target.note.id,
            lambda attrs: append_history(
                attrs,
                {
                    "at": time.time(),
                    "action": action,
                    "absorbed": note.id,
                    "previous": previous,
                },
            ),
        )
        with self._parts.db.session(self._view.scope.tenant) as sess:
            cascade_links(sess, self._view.scope.tenant, note.id, target.note.id)
        self._view.absorb(note.id, target.note.id)

    def _link(self, note: Note, near: Sequence[Near]) -> int:
        """Ask the judge which candidates above the link threshold to link; link both ways
        (one undirected row) with the judge's strength, then evolve up to 3 neighbours."""
        above = [c for c in near if c.similarity >= self._t.link]
        if not above:
            return 0
        verdicts = self._judge.verify_links(
            note.text, [c.candidate(i + 1) for i, c in enumerate(above)]
        )
        linked: list[Near] = []
        tenant = self._view.scope.tenant
        with self._parts.db.session(tenant) as sess:
            for verdict in verdicts:
                if not 1 <= verdict.number <= len(above):
                    continue  # GuardedJudge already rejects these; never trust a number
                target = above[verdict.number - 1]
                strength = min(1.0, max(0.0, float(verdict.strength)))
                if put_link(sess, tenant, self._view.scope.user, note.id, target.note.id, strength):
                    linked.append(target)
        self._evolve_neighbours(note, linked[:NEIGHBOURS])
        return len(linked)

    def _evolve_neighbours(self, note: Note, neighbours: Sequence[Near]) -> None:
        agent = self._view.scope.agent
        for n in neighbours:
            if not n.writable_by(agent):
                continue  # linked, never changed
            update = self._judge.evolve_neighbour(note.text, n.candidate(1))
            if update is None:
                continue
            context, tags = update.context, tuple(update.tags)

            def change(attrs: dict[str, Any], context: str | None = context, tags=tags) -> dict:  # type: ignore[no-untyped-def]
                if context:
                    attrs["context"] = context
                if tags:
                    attrs["tags"] = list(dict.fromkeys([*attrs.get("tags", []), *tags]))[:10]
                return attrs

            update_attrs(self._view, n.note.id, change, screen=True)


def _view(note: Note) -> NoteView:
    return NoteView(id=note.id, text=note.text, created_at=note.created_at)
