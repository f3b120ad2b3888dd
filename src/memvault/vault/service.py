"""`Vault` and `ScopedVault`: the scoped, encrypted memory service.

A `ScopedVault` is held per principal; its scope comes from the authenticated key. Every SQL
statement goes through `store.scoping`, every vector query carries a `PointFilter` with the same
scope, and every result is re-checked on the way out (`ScopeViolation` on a mismatch).

Write protocol: row inserted `pending` -> vector upserted -> row `active`. A crash in between
leaves a pending row or an orphan vector; `Reconciler` repairs both.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import func, select

from memvault.errors import InvalidRequest, NotFound, PermissionDenied, ScopeViolation
from memvault.keyring import Keyring
from memvault.scope import SHARED_AGENT, WILDCARD_READER, Scope, validate_id
from memvault.vault.codec import NoteCodec
from memvault.vault.corpus import CorpusStats
from memvault.vault.embed.cache import CachedEmbedder
from memvault.vault.ids import canonical_uuid, uuid7
from memvault.vault.index.base import Hit, IndexPoint, PointFilter, VectorIndex
from memvault.vault.notes import Note, NoteType, SearchHit, Visibility
from memvault.vault.retrieval_log import RetrievalLog
from memvault.vault.screen_gate import ScreenGate
from memvault.vault.store.database import Database
from memvault.vault.store.models import NoteRow
from memvault.vault.store.scoping import (
    ReadableBy,
    member_list,
    parse_member_list,
    scoped_delete,
    scoped_select,
    scoped_update,
)
from memvault.vault.text import SparseEncoder

MAX_TEXT_CHARS = 32_000
MAX_TOPICS = 5
MAX_LIMIT = 100
PENDING = "pending"
ACTIVE = "active"

FaultHook = Callable[[str], None]


def _no_fault(_step: str) -> None:
    return None


@dataclass
class VaultParts:
    """Everything a vault is built from (constructor injection; fakes only in tests)."""

    db: Database
    keyring: Keyring
    index: VectorIndex
    embedder: CachedEmbedder
    gate: ScreenGate
    retrievals: RetrievalLog
    clock: Callable[[], float] = time.time
    corpus: CorpusStats = field(init=False)

    def __post_init__(self) -> None:
        self.corpus = CorpusStats(self.db)


def namespace_for(tenant: str) -> str:
    """Mode A: one vector namespace per tenant."""
    return tenant


class Vault:
    """The service root: hands out scoped views and runs tenant-wide operations."""

    def __init__(self, parts: VaultParts) -> None:
        self.parts = parts
        self.codec = NoteCodec(parts.keyring)
        self.fault: FaultHook = _no_fault

    def scoped(self, scope: Scope) -> ScopedVault:
        """A view that reads and writes as `scope` (from an authenticated key only)."""
        if scope.is_shared:
            raise InvalidRequest("the shared scope is written through visibility=shared")
        return ScopedVault(self, scope)

    # -- helpers shared by the scoped view, the reconciler and erasure --------------------

    def row_scope(self, row: NoteRow) -> Scope:
        return Scope(row.tenant_id, row.user_id, row.agent_id)

    def decrypt_row(self, row: NoteRow) -> Note:
        text, attrs = self.codec.open(
            self.row_scope(row), row.id, row.key_version, row.text_ct, row.attrs_ct
        )
        flags = [
            name
            for name, value in (
                ("ephemeral", row.ephemeral),
                ("suspicious", row.suspicious),
                ("conflict", row.conflict),
                ("low_quality", row.low_quality),
            )
            if value
        ]
        return Note(
            id=row.id,
            tenant=row.tenant_id,
            user=row.user_id,
            agent=row.agent_id,
            owner=row.owner,
            readers=tuple(parse_member_list(row.readers)),
            writers=tuple(parse_member_list(row.writers)),
            visibility="shared" if row.visibility == "shared" else "private",
            note_type="knowledge" if row.note_type == "knowledge" else "memory",
            text=text,
            topics=tuple(attrs.get("topics", ())),
            source=attrs.get("source"),
            created_at=row.created_at,
            updated_at=row.updated_at,
            last_accessed=row.last_accessed,
            retrieval_count=row.retrieval_count,
            flags=tuple(flags),
            redacted=tuple(t for t in row.redacted_types.split(",") if t),
            expires_at=row.expires_at,
        )

    def index_point(
        self, row: NoteRow, text: str, topics: Sequence[str], avgdl: float
    ) -> IndexPoint:
        """The vector point of a row: embeddings of its text and a payload without text."""
        return self.index_points([(row, text, topics)], avgdl)[0]

    def sparse_encoder(self, tenant: str) -> SparseEncoder:
        """BM25 encoder whose token ids are keyed by the tenant's index key."""
        return SparseEncoder(self.parts.keyring.index_key(tenant).token_id)

    def index_points(
        self, items: Sequence[tuple[NoteRow, str, Sequence[str]]], avgdl: float
    ) -> list[IndexPoint]:
        """Vector points for rows (dense embedded in one batch per scope, keyed BM25 sparse)."""
        vectors: dict[int, Any] = {}
        by_scope: dict[Scope, list[int]] = {}
        for i, (row, _, _) in enumerate(items):
            by_scope.setdefault(self.row_scope(row), []).append(i)
        for scope, positions in by_scope.items():
            embedded = self.parts.embedder.embed_documents(scope, [items[i][1] for i in positions])
            for pos, vector in zip(positions, embedded, strict=True):
                vectors[pos] = vector
        return [
            self._point(row, vectors[i], text, topics, avgdl)
            for i, (row, text, topics) in enumerate(items)
        ]

    def _point(
        self, row: NoteRow, vector: Any, text: str, topics: Sequence[str], avgdl: float
    ) -> IndexPoint:
        index_key = self.parts.keyring.index_key(row.tenant_id)
        sparse = self.sparse_encoder(row.tenant_id).encode_document(text, avgdl)
        return IndexPoint(
            id=row.id,
            dense=vector.tolist(),
            sparse=sparse if sparse.indices else None,
            payload={
                "user_id": row.user_id,
                "agent_id": row.agent_id,
                "readers": parse_member_list(row.readers),
                "is_active": int(row.is_active),
                "note_type": row.note_type,
                "topic_tags": [topic_tag(index_key.tag, t) for t in topics],
                "created_at": int(row.created_at),
                "model": self.parts.embedder.model_id,
            },
        )


