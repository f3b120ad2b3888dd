"""A-MEM after a note is stored, on the caller's decrypted scoped view: a same-day
restatement (`duplicate_of`), evolution (EVOLVE → `supersedes`, EXPAND → `expands`, CONFLICT →
`conflicts_with`, NEW), link generation and neighbour evolution.

Every candidate comes from one dense search with the caller's scope filter inside the store,
so nothing here ever reads, links or changes a note of another scope. No text moves between
notes: decisions become relations (`amem/relating.py`), typed only between notes every reader
of either may read and of the same provenance (trusted, or written in an untrusted session). A
neighbour's context and tags evolve only under the same conditions and when the caller may write
it; the strings are screened first.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from memvault.amem.attrs import set_flags, update_attrs
from memvault.amem.judge import Judge
from memvault.amem.relating import (
    changed_slot,
    relate,
    restates,
    same_subject,
    version_action,
)
from memvault.amem.thresholds import AmemThresholds
from memvault.amem.views import Candidate
from memvault.scope import SHARED_AGENT, may_write
from memvault.store.models import NoteRow
from memvault.store.scoping import parse_member_list
from memvault.text import SparseEncoder
from memvault.vault.links import put_link
from memvault.vault.notes import Note
from memvault.vault.provenance import same_provenance
from memvault.vault.relations import annotate_notes, may_relate
from memvault.vault.sessions import enrichment_embed_text

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
        return may_write(agent, parse_member_list(self.row.writers))

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
        self._note_row: NoteRow | None = None

    def run(self, note: Note) -> Outcome:
        """Relate the new note to its nearest older note (restatement, new version, expansion
        or conflict), then link it to the others the judge accepts and evolve up to 3
        neighbours' context and tags. No text moves between notes (`amem/relating.py`)."""
        near = self._candidates(note)
        agent = self._view.scope.agent
        # Only a note every reader of either may read, the caller may write, and of the same
        # provenance is judged; the others can only be linked (`may_relate`, `same_provenance`).
        kin = [c for c in near if c.writable_by(agent) and self._kin(c, note)]
        same_day = [
            c
            for c in kin
            if c.similarity >= self._t.same_day
            and int(c.note.created_at // DAY) == int(note.created_at // DAY)
            and restates(note.text, c.note.text)
        ]
        if same_day:  # a restatement: shown through its canonical note, kept whole
            target = same_day[0]
            kind = relate(self._view, note.id, target.note.id, "DUPLICATE")
            return Outcome("MERGE" if kind == "duplicate_of" else "NEW", target.note.id)
        # Only current notes are judged: a superseded one already has its newer version, which
        # is the one a change replaces. A candidate about the same subject goes first: the
        # nearest note may be another person's look-alike ("Carol's favourite food is ...").
        judged = [c for c in kin if c.similarity >= self._t.evolve_low and c.note.current]
        judged.sort(key=lambda c: same_subject(note.text, c.note.text) is not True)
        if judged:
            target = judged[0]
            action = self._decide(note, target)
            if action in ("EVOLVE", "EXPAND", "CONFLICT"):
                kind = relate(self._view, note.id, target.note.id, action)
                if action == "CONFLICT" and kind == "conflicts_with":
                    set_flags(self._view, [note.id, target.note.id], conflict=1)
                rest = [c for c in near if c is not target]
                return Outcome(action, target.note.id, self._link(note, rest))
        links = self._link(note, near)
        return Outcome("NEW", None, links)

    def _decide(self, note: Note, target: Near) -> str:
        """The judge's evolution action for `note` against `target`; a changed value of the
        same slot is a new version whatever the judge says, unless it says NEW. A new version
        of a note that holds more than one fact is an expansion (`version_action`); a slot of
        another subject ("Carol's ..." against "Bob's ...") is NEW (a link at most)."""
        if same_subject(note.text, target.note.text) is False:
            return "NEW"
        decision = self._judge.evolve(note.text, target.candidate(1))
        new, old = note.text, target.note.text
        slot = decision.action != "NEW" and changed_slot(new, old)
        if slot and version_action("EVOLVE", new, old) == "EVOLVE":
            return "EVOLVE"
        return version_action(decision.action, new, old)

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
        index, namespace = self._parts.index, self._view.namespace
        hits = index.search_dense(namespace, vector, where, CANDIDATES)
        # BM25 candidates too, with their cosine: among many look-alikes ("X's favourite colour
        # is ..." for each of a dozen people) the same subject's older version may not be among
        # the nearest vectors, but it shares the subject's words.
        key = self._parts.keyring.index_key(scope.tenant)
        words = SparseEncoder(key.token_id).encode_query(note.text)
        if words.indices:
            lexical = index.search_sparse(namespace, words, where, CANDIDATES)
            known = {h.id for h in hits}
            missing = tuple(h.id for h in lexical if h.id not in known)
            if missing:
                only = replace(where, only_ids=missing)
                hits = [*hits, *index.search_dense(namespace, vector, only, len(missing))]
                hits.sort(key=lambda h: h.score, reverse=True)
        self._view.check_hits(hits)
        if not hits:
            return []
        with self._parts.db.session(scope.tenant) as sess:
            rows = self._view.live_rows(sess, [h.id for h in hits])
        # Only notes written before this one: a job run late must not fold an older note into
        # a newer one (ids are time-ordered and monotonic).
        kept = [h for h in hits if h.id in rows and h.id < note.id]
        # With their validity: a superseded candidate is not current (`Near.note.current`).
        notes = annotate_notes(self._view, [self._view.note_of(rows[h.id]) for h in kept])
        return [Near(rows[h.id], n, h.score) for h, n in zip(kept, notes, strict=True)]

    def _kin(self, near: Near, note: Note) -> bool:
        """Whether A-MEM may relate `note` to `near` by kind or evolve one from the other:
        the same readers (`may_relate`) and the same provenance (an untrusted note never
        supersedes, restates or rewrites a trusted one, nor the other way round)."""
        return may_relate(near.row, self._row(note)) and same_provenance(
            near.note.provenance, note.provenance
        )

    def _row(self, note: Note) -> NoteRow:
        if self._note_row is None or self._note_row.id != note.id:
            self._note_row = self._view.readable_row(note.id)
        return self._note_row

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
            if not n.writable_by(agent) or not self._kin(n, note):
                continue  # linked, never changed: its readers may not read the new note, or
                # one of the two was written in an untrusted session and the other not
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
