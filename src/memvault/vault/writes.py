"""The write paths of a scoped view: add, delete, purge and link (update: `note_update`).

Crash safety rests on one rule, a row is never live without its vector, and the reconciler
repairs whatever a crash leaves:
- **add**: the vector is upserted first -> ONE transaction inserts the row `active` (unless a
  live twin exists: the duplicate check is part of the insert statement) and counts it in the
  corpus statistics. A crash before the commit leaves only an orphan vector, which the
  reconciler deletes once it is older than the grace period; the add is acknowledged after the
  commit, so an acknowledged add has its row and its vector. (Rows left `pending` by the
  earlier three-step protocol are still completed by the reconciler.)
- **update** (`note_update`): the next version is staged in the row's `next_*` columns (sealed
  like the live one) while the live version stays readable -> the vector of the next version is
  upserted -> one transaction swaps the next version in. A failed update (refused, invalid,
  or an error before the swap) leaves the live version exactly as it was.
- **purge**: the row goes first, then its vector; a crash in between leaves an orphan vector,
  which the reconciler deletes.

Everything a client supplies is validated and screened before the first byte is stored.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from memvault.batcher import Arrival
from memvault.errors import InvalidRequest, NotFound, VaultError
from memvault.ids import canonical_uuid, uuid7
from memvault.scope import WILDCARD_READER
from memvault.store.models import LinkRow, NoteRow
from memvault.store.scoping import member_list, scoped_delete, scoped_update
from memvault.vault.drafts import (
    ACTIVE,
    DEDICATED,
    STAGED_FIELDS,
    NoteDraft,
    content_hash,
    staged_view,
    swap_in_next,
)
from memvault.vault.fields import (
    check_note_type,
    check_occurred_at,
    check_readers,
    check_session_id,
    check_source,
    check_text,
    check_topics,
    check_ttl,
)
from memvault.vault.group_commit import Prepared, StoreJob
from memvault.vault.isolation import check_dedicated_write
from memvault.vault.links import add_link, delete_links_of
from memvault.vault.notes import Note
from memvault.vault.provenance import UNTRUSTED, check_provenance, check_unshared, seal_into
from memvault.vault.rerank import note_flags
from memvault.vault.session_index import NewNote, SessionIndexer
from memvault.vault.sessions import (
    INDEX_VERSION,
    NO_CONTEXT,
    IndexContext,
    session_tag,
)

if TYPE_CHECKING:
    from memvault.vault.scoped_reads import ScopedReads

__all__ = ["STAGED_FIELDS", "NoteWriter", "Prepared", "staged_view", "swap_in_next"]


class NoteWriter:
    """Adds, updates, deletes and links notes as one scoped view."""

    def __init__(self, view: ScopedReads) -> None:
        self._view = view
        self._vault = view.vault
        self._parts = view.vault.parts
        self.scope = view.scope
        self.new_ids: set[str] = set()
        """The notes the last `add_many` stored (the others it returned were live twins)."""
        self._arrival: Arrival | None = None

    # -- add ----------------------------------------------------------------------------------

    def add_many(self, drafts: Sequence[NoteDraft]) -> list[Note]:
        """Validate and screen every draft, then store the new ones (indexed -> one transaction).

        One bad draft refuses the whole batch and stores nothing. An exact duplicate of a live
        note in the same scope returns the existing note instead of a copy. Concurrent adds
        share the store step (`memvault.vault.group_commit`): counted in while they prepare.
        """
        with self._vault.group_commit.arriving() as arrival:
            self._arrival = arrival
            return self._store_prepared([self.prepare(d) for d in drafts])

    def add_each(
        self, drafts: Sequence[NoteDraft], refusals: tuple[type[VaultError], ...]
    ) -> list[Note | VaultError]:
        """`add_many` with independent drafts: a draft whose validation or screen raises one of
        `refusals` gets that error in its place, and the others are stored together."""
        with self._vault.group_commit.arriving() as arrival:
            self._arrival = arrival
            outcomes: list[Prepared | VaultError] = []
            for draft in drafts:
                try:
                    outcomes.append(self.prepare(draft))
                except refusals as exc:
                    outcomes.append(exc)
            stored = iter(self._store_prepared([o for o in outcomes if isinstance(o, Prepared)]))
        return [next(stored) if isinstance(o, Prepared) else o for o in outcomes]

    def _store_prepared(self, prepared: Sequence[Prepared]) -> list[Note]:
        """Store prepared drafts (inside `group_commit.arriving`); a duplicate inside the
        batch returns the same note as its first copy."""
        results: list[Note | None] = [None] * len(prepared)
        fresh: list[tuple[int, Prepared]] = []
        seen: dict[str, int] = {}
        for i, item in enumerate(prepared):
            if item.row.content_hash not in seen:
                seen[item.row.content_hash] = i
                fresh.append((i, item))
        if fresh:
            self._store(fresh, results)
        for i, item in enumerate(prepared):
            if results[i] is None:  # a duplicate inside the batch: same as its first copy
                results[i] = results[seen[item.row.content_hash]]
        return [r for r in results if r is not None]

    def _store(self, fresh: list[tuple[int, Prepared]], results: list[Note | None]) -> None:
        """Index first, then ONE transaction: insert unless a live twin exists, count the corpus.

        The index and transaction steps run in a group commit with concurrent adds
        (`group_commit.store_batch`), which returns once they are durable. A crash before the
        commit leaves vectors without rows (orphans the reconciler deletes once they are older
        than its grace period), never a row without its vector; the caller acknowledges only
        after the commit. Contexts, twins and displaced successors stay this writer's own.
        """
        tenant, namespace = self.scope.tenant, self._view.namespace
        self._parts.corpus.ensure(tenant, namespace)
        indexer = SessionIndexer(self._vault)
        contexts, displaced = self._contexts(indexer, [item for _, item in fresh])
        job = StoreJob(tenant, namespace, [item for _, item in fresh], contexts)
        arrival, self._arrival = self._arrival, None
        refused: set[int] = self._vault.group_commit.submit(job, arrival)
        if displaced:  # notes written out of event order: their successors get a new context
            indexer.rebuild(displaced)
        twins: list[tuple[int, Prepared]] = []
        for k, (i, item) in enumerate(fresh):
            if k in refused:
                twins.append((i, item))
            else:
                results[i] = self._vault.note_of_plain(item.row, item.text, item.attrs)
                self.new_ids.add(item.row.id)
        if twins:
            self._resolve_twins(twins, results)

    def _contexts(
        self, indexer: SessionIndexer, items: list[Prepared]
    ) -> tuple[list[IndexContext], list[NoteRow]]:
        """Each new note's index context (session predecessor, date, A-MEM's extra), setting its
        token count, and the stored notes it displaces (written out of event order)."""
        tenant = self.scope.tenant
        contexts: list[IndexContext] = [NO_CONTEXT] * len(items)
        displaced: list[NoteRow] = []
        if any(item.row.session_tag or item.row.occurred_at is not None for item in items):
            with self._parts.db.session(tenant) as sess:
                contexts, displaced = indexer.contexts_for_new(
                    sess, [NewNote(item.row, item.text, item.tokens) for item in items]
                )
        if any(item.extra for item in items):
            contexts = [
                indexer.with_extra(ctx, tenant, item.extra, item.text)
                for ctx, item in zip(contexts, items, strict=True)
            ]
        for item, ctx in zip(items, contexts, strict=True):
            item.row.token_count = len(ctx.bm25_tokens(item.tokens))
        return contexts, displaced

    def _resolve_twins(self, twins: list[tuple[int, Prepared]], results: list[Note | None]) -> None:
        """Drafts a live twin refused: drop their vectors (indexed first) and return the twin.

        A crash before the delete leaves orphan vectors for the reconciler. A twin purged since
        the insert looked (a race) sends the draft through the add again.
        """
        self._parts.index.delete(self._view.namespace, [item.row.id for _, item in twins])
        again: list[tuple[int, Prepared]] = []
        for i, item in twins:
            row = item.row
            existing = self._view.find_duplicate(self._vault.row_scope(row), row.content_hash)
            if existing is None:
                again.append((i, item))
            else:
                results[i] = existing
        if again:
            self._store(again, results)

    def prepare(self, draft: NoteDraft) -> Prepared:
        """Validate, screen and encrypt one draft into a row (stored by `_store`)."""
        check_text(draft.text)
        kind = check_note_type(draft.note_type)
        topics = check_topics(draft.topics, kind)
        source = check_source(draft.source)
        ttl_days = check_ttl(draft.ttl_days)
        session_id = check_session_id(draft.session_id)
        occurred_at = check_occurred_at(draft.occurred_at)
        if session_id is not None:
            self._parts.gate.screen_ids(self.scope, "session_id", [session_id])
        if ttl_days is None:  # the tenant's default for the type, as of this write
            ttl_days = self._parts.gate.ttl_default(self.scope.tenant, kind)
        if draft.visibility not in ("private", "shared"):
            raise InvalidRequest("visibility must be 'private' or 'shared'")
        check_dedicated_write(
            self._view.dedicated, self.scope.agent, draft.visibility, draft.readers
        )
        shared = draft.visibility == "shared"
        private_readers = check_readers(draft.readers, self.scope.agent)  # validated either way
        provenance = check_provenance(draft.provenance)
        if provenance == UNTRUSTED:  # never shared, no reader but its owner (422)
            check_unshared(shared=shared, readers=draft.readers or ())
        # [0] is the owner, from the authenticated key; the others came from the client.
        self._parts.gate.screen_ids(self.scope, "readers", private_readers[1:])
        readers = [WILDCARD_READER] if shared else private_readers
        screened = self._parts.gate.screen_note(
            self.scope,
            text=draft.text,
            source=source,
            topics=topics,
            shared=shared,
            pseudonym=self._view.pii_pseudonym(),
        )
        storage = self.scope.shared if shared else self.scope
        index_key = self._parts.keyring.index_key(self.scope.tenant)
        now = self._parts.clock()
        note_id = uuid7()
        attrs: dict[str, Any] = {"topics": list(screened.topics), "source": screened.source}
        if session_id is not None:
            attrs["session_id"] = session_id
        if self._parts.hooks is not None:
            attrs.update(self._parts.hooks.construct(self.scope, screened.text, kind))
        tokens = tuple(self._vault.sparse_encoder(self.scope.tenant).tokens(screened.text))
        attrs.update(note_flags(screened.text, tokens))  # sealed below (vault/rerank.py)
        seal_into(attrs, provenance)  # sealed, never a clear column (vault/provenance.py)
        key_version, text_ct, attrs_ct = self._vault.codec.seal(
            storage, note_id, screened.text, attrs
        )
        row = NoteRow(
            tenant_id=storage.tenant,
            id=note_id,
            user_id=storage.user,
            agent_id=storage.agent,
            owner=self.scope.agent,
            readers=member_list(readers),
            writers=member_list([self.scope.agent]),
            visibility=DEDICATED if self._view.dedicated else draft.visibility,  # Mode B
            note_type=kind,
            status=ACTIVE,  # inserted only after its vector is in the index
            is_active=1,
            ephemeral=int("ephemeral" in screened.flags),
            suspicious=int("suspicious" in screened.flags),
            redacted_types=",".join(screened.redacted_types)[:128],
            created_at=now,
            updated_at=now,
            retrieval_count=0,
            last_accessed=now,
            expires_at=now + ttl_days * 86_400 if ttl_days else None,
            content_hash=content_hash(index_key.tag, storage, screened.text),
            token_count=len(tokens),
            key_version=key_version,
            model_id=self._parts.embedder.model_id,
            text_ct=text_ct,
            attrs_ct=attrs_ct,
            conflict=0,
            low_quality=0,
            session_tag=session_tag(index_key.tag, storage, session_id) if session_id else None,
            occurred_at=occurred_at,
            index_version=INDEX_VERSION,
        )
        return Prepared(row, screened.text, screened.topics, tokens, attrs)

    # -- delete and purge ----------------------------------------------------------------------

    def delete(self, note_id: str, *, purge: bool = False) -> None:
        """Soft delete (hidden from search and reads), or purge the row and then the vector.

        A note that an older version superseded hands the older one back: it is current again
        (its `supersedes` relation leads to a deleted note, which no reader sees)."""
        with self._vault.note_lock(note_id):
            row = self._view.writable_row(note_id, include_inactive=purge)
            if purge:
                self.purge(row)
                return
            self._deactivate(row)
            self._parts.index.set_payload(self._view.namespace, [row.id], {"is_active": 0})
            SessionIndexer(self._vault).refresh_successor(row, removed=True)

    def _deactivate(self, row: NoteRow) -> None:
        """Mark a row soft-deleted (`is_active` 0), in one transaction."""
        with self._parts.db.session(row.tenant_id) as sess:
            sess.execute(
                scoped_update(
                    self._view.readable,
                    NoteRow.id == row.id,
                    is_active=0,
                    updated_at=self._parts.clock(),
                )
            )

    def purge(self, row: NoteRow) -> None:
        """Delete the row, its links and statistics, then its vector (orphans are reconciled)."""
        namespace = self._view.namespace
        self._parts.marks.touch(row.tenant_id, [row.user_id])  # a crash may leave the vector
        with self._parts.db.session(row.tenant_id) as sess:
            delete_links_of(sess, row.tenant_id, [row.id])
            gone = sess.execute(scoped_delete(self._view.readable, NoteRow.id == row.id))
            if gone.rowcount:  # type: ignore[attr-defined]
                self._parts.corpus.adjust(sess, row.tenant_id, namespace, -1, -row.token_count)
        self._parts.index.delete(namespace, [row.id])
        if row.is_active:  # a soft-deleted note already handed its successor on
            SessionIndexer(self._vault).refresh_successor(row, removed=True)

    # -- links ----------------------------------------------------------------------------------

    def link(self, source_id: str, target_id: str) -> None:
        """Link a note the caller may write to another it may read (same tenant and user)."""
        if canonical_uuid(target_id) is None:
            raise NotFound("no such memory")
        source = self._view.writable_row(source_id)
        target = self._view.readable_row(target_id)
        if source.id == target.id:
            raise InvalidRequest("a note cannot link to itself")
        with self._parts.db.session(self.scope.tenant) as sess:
            if sess.get(LinkRow, (self.scope.tenant, source.id, target.id)) is None:
                tenant, user = self.scope.tenant, self.scope.user
                add_link(sess, tenant, user, source.id, target.id, self._parts.clock())