@dataclass(frozen=True, slots=True)
class NoteDraft:
    """A note to add: what a caller may say about it (never its scope)."""

    text: str
    visibility: Visibility = "private"
    readers: Sequence[str] | None = None
    note_type: str = "memory"
    topics: Sequence[str] | None = None
    source: str | None = None
    ttl_days: float | None = None


def content_hash(tag: Callable[[str], str], storage: Scope, text: str) -> str:
    """Keyed hash for exact-duplicate checks within one storage scope."""
    return tag(f"note|{storage.user}|{storage.agent}|{text}")


def topic_tag(tag: Callable[[str], str], topic: str) -> str:
    """Blind tag of a topic: case-insensitive, keyed per tenant."""
    return tag("topic:" + topic.strip().casefold())


def _validate_topics(topics: Sequence[str] | None, note_type: str) -> tuple[str, ...]:
    clean = tuple(t.strip() for t in topics or () if t.strip())
    if len(clean) > MAX_TOPICS:
        raise InvalidRequest(f"topics holds at most {MAX_TOPICS} entries")
    if note_type == "knowledge" and not clean:
        raise InvalidRequest("knowledge notes need 1-5 topics")
    if any(len(t) > 64 for t in clean):
        raise InvalidRequest("a topic is at most 64 characters")
    return clean


def _validate_text(text: str, field: str = "text") -> str:
    if not isinstance(text, str) or not text.strip():
        raise InvalidRequest(f"{field} must be a non-empty string")
    if len(text) > MAX_TEXT_CHARS:
        raise InvalidRequest(f"{field} is longer than {MAX_TEXT_CHARS} characters")
    return text


