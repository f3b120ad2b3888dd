"""`Vault` and `ScopedVault`: the scoped, encrypted memory service.

A `ScopedVault` is held per principal; its scope comes from the authenticated key. Every SQL
statement goes through `store.scoping`, every vector query carries a `PointFilter` with the same
scope, and every result is re-checked on the way out (`ScopeViolation` on a mismatch). Every
operation runs inside the `ScopeGuard`, so an erase of the scope never races it.

The write paths and their crash-safety protocol live in `writes.py`; `Reconciler` repairs what a
crash between the steps leaves.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from typing import TYPE_CHECKING, Any

from memvault.batcher import InFlight
from memvault.errors import InvalidRequest
from memvault.index.base import IndexPoint
from memvault.scope import Scope
from memvault.store import agent_isolation
from memvault.store.codec import NoteCodec
from memvault.store.models import NoteRow
from memvault.store.records import NoteFields
from memvault.store.scoping import (
    ReadableBy,
)
from memvault.text import SparseEncoder
from memvault.vault.drafts import (
    ACTIVE,
    PENDING,
    NoteDraft,
    content_hash,
    namespace_for,
    topic_tag,
)
from memvault.vault.fields import (
    MAX_QUERY_CHARS,
    MAX_SEARCH_LIMIT,
    check_occurred_at,
    check_text,
    check_topics,
)
from memvault.vault.group_commit import DEFAULT_WINDOW_MS, GroupCommitter, store_batch
from memvault.vault.isolation import check_dedicated_readers
from memvault.vault.note_rows import note_from_row
from memvault.vault.note_update import NoteUpdater
from memvault.vault.notes import Note, SearchHit, Visibility
from memvault.vault.paging import NotePage, list_page
from memvault.vault.parts import FaultHook, VaultParts
from memvault.vault.provenance import TRUSTED, Provenance
from memvault.vault.relations import annotate_notes, drop_typed_relations
from memvault.vault.scoped_reads import ScopedReads
from memvault.vault.sessions import IndexContext

if TYPE_CHECKING:
    from memvault.vault.writes import NoteWriter

__all__ = [
    "ACTIVE",
    "PENDING",
    "NoteDraft",
    "ScopedVault",
    "Vault",
    "VaultParts",
    "content_hash",
    "namespace_for",
    "topic_tag",
]

NOTE_LOCK_STRIPES = 64


def _no_fault(_step: str) -> None:
    return None


class Vault:
    """The service root: hands out scoped views and runs tenant-wide operations."""

    def __init__(
        self,
        parts: VaultParts,
        *,
        group_commit: bool = True,
        group_commit_window_ms: float = DEFAULT_WINDOW_MS,
    ) -> None:
        self.parts = parts
        self.codec = NoteCodec(parts.keyring, erasing=parts.guard.erasing)
        self.fault: FaultHook = _no_fault
        self._note_locks = [threading.Lock() for _ in range(NOTE_LOCK_STRIPES)]
        self.group_commit = GroupCommitter(
            lambda jobs: store_batch(self, jobs),
            enabled=group_commit,
            window_ms=group_commit_window_ms,
        )
        """Concurrent adds share one embedding call, upsert and transaction (`group_commit`)."""
        self.adds_in_flight = InFlight()
        """The adds inside `ScopedVault.add_many` right now, their after-add hooks included."""

    @contextmanager
    def note_lock(self, *note_ids: str) -> Iterator[None]:
        """Serialize changes of these notes inside this process (striped locks).

        Each stripe is taken once, in stripe order, so two callers holding overlapping sets
        never deadlock.
        """
        stripes = sorted({hash(note_id) % NOTE_LOCK_STRIPES for note_id in note_ids})
        with ExitStack() as stack:
            for stripe in stripes:
                stack.enter_context(self._note_locks[stripe])
            yield

    def scoped(self, scope: Scope, *, dedicated: bool | None = None) -> ScopedVault:
        """A view that reads and writes as `scope` (from an authenticated key only).

        `dedicated`: the agent is Mode B (the key lookup says so, `Principal.dedicated`);
        None looks it up (`store.agent_isolation`: background work, one database read).
        """
        if scope.is_shared:
            raise InvalidRequest("the shared scope is written through visibility=shared")
        if dedicated is None:
            dedicated = agent_isolation.is_dedicated(
                self.parts.db, scope.tenant, scope.user, scope.agent
            )
        return ScopedVault(self, scope, dedicated=dedicated)

    # -- helpers shared by the scoped view, the reconciler and erasure --------------------

    def row_scope(self, row: NoteFields) -> Scope:
        return Scope(row.tenant_id, row.user_id, row.agent_id)

    def decrypt_row(self, row: NoteFields) -> Note:
        """The note a row holds: its text and attributes decrypted (and authenticated)."""
        text, attrs = self.codec.open(
            self.row_scope(row), row.id, row.key_version, row.text_ct, row.attrs_ct
        )
        return self.note_of_plain(row, text, attrs)

    @staticmethod
    def note_of_plain(row: NoteFields, text: str, attrs: Mapping[str, Any]) -> Note:
        """The note of a row whose plaintext the caller holds (`vault.note_rows`)."""
        return note_from_row(row, text, attrs)

    def index_point(
        self, row: NoteRow, text: str, topics: Sequence[str], avgdl: float
    ) -> IndexPoint:
        """The vector point of a row: embeddings of its text and a payload without text."""
        return self.index_points([(row, text, topics)], avgdl)[0]

    def sparse_encoder(self, tenant: str) -> SparseEncoder:
        """BM25 encoder whose token ids are keyed by the tenant's index key."""
        return SparseEncoder(self.parts.keyring.index_key(tenant).token_id)

    def index_points(
        self,
        items: Sequence[tuple[NoteRow, str, Sequence[str]]],
        avgdl: float,
        tokens: Sequence[Sequence[str]] | None = None,
        contexts: Sequence[IndexContext] | None = None,
    ) -> list[IndexPoint]:
        """Vector points for rows (dense embedded in one batch per scope, keyed BM25 sparse).

        `tokens`, parallel to `items`, passes each text's own BM25 tokens when the caller already
        has them (a write tokenizes once). `contexts` says what each note is indexed with
        besides its text (`memvault.vault.sessions`); when omitted, each stored row's context is
        read from SQL (its session predecessor and event date).
        """
        from memvault.vault.points import build_points

        if contexts is None:
            contexts = self.stored_contexts([row for row, _, _ in items])
        return build_points(self.parts, items, avgdl, tokens, contexts)

    def stored_contexts(self, rows: Sequence[NoteRow]) -> list[IndexContext]:
        """The index contexts of stored rows under the current rules."""
        from memvault.vault.session_index import SessionIndexer

        if not rows:
            return []
        indexer = SessionIndexer(self)
        tenant = rows[0].tenant_id
        with self.parts.db.session(tenant) as sess:
            return [indexer.context_of(sess, row) for row in rows]


