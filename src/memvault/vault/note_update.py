"""A note's update: the next version is staged, indexed, then swapped in by one transaction.

The protocol (see `writes`): the next version is staged in the row's `next_*` columns (sealed
like the live one) while the live version stays readable -> the vector of the next version is
upserted -> one transaction swaps the next version in. A failed update (refused, invalid, or
an error before the swap) leaves the live version exactly as it was; a crash between the
steps is finished or rolled back by the reconciler.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

from memvault.errors import NotFound, PermissionDenied
from memvault.scope import SHARED_AGENT
from memvault.store.models import NoteRow
from memvault.store.scoping import member_list, parse_member_list, scoped_update
from memvault.vault.drafts import ACTIVE, content_hash, staged_view, swap_in_next
from memvault.vault.fields import check_readers, check_source, check_text, check_topics
from memvault.vault.notes import Note
from memvault.vault.provenance import (
    TRUSTED,
    UNTRUSTED,
    Provenance,
    check_provenance,
    check_unshared,
    combined,
    seal_into,
)
from memvault.vault.rerank import note_flags
from memvault.vault.screen_gate import ScreenedNote
from memvault.vault.session_index import SessionIndexer
from memvault.vault.sessions import INDEX_VERSION

if TYPE_CHECKING:
    from memvault.vault.scoped_reads import ScopedReads


class NoteUpdater:
    """Updates notes as one scoped view."""

    def __init__(self, view: ScopedReads) -> None:
        self._view = view
        self._vault = view.vault
        self._parts = view.vault.parts
        self.scope = view.scope

    def update(
        self,
        note_id: str,
        *,
        text: str | None = None,
        topics: Sequence[str] | None = None,
        readers: Sequence[str] | None = None,
        source: str | None = None,
        provenance: Provenance = TRUSTED,
    ) -> Note:
        """Change a note you may write; readers can be changed by the owner only.

        Validation and screening happen before anything is written; the live version stays
        readable until the next version's vector is in the index and one transaction swaps it in.
        An untrusted note (stored so, or made so by this `untrusted` write) must stay private to
        its owner: 422 for a shared note or one left with readers (`vault/provenance.py`).
        """
        if text is not None:
            check_text(text)
        checked_source = check_source(source)
        write_provenance = check_provenance(provenance)
        with self._vault.note_lock(note_id):
            row = self._view.writable_row(note_id)
            new_topics = check_topics(topics, row.note_type) if topics is not None else None
            new_readers: list[str] | None = None
            if readers is not None:
                if row.owner != self.scope.agent or row.visibility == "shared":
                    raise PermissionDenied("only the owner of a private note changes its readers")
                new_readers = check_readers(readers, row.owner)
                self._parts.gate.screen_ids(self.scope, "readers", new_readers[1:])
            current = self._vault.decrypt_row(row)
            after = combined(current.provenance, write_provenance)
            if after == UNTRUSTED:
                kept = [r for r in parse_member_list(row.readers) if r != row.owner]
                others = readers if readers is not None else kept
                check_unshared(shared=row.agent_id == SHARED_AGENT, readers=others)
            screened = self._parts.gate.screen_note(
                self.scope,
                text=text,
                source=checked_source,
                topics=new_topics,
                shared=row.agent_id == SHARED_AGENT,
                pseudonym=self._view.pii_pseudonym(),
            )
            return self._stage_and_swap(
                row, current, text, screened, new_topics, new_readers, after
            )

    def _stage_and_swap(
        self,
        row: NoteRow,
        current: Note,
        text: str | None,
        screened: ScreenedNote,
        new_topics: tuple[str, ...] | None,
        new_readers: list[str] | None,
        provenance: Provenance,
    ) -> Note:
        storage = self._vault.row_scope(row)
        new_text = screened.text if text is not None else current.text
        topics = screened.topics if new_topics is not None else current.topics
        source = screened.source if screened.source is not None else current.source
        redacted = (
            list(screened.redacted_types)
            if text is not None
            else [*current.redacted, *screened.redacted_types]
        )
        flags = screened.flags if text is not None else frozenset(current.flags)
        _, kept = self._vault.codec.open(
            storage, row.id, row.key_version, row.text_ct, row.attrs_ct
        )  # every sealed attribute survives an update (session id, A-MEM fields)
        tokens = self._vault.sparse_encoder(storage.tenant).tokens(new_text)
        attrs = {**kept, "topics": list(topics), "source": source}
        attrs.update(note_flags(new_text, tokens))  # shape flags of the new text (vault/rerank.py)
        seal_into(attrs, provenance)  # sticky: an untrusted note stays untrusted
        key_version, text_ct, attrs_ct = self._vault.codec.seal(storage, row.id, new_text, attrs)
        index_key = self._parts.keyring.index_key(storage.tenant)
        with self._parts.db.session(storage.tenant) as sess:
            context = SessionIndexer(self._vault).context_of(sess, row)
        now = self._parts.clock()
        state = {
            "key_version": key_version,
            "readers": member_list(new_readers) if new_readers is not None else row.readers,
            "ephemeral": int("ephemeral" in flags),
            "suspicious": int("suspicious" in flags),
            "redacted_types": ",".join(dict.fromkeys(redacted))[:128],
            "content_hash": content_hash(index_key.tag, storage, new_text),
            "token_count": len(context.bm25_tokens(tokens)),
            "model_id": self._parts.embedder.model_id,
            "updated_at": now,
            "index_version": INDEX_VERSION,
        }
        namespace = self._view.namespace
        next_state = json.dumps(state, sort_keys=True)
        self._parts.marks.touch(storage.tenant, [row.user_id])  # before the staged version
        with self._parts.db.session(storage.tenant) as sess:
            staged = sess.execute(
                scoped_update(
                    self._view.readable,
                    NoteRow.id == row.id,
                    NoteRow.status == ACTIVE,
                    next_text_ct=text_ct,
                    next_attrs_ct=attrs_ct,
                    next_state=next_state,
                    next_at=now,
                )
            )
            if staged.rowcount == 0:  # type: ignore[attr-defined]
                raise NotFound("no such memory")
            avgdl = self._parts.corpus.avgdl(sess, storage.tenant, namespace)
        self._vault.fault("after_stage")
        row.next_text_ct, row.next_attrs_ct = text_ct, attrs_ct
        row.next_state, row.next_at = next_state, now
        nxt = staged_view(row)
        points = self._vault.index_points(
            [(nxt, new_text, topics)], avgdl, tokens=[tokens], contexts=[context]
        )
        self._parts.index.upsert(namespace, points)
        self._vault.fault("after_upsert")
        with self._parts.db.session(storage.tenant) as sess:
            swapped = swap_in_next(self._parts.corpus, sess, row, now)
        if not swapped:  # purged while we wrote: the vector must not outlive its row
            self._parts.index.delete(namespace, [row.id])
            raise NotFound("no such memory")
        nxt.next_text_ct = nxt.next_attrs_ct = nxt.next_state = None
        nxt.next_at = None
        if text is not None:  # the successor in its session is indexed with this text
            SessionIndexer(self._vault).refresh_successor(nxt, removed=False)
        return self._vault.decrypt_row(nxt)