def _validate_note_type(note_type: str) -> NoteType:
    if note_type not in ("memory", "knowledge"):
        raise InvalidRequest("note_type must be 'memory' or 'knowledge'")
    return "knowledge" if note_type == "knowledge" else "memory"


class ScopedVault:
    """Memory operations as one principal. Construct through `Vault.scoped`."""

    def __init__(self, vault: Vault, scope: Scope) -> None:
        self._vault = vault
        self._parts = vault.parts
        self.scope = scope
        self._readable = ReadableBy(scope)
        self.namespace = namespace_for(scope.tenant)
        self.vault = vault

    # -- writes -----------------------------------------------------------------------------

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
    ) -> Note:
        """Screen, encrypt, index and store a note. Returns it as stored (after redaction)."""
        draft = NoteDraft(text, visibility, readers, note_type, topics, source, ttl_days)
        return self.add_many([draft])[0]

    def add_many(self, drafts: Sequence[NoteDraft]) -> list[Note]:
        """Add several notes with one embedding batch, one index upsert and two transactions.

        Every draft is validated and screened before anything is stored, so one bad draft
        refuses the whole batch and stores nothing. An exact duplicate of a live note in the
        same scope returns the existing note instead of a copy.
        """
        prepared = [self._prepare(d) for d in drafts]
        results: list[Note | None] = [None] * len(prepared)
        fresh: list[tuple[int, NoteRow, str, tuple[str, ...]]] = []
        seen: dict[str, int] = {}
        for i, (row, text, topics) in enumerate(prepared):
            existing = self._find_duplicate(self._vault.row_scope(row), row.content_hash)
            if existing is not None:
                results[i] = existing
            elif row.content_hash in seen:
                continue
            else:
                seen[row.content_hash] = i
                fresh.append((i, row, text, topics))
        if fresh:
            encoder = self._vault.sparse_encoder(self.scope.tenant)
            for _, row, text, _ in fresh:
                row.token_count = len(encoder.tokens(text))
            tenant, namespace = self.scope.tenant, self.namespace
            self._parts.corpus.ensure(tenant, namespace)
            with self._parts.db.session(tenant) as sess:
                sess.add_all([row for _, row, _, _ in fresh])
                tokens = sum(row.token_count for _, row, _, _ in fresh)
                self._parts.corpus.adjust(sess, tenant, namespace, len(fresh), tokens)
                avgdl = self._parts.corpus.avgdl(sess, tenant, namespace)
            self._vault.fault("after_pending")
            points = self._vault.index_points([(r, t, tp) for _, r, t, tp in fresh], avgdl)
            self._parts.index.upsert(self.namespace, points)
            self._vault.fault("after_upsert")
            ids = [row.id for _, row, _, _ in fresh]
            with self._parts.db.session(self.scope.tenant) as sess:
                sess.execute(scoped_update(self._readable, NoteRow.id.in_(ids), status=ACTIVE))
            for i, row, _, _ in fresh:
                row.status = ACTIVE
                results[i] = self._vault.decrypt_row(row)
        for i, (row, _, _) in enumerate(prepared):
            if results[i] is None:  # a duplicate inside the batch: same as its first copy
                results[i] = results[seen[row.content_hash]]
        return [r for r in results if r is not None]

    def _prepare(self, draft: NoteDraft) -> tuple[NoteRow, str, tuple[str, ...]]:
        """Validate, screen and encrypt one draft into a pending row (not yet stored)."""
        _validate_text(draft.text)
        kind = _validate_note_type(draft.note_type)
        clean_topics = _validate_topics(draft.topics, kind)
        if draft.visibility not in ("private", "shared"):
            raise InvalidRequest("visibility must be 'private' or 'shared'")
        if draft.ttl_days is not None and not (0 < draft.ttl_days <= 36_500):
            raise InvalidRequest("ttl_days must be between 0 and 36500")
        shared = draft.visibility == "shared"
        screened = self._parts.gate.screen(self.scope, draft.text, shared=shared)
        storage = self.scope.shared if shared else self.scope
        if shared:
            reader_list = [WILDCARD_READER]
        else:
            extra = [validate_id(r, "readers") for r in draft.readers or ()]
            if SHARED_AGENT in extra or WILDCARD_READER in extra:
                raise InvalidRequest("use visibility=shared to share a note")
            reader_list = [self.scope.agent, *sorted(set(extra) - {self.scope.agent})]
        index_key = self._parts.keyring.index_key(self.scope.tenant)
        now = self._parts.clock()
        note_id = uuid7()
        attrs: dict[str, Any] = {"topics": list(clean_topics), "source": draft.source}
        key_version, text_ct, attrs_ct = self._vault.codec.seal(
            storage, note_id, screened.text, attrs
        )
        row = NoteRow(
            tenant_id=storage.tenant,
            id=note_id,
            user_id=storage.user,
            agent_id=storage.agent,
            owner=self.scope.agent,
            readers=member_list(reader_list),
            writers=member_list([self.scope.agent]),
            visibility=draft.visibility,
            note_type=kind,
            status=PENDING,
            is_active=1,
            ephemeral=int("ephemeral" in screened.flags),
            suspicious=int("suspicious" in screened.flags),
            redacted_types=",".join(screened.redacted_types),
            created_at=now,
            updated_at=now,
            retrieval_count=0,
            last_accessed=now,
            expires_at=now + draft.ttl_days * 86_400 if draft.ttl_days else None,
            content_hash=content_hash(index_key.tag, storage, screened.text),
            token_count=0,
            key_version=key_version,
            model_id=self._parts.embedder.model_id,
            text_ct=text_ct,
            attrs_ct=attrs_ct,
            conflict=0,
            low_quality=0,
        )
        return row, screened.text, clean_topics

    def update(
        self,
        note_id: str,
        *,
        text: str | None = None,
        topics: Sequence[str] | None = None,
        readers: Sequence[str] | None = None,
        source: str | None = None,
    ) -> Note:
        """Change a note you may write. Readers can be changed by the owner only."""
        row = self._writable_row(note_id)
        current = self._vault.decrypt_row(row)
        new_text = current.text
        changes: dict[str, Any] = {}
        if text is not None:
            _validate_text(text)
            screened = self._parts.gate.screen(
                self.scope, text, shared=row.agent_id == SHARED_AGENT
            )
            new_text = screened.text
            changes["ephemeral"] = int("ephemeral" in screened.flags)
            changes["suspicious"] = int("suspicious" in screened.flags)
            changes["redacted_types"] = ",".join(screened.redacted_types)
        new_topics = (
            _validate_topics(topics, row.note_type) if topics is not None else current.topics
        )
        if readers is not None:
            if row.owner != self.scope.agent or row.visibility == "shared":
                raise PermissionDenied("only the owner of a private note changes its readers")
            extra = [validate_id(r, "readers") for r in readers]
            if SHARED_AGENT in extra or WILDCARD_READER in extra:
                raise InvalidRequest("use visibility=shared to share a note")
            changes["readers"] = member_list([row.owner, *sorted(set(extra) - {row.owner})])
        attrs = {
            "topics": list(new_topics),
            "source": source if source is not None else current.source,
        }
        storage = self._vault.row_scope(row)
        key_version, text_ct, attrs_ct = self._vault.codec.seal(storage, row.id, new_text, attrs)
        index_key = self._parts.keyring.index_key(storage.tenant)
        now = self._parts.clock()
        changes.update(
            text_ct=text_ct,
            attrs_ct=attrs_ct,
            key_version=key_version,
            updated_at=now,
            status=PENDING,
            content_hash=content_hash(index_key.tag, storage, new_text),
            model_id=self._parts.embedder.model_id,
        )
        changes["token_count"] = len(self._vault.sparse_encoder(storage.tenant).tokens(new_text))
        with self._parts.db.session(storage.tenant) as sess:
            sess.execute(scoped_update(self._readable, NoteRow.id == row.id, **changes))
            self._parts.corpus.adjust(
                sess, storage.tenant, self.namespace, 0, changes["token_count"] - row.token_count
            )
            avgdl = self._parts.corpus.avgdl(sess, storage.tenant, self.namespace)
            fresh = sess.execute(scoped_select(self._readable, NoteRow.id == row.id)).scalar_one()
        self._parts.index.upsert(
            self.namespace, [self._vault.index_point(fresh, new_text, new_topics, avgdl)]
        )
        with self._parts.db.session(storage.tenant) as sess:
            sess.execute(scoped_update(self._readable, NoteRow.id == row.id, status=ACTIVE))
        fresh.status = ACTIVE
        return self._vault.decrypt_row(fresh)

    def delete(self, note_id: str, *, purge: bool = False) -> None:
        """Soft delete (hidden from search and reads), or purge the vector and the row."""
        row = self._writable_row(note_id, include_inactive=purge)
        if purge:
            self._vault_purge(row)
            return
        with self._parts.db.session(row.tenant_id) as sess:
            sess.execute(
                scoped_update(
                    self._readable,
                    NoteRow.id == row.id,
                    is_active=0,
                    updated_at=self._parts.clock(),
                )
            )
        self._parts.index.set_payload(self.namespace, [row.id], {"is_active": 0})

    def _vault_purge(self, row: NoteRow) -> None:
        from memvault.vault.links import delete_links_of

        self._parts.index.delete(self.namespace, [row.id])
        with self._parts.db.session(row.tenant_id) as sess:
            delete_links_of(sess, row.tenant_id, [row.id])
            self._parts.corpus.adjust(sess, row.tenant_id, self.namespace, -1, -row.token_count)
            sess.execute(scoped_delete(self._readable, NoteRow.id == row.id))

    # -- reads ------------------------------------------------------------------------------

    def get(self, note_id: str) -> Note:
        """A readable, active note by id; NotFound for anything else (never 403)."""
        return self._vault.decrypt_row(self._readable_row(note_id))

    def list_notes(self, *, limit: int = 50, offset: int = 0) -> tuple[list[Note], int]:
        """Readable active notes, newest first, and their total count."""
        if not (1 <= limit <= 1000) or offset < 0:
            raise InvalidRequest("limit must be 1-1000 and offset >= 0")
        live = self._live_clause()
        with self._parts.db.session(self.scope.tenant) as sess:
            rows = list(
                sess.execute(
                    scoped_select(self._readable, *live)
                    .order_by(NoteRow.created_at.desc(), NoteRow.id.desc())
                    .limit(limit)
                    .offset(offset)
                ).scalars()
            )
            total = sess.execute(
                select(func.count()).select_from(scoped_select(self._readable, *live).subquery())
            ).scalar_one()
        return [self._checked(self._vault.decrypt_row(r)) for r in rows], int(total)

    def search(
        self,
        query: str,
        *,
        limit: int = 5,
        topics: Sequence[str] | None = None,
        mode: str = "full",
    ) -> list[SearchHit]:
        """Search inside the caller's readable scopes.

        `mode`: `dense`, `sparse` (keyed BM25), `hybrid` (RRF of both in the store) or `full`
        (hybrid, heat with time decay, and up to 8 gated notes from a 2-hop link walk).
        """
        from memvault.vault.retrieve import HybridRetriever

        _validate_text(query, "query")
        if not (1 <= limit <= MAX_LIMIT):
            raise InvalidRequest(f"limit must be 1-{MAX_LIMIT}")
        return HybridRetriever(self).search(query, limit, topics, mode)

    def point_filter(self, topics: Sequence[str] | None = None) -> PointFilter:
        """The scope filter every vector query carries."""
        tags: tuple[str, ...] = ()
        if topics:
            key = self._parts.keyring.index_key(self.scope.tenant)
            tags = tuple(topic_tag(key.tag, t) for t in topics if t.strip())
        return PointFilter(
            user_id=self.scope.user,
            readers_any=(self.scope.agent, WILDCARD_READER),
            active_only=True,
            topic_tags=tags,
        )

    def hydrate(self, hits: Sequence[Hit], via: str = "search") -> list[SearchHit]:
        """Load and decrypt the notes behind index hits, re-checking every one's scope."""
        for hit in hits:
            payload = hit.payload
            if not self._readable.admits(
                self.scope.tenant, str(payload.get("user_id")), list(payload.get("readers", []))
            ):
                raise ScopeViolation("the index returned a point outside the caller's scopes")
        ids = [h.id for h in hits]
        if not ids:
            return []
        with self._parts.db.session(self.scope.tenant) as sess:
            rows = {
                r.id: r
                for r in sess.execute(
                    scoped_select(self._readable, NoteRow.id.in_(ids), *self._live_clause())
                ).scalars()
            }
        results = []
        for hit in hits:
            row = rows.get(hit.id)
            if row is None:  # derived index lagging the source of truth: skip, never widen
                continue
            results.append(SearchHit(self._checked(self._vault.decrypt_row(row)), hit.score, via))
        return results

    # -- internals --------------------------------------------------------------------------

    def _live_clause(self) -> tuple[Any, ...]:
        now = self._parts.clock()
        return (
            NoteRow.status == ACTIVE,
            NoteRow.is_active == 1,
            (NoteRow.expires_at.is_(None)) | (NoteRow.expires_at > now),
        )

    def _checked(self, note: Note) -> Note:
        if not self._readable.admits(note.tenant, note.user, list(note.readers)):
            raise ScopeViolation("a note outside the caller's scopes reached the exit")
        return note

    def _readable_row(self, note_id: str, include_inactive: bool = False) -> NoteRow:
        canonical = canonical_uuid(note_id)
        if canonical is None:
            raise NotFound("no such memory")
        where = [NoteRow.id == canonical]
        if not include_inactive:
            where.extend(self._live_clause())
        with self._parts.db.session(self.scope.tenant) as sess:
            row = sess.execute(scoped_select(self._readable, *where)).scalar_one_or_none()
        if row is None:
            raise NotFound("no such memory")
        readers = parse_member_list(row.readers)
        if not self._readable.admits(row.tenant_id, row.user_id, readers):
            raise ScopeViolation("a row outside the caller's scopes passed the SQL filter")
        return row

    def _writable_row(self, note_id: str, include_inactive: bool = False) -> NoteRow:
        row = self._readable_row(note_id, include_inactive=include_inactive)
        writers = parse_member_list(row.writers)
        if self.scope.agent not in writers and WILDCARD_READER not in writers:
            raise PermissionDenied("not a writer of this memory")
        return row

    def _find_duplicate(self, storage: Scope, content_hash: str) -> Note | None:
        with self._parts.db.session(storage.tenant) as sess:
            row = sess.execute(
                scoped_select(
                    self._readable,
                    NoteRow.agent_id == storage.agent,
                    NoteRow.content_hash == content_hash,
                    *self._live_clause(),
                ).limit(1)
            ).scalar_one_or_none()
        return None if row is None else self._checked(self._vault.decrypt_row(row))

    # -- links ------------------------------------------------------------------------------

    def link(self, source_id: str, target_id: str) -> None:
        """Link two notes the caller can read and write (same tenant and user by construction)."""
        from memvault.vault.store.models import LinkRow

        source = self._writable_row(source_id)
        target = self._readable_row(target_id)
        if source.id == target.id:
            raise InvalidRequest("a note cannot link to itself")
        with self._parts.db.session(self.scope.tenant) as sess:
            exists = sess.get(LinkRow, (self.scope.tenant, source.id, target.id))
            if exists is None:
                sess.add(
                    LinkRow(
                        tenant_id=self.scope.tenant,
                        src_id=source.id,
                        dst_id=target.id,
                        user_id=self.scope.user,
                        created_at=self._parts.clock(),
                    )
                )