class ScopedVault(ScopedReads):
    """Memory operations as one principal. Construct through `Vault.scoped`.

    The scope checks shared by its reads and writes (`point_filter`, `hydrate`, `check_hits`,
    `live_rows`, `readable_row`, ...) come from `ScopedReads` (`vault/scoped_reads.py`).
    """

    vault: Vault  # the whole service here; its helpers see only `VaultCore`

    def __init__(self, vault: Vault, scope: Scope, *, dedicated: bool = False) -> None:
        self._parts = vault.parts
        self.vault = vault
        self.scope = scope
        self.readable = ReadableBy(scope, own_only=dedicated)
        self.namespace = namespace_for(scope.tenant)

    @contextmanager
    def _guarded(self) -> Iterator[None]:
        with self._parts.guard.using(self.scope.tenant, self.scope.user, self.scope.agent):
            yield

    def _writer(self) -> NoteWriter:
        from memvault.vault.writes import NoteWriter

        return NoteWriter(self)

    # -- writes (writes.py) -------------------------------------------------------------------

    def add(
        self,
        text: str,
        *,
        visibility: Visibility = "private",
        readers: Sequence[str] | None = None,
        note_type: str = "memory",
        topics: Sequence[str] | None = None,
        source: str | None = None,
        ttl_days: float | None = None,
        session_id: str | None = None,
        occurred_at: float | str | None = None,
        provenance: Provenance = TRUSTED,
    ) -> Note:
        """Screen, encrypt, index and store a note. Returns it as stored (after redaction).

        `session_id` names the conversation or episode the note came from: the note is indexed
        together with its predecessor in that session (never returned as its content).
        `occurred_at` (epoch seconds or RFC 3339) is when the event happened. `provenance`
        `untrusted` (a write in a session marked untrusted) refuses sharing and readers
        (`memvault.vault.provenance`).
        """
        draft = NoteDraft(
            text,
            visibility,
            readers,
            note_type,
            topics,
            source,
            ttl_days,
            session_id,
            occurred_at,
            provenance,
        )
        return self.add_many([draft])[0]

    def add_many(self, drafts: Sequence[NoteDraft]) -> list[Note]:
        """Add several notes with one embedding batch and one index upsert.

        Every draft is validated and screened before anything is stored, so one bad draft
        refuses the whole batch and stores nothing. An exact duplicate of a live note in the
        same scope returns the existing note instead of a copy.
        """
        with self._guarded(), self.vault.adds_in_flight:
            writer = self._writer()
            notes = writer.add_many(drafts)
            hooks = self._parts.hooks
            if hooks is not None and writer.new_ids:
                notes = hooks.after_add(self, notes, writer.new_ids)
            return notes

    def links(self, note_id: str) -> list[tuple[str, str, float | None]]:
        """The readable notes linked to a readable note: (other id, kind, strength)."""
        from memvault.vault.links import links_of

        with self._guarded():
            row = self.readable_row(note_id)
            with self._parts.db.session(self.scope.tenant) as sess:
                found = links_of(sess, row.tenant_id, row.user_id, row.id)
                readable = self.live_rows(sess, [f[0] for f in found])
            return [f for f in found if f[0] in readable]

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
        """Change a note you may write. Readers can be changed by the owner only.

        A refused or invalid update changes nothing; the previous version stays readable until
        the new one is live. An `untrusted` update makes the note untrusted (for good), and is
        refused for a note that is shared or has readers (`memvault.vault.provenance`).
        """
        check_dedicated_readers(self.dedicated, self.scope.agent, readers)
        with self._guarded():
            note = NoteUpdater(self).update(
                note_id,
                text=text,
                topics=topics,
                readers=readers,
                source=source,
                provenance=provenance,
            )
            if text is not None or readers is not None:  # A-MEM's judgements no longer hold
                with self._parts.db.session(self.scope.tenant) as sess:
                    drop_typed_relations(sess, self.scope.tenant, note.id)
            return note

    def delete(self, note_id: str, *, purge: bool = False) -> None:
        """Soft delete (hidden from search and reads), or purge the row and the vector."""
        with self._guarded():
            self._writer().delete(note_id, purge=purge)

    def link(self, source_id: str, target_id: str) -> None:
        """Link two notes the caller can read and write (same tenant and user by construction)."""
        with self._guarded():
            self._writer().link(source_id, target_id)

    # -- reads ------------------------------------------------------------------------------

    def get(self, note_id: str) -> Note:
        """A readable, active note by id, with its validity and relations; NotFound for
        anything else (never 403). A superseded note answers too: it keeps its own text."""
        with self._guarded():
            return annotate_notes(self, [self.live_note(note_id)])[0]

    def list_notes(self, *, limit: int = 50, offset: int = 0) -> tuple[list[Note], int]:
        """Readable active notes, newest first, and their total count (by offset: a page
        moves when notes before it are deleted; `list_page` with a cursor does not)."""
        page = self.list_page(limit=limit, offset=offset)
        return page.notes, page.total

    def list_page(self, *, limit: int = 50, offset: int = 0, cursor: str | None = None) -> NotePage:
        """A page of readable active notes, newest first: after `cursor` (a `next_cursor`
        of this view: keyset, stable under writes) or at `offset`; `InvalidRequest` for a
        cursor that is not one of this view's."""
        with self._guarded():
            page = list_page(self, limit=limit, offset=offset, cursor=cursor)
        return NotePage(annotate_notes(self, page.notes), page.total, page.next_cursor)

    def search(
        self,
        query: str,
        *,
        limit: int = 5,
        topics: Sequence[str] | None = None,
        mode: str = "full",
        fusion: str | None = None,
        as_of: float | str | None = None,
        include_history: bool = False,
    ) -> list[SearchHit]:
        """Search inside the caller's readable scopes.

        `mode`: `dense`, `sparse` (keyed BM25), `hybrid` (both, fused by scores and re-ranked)
        or `full` (hybrid, heat with time decay, and up to 8 gated notes from a 2-hop link walk).
        `fusion`: `score` (the model's default) or `rrf` (the store's reciprocal rank fusion).
        By default only current notes are returned (a hit on an older version shows the version
        that superseded it, a restatement its canonical note); `as_of` (RFC 3339 or epoch
        seconds): what was valid then; `include_history`: superseded and invalidated notes too.
        Every result carries its validity and relations.
        """
        from memvault.vault.retrieve import HybridRetriever

        check_text(query, "query", MAX_QUERY_CHARS)
        clean_topics = check_topics(topics, "memory")
        if (
            isinstance(limit, bool)
            or not isinstance(limit, int)
            or not (1 <= limit <= MAX_SEARCH_LIMIT)
        ):
            raise InvalidRequest(f"limit must be 1-{MAX_SEARCH_LIMIT}")
        when = check_occurred_at(as_of, "as_of")
        if not isinstance(include_history, bool):
            raise InvalidRequest("include_history must be a boolean")
        with self._guarded():
            return HybridRetriever(self).search(
                query,
                limit,
                clean_topics,
                mode,
                fusion,
                as_of=when,
                include_history=include_history,
            )
