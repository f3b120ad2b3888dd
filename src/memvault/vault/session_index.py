"""Context-keyed indexing at work: the contexts of new notes, re-indexing a successor when its
predecessor changes, and rebuilding points under the current rules (`memvault reindex`).

The rules themselves live in `memvault.vault.sessions`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from sqlalchemy import delete, update
from sqlalchemy.orm import Session

from memvault.scope import Scope
from memvault.store.models import LinkRow, NoteRow
from memvault.text.standalone import stands_alone
from memvault.vault.drafts import ACTIVE, namespace_for
from memvault.vault.links import add_link
from memvault.vault.sessions import (
    INDEX_VERSION,
    NO_CONTEXT,
    IndexContext,
    enrichment_embed_text,
    enrichment_text,
    first_after,
    latest_before,
    may_borrow,
    order_key,
)

if TYPE_CHECKING:
    from memvault.vault.parts import VaultCore

SEQUENCE = "sequence"
"""The link kind from a note to its predecessor in a session."""


@dataclass(frozen=True, slots=True)
class NewNote:
    """A note about to be stored: its row (not in SQL yet), text and own BM25 tokens."""

    row: NoteRow
    text: str
    tokens: tuple[str, ...]


class SessionIndexer:
    """Builds index contexts for one vault (reads predecessors from the decrypted view)."""

    def __init__(self, vault: VaultCore) -> None:
        self._vault = vault
        self._parts = vault.parts

    # -- contexts -----------------------------------------------------------------------------

    def date_tokens(self, row: NoteRow) -> tuple[str, ...]:
        """BM25 tokens of the note's event date, when a client gave one."""
        if row.occurred_at is None:
            return ()
        from memvault.text.dates import event_date_text

        encoder = self._vault.sparse_encoder(row.tenant_id)
        return tuple(encoder.tokens(event_date_text(row.occurred_at)))

    def _borrowed(
        self,
        row: NoteRow,
        own: str,
        prev: NoteRow | None,
        text: str | None,
        tokens: Sequence[str] | None,
    ) -> IndexContext:
        """The context of `row` (text `own`) after `prev` (text and tokens when known): the
        predecessor's words, unless the note stands alone."""
        dates = self.date_tokens(row)
        if prev is None or not may_borrow(row, prev):
            return IndexContext(date_tokens=dates) if dates else NO_CONTEXT
        if text is None:
            text = self._vault.decrypt_row(prev).text
        if stands_alone(own, text):
            return IndexContext(prev.id, date_tokens=dates, alone=True)
        if tokens is None:
            tokens = self._vault.sparse_encoder(row.tenant_id).tokens(text)
        return IndexContext(prev.id, text, tuple(tokens), dates)

    def context_of(self, sess: Session, row: NoteRow, *, exclude: str = "") -> IndexContext:
        """The context of a stored note under the current rules (its predecessor from SQL, its
        event date, and A-MEM's keywords and context sealed with it)."""
        text, attrs = self._vault.codec.open(
            self._vault.row_scope(row), row.id, row.key_version, row.text_ct, row.attrs_ct
        )
        if row.session_tag is None:
            dates = self.date_tokens(row)
            ctx = IndexContext(date_tokens=dates) if dates else NO_CONTEXT
        else:
            prev = latest_before(
                sess, self._vault.row_scope(row), row.session_tag, order_key(row), exclude=exclude
            )
            ctx = self._borrowed(row, text, prev, None, None)
        return self.with_extra(ctx, row.tenant_id, attrs, text)

    def with_extra(
        self, ctx: IndexContext, tenant: str, attrs: Mapping[str, Any], text: str
    ) -> IndexContext:
        """`ctx` with what A-MEM's construction (in sealed `attrs`) adds to the note's index."""
        extra = enrichment_text(attrs)
        if not extra:
            return ctx
        tokens = tuple(self._vault.sparse_encoder(tenant).tokens(extra))
        embed = enrichment_embed_text(attrs, text)
        return replace(ctx, extra_text=embed, extra_tokens=tokens)

    def contexts_for_new(
        self, sess: Session, notes: Sequence[NewNote]
    ) -> tuple[list[IndexContext], list[NoteRow]]:
        """Contexts of notes about to be added (a batch may hold a session's turns in order),
        and the stored notes whose predecessor one of them becomes (written out of order)."""
        contexts: list[IndexContext] = [NO_CONTEXT] * len(notes)
        displaced: dict[str, NoteRow] = {}
        groups: dict[tuple[Scope, str], list[int]] = {}
        for i, note in enumerate(notes):
            if note.row.session_tag is None:
                dates = self.date_tokens(note.row)
                contexts[i] = IndexContext(date_tokens=dates) if dates else NO_CONTEXT
            else:
                scope = self._vault.row_scope(note.row)
                groups.setdefault((scope, note.row.session_tag), []).append(i)
        for (storage, tag), members in groups.items():
            members.sort(key=lambda i: order_key(notes[i].row))
            last_stored = latest_before(sess, storage, tag, None)
            before: NewNote | None = None
            for i in members:
                note = notes[i]
                key = order_key(note.row)
                stored = last_stored
                if last_stored is not None and order_key(last_stored) > key:
                    stored = latest_before(sess, storage, tag, key)
                    successor = first_after(sess, storage, tag, key)
                    if successor is not None:
                        displaced[successor.id] = successor
                later = (
                    stored is None or order_key(stored) < order_key(before.row) if before else False
                )
                if before is not None and later:
                    contexts[i] = self._borrowed(
                        note.row, note.text, before.row, before.text, before.tokens
                    )
                else:
                    contexts[i] = self._borrowed(note.row, note.text, stored, None, None)
                before = note
        return contexts, list(displaced.values())

    # -- re-indexing stored notes ---------------------------------------------------------------

    def refresh_successor(self, row: NoteRow, *, removed: bool) -> int:
        """Re-index the note that follows `row` in its session (after `row` changed or went).

        `removed`: `row` is being deleted, so the successor's new predecessor is the one before
        `row`. Returns how many notes were re-indexed (0 or 1).
        """
        if row.session_tag is None:
            return 0
        storage = self._vault.row_scope(row)
        with self._parts.db.session(row.tenant_id) as sess:
            successor = first_after(sess, storage, row.session_tag, order_key(row), exclude=row.id)
        if successor is None:
            return 0
        return self.rebuild([successor], exclude=row.id if removed else "")

    def rebuild(self, rows: Sequence[NoteRow], *, exclude: str = "") -> int:
        """Rebuild the points of stored rows under the current rules and record it on each row.

        Each row is re-read after its point is written: a row that changed meanwhile (an update
        swapped in, a delete) is not marked, and a changed live row is rebuilt once more, so a
        concurrent writer's point is never left behind an older one. Returns rows rebuilt.
        """
        done = 0
        pending = list(rows)
        for _attempt in range(3):
            if not pending:
                break
            marked, pending = self._rebuild_once(pending, exclude)
            done += marked
        return done

    def _rebuild_once(self, rows: Sequence[NoteRow], exclude: str) -> tuple[int, list[NoteRow]]:
        tenant = rows[0].tenant_id
        namespace = namespace_for(tenant)
        encoder = self._vault.sparse_encoder(tenant)
        items, own, contexts = [], [], []
        with self._parts.db.session(tenant) as sess:
            for row in rows:
                note = self._vault.decrypt_row(row)
                items.append((row, note.text, note.topics))
                own.append(encoder.tokens(note.text))
                contexts.append(self.context_of(sess, row, exclude=exclude))
            avgdl = self._parts.corpus.avgdl(sess, tenant, namespace)
        points = self._vault.index_points(items, avgdl, tokens=own, contexts=contexts)
        self._parts.index.upsert(namespace, points)
        changed: list[NoteRow] = []
        gone: list[str] = []
        with self._parts.db.session(tenant) as sess:
            delta = 0
            for row, tokens, ctx in zip(rows, own, contexts, strict=True):
                count = len(ctx.bm25_tokens(tokens))
                marked = sess.execute(
                    update(NoteRow)
                    .where(
                        NoteRow.tenant_id == tenant,
                        NoteRow.id == row.id,
                        NoteRow.updated_at == row.updated_at,
                        NoteRow.key_version == row.key_version,
                        NoteRow.status == ACTIVE,
                        NoteRow.next_at.is_(None),
                    )
                    .values(
                        token_count=count,
                        index_version=INDEX_VERSION,
                        model_id=self._parts.embedder.model_id,
                    )
                )
                if marked.rowcount == 0:  # type: ignore[attr-defined]
                    fresh = sess.get(NoteRow, (tenant, row.id))
                    if fresh is None:
                        gone.append(row.id)
                    elif fresh.status == ACTIVE and fresh.next_at is None:
                        changed.append(fresh)
                    continue
                delta += count - row.token_count
                self.relink(sess, row, ctx.prev_id)
            self._parts.corpus.adjust(sess, tenant, namespace, 0, delta)
            for fresh in changed:
                sess.expunge(fresh)
        if gone:  # purged while we rebuilt: the point must not outlive its row
            self._parts.index.delete(namespace, gone)
        return len(rows) - len(changed) - len(gone), changed

    def link_new(
        self, sess: Session, rows: Sequence[NoteRow], prev_of: dict[str, str | None]
    ) -> None:
        """Record each new note's predecessor as a `sequence` link (the add's transaction)."""
        for row in rows:
            prev = prev_of.get(row.id)
            if prev is not None:
                add_link(
                    sess, row.tenant_id, row.user_id, row.id, prev, row.created_at, kind=SEQUENCE
                )

    def relink(self, sess: Session, row: NoteRow, prev_id: str | None) -> None:
        """Make `prev_id` the note's one sequence link (none when None)."""
        sess.execute(
            delete(LinkRow).where(
                LinkRow.tenant_id == row.tenant_id,
                LinkRow.src_id == row.id,
                LinkRow.kind == SEQUENCE,
            )
        )
        if prev_id is not None and sess.get(LinkRow, (row.tenant_id, row.id, prev_id)) is None:
            created_at = self._parts.clock()
            add_link(sess, row.tenant_id, row.user_id, row.id, prev_id, created_at, kind=SEQUENCE)
