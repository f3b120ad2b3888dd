"""`ScopedReads`: the scope checks of a `ScopedVault`, shared by its reads and its writes.

Every vector query carries `point_filter`; every hit is checked against the caller's index tags
(`check_hits`) and read back from SQL in the caller's scope (`live_rows`, planned as primary-key
lookups); every note is re-checked at the exit (`_checked`). A row the caller may not read is
`NotFound`, one it may read but not write is `PermissionDenied`.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from sqlalchemy import ColumnElement, CompoundSelect, Select, bindparam, false

from memvault.errors import NotFound, PermissionDenied, ScopeViolation
from memvault.ids import canonical_uuid
from memvault.index.base import Hit, PointFilter
from memvault.scope import WILDCARD_READER, Scope, may_write
from memvault.store.driver_sql import DriverStatement
from memvault.store.models import NoteRow
from memvault.store.records import RECORD_COLUMNS, NoteFields, NoteRecord, record_of
from memvault.store.scoping import (
    ReadableBy,
    parse_member_list,
    scoped_select,
    scoped_select_bound,
    scoped_select_ids,
)
from memvault.vault.drafts import ACTIVE, agent_tag, dedicated_tag, topic_tag, user_tag
from memvault.vault.links import note_has_links
from memvault.vault.notes import Note, SearchHit
from memvault.vault.screen_gate import Pseudonym, keyed_pseudonym

if TYPE_CHECKING:
    from memvault.vault.parts import VaultCore, VaultParts


class ScopedReads:
    """The read side of a scoped view (mixed into `ScopedVault`, which sets the attributes)."""

    vault: VaultCore
    scope: Scope
    readable: ReadableBy
    namespace: str
    _parts: VaultParts

    def point_filter(self, topics: Sequence[str] | None = None) -> PointFilter:
        """The scope filter every vector query carries."""
        tags: tuple[str, ...] = ()
        if topics:
            key = self._parts.keyring.index_key(self.scope.tenant)
            tags = tuple(topic_tag(key.tag, t) for t in topics if t.strip())
        user, readers = self.index_tags()
        return PointFilter(user_id=user, readers_any=readers, active_only=True, topic_tags=tags)

    def index_tags(self) -> tuple[str, tuple[str, ...]]:
        """The caller's blind partition tag and reader tags in the index: its user's and its
        agent and `*` (Mode A), or its own partition and its agent alone (Mode B)."""
        tag = self._parts.keyring.index_key(self.scope.tenant).tag
        if self.readable.own_only:
            return dedicated_tag(tag, self.scope.user, self.scope.agent), (
                agent_tag(tag, self.scope.agent),
            )
        return user_tag(tag, self.scope.user), (
            agent_tag(tag, self.scope.agent),
            agent_tag(tag, WILDCARD_READER),
        )

    @property
    def dedicated(self) -> bool:
        """Whether this view is a dedicated (Mode B) agent's (`store.agent_isolation`)."""
        return self.readable.own_only

    def pii_pseudonym(self) -> Pseudonym:
        """The keyed pseudonym the write screen puts in this tenant's PII placeholders (under
        the same index key as `index_tags`)."""
        return keyed_pseudonym(self._parts.keyring.index_key(self.scope.tenant).tag)

    def hydrate(self, hits: Sequence[Hit], via: str = "search") -> list[SearchHit]:
        """Load and decrypt the notes behind index hits, re-checking every one's scope."""
        self.check_hits(hits)
        rows = self.live_records([h.id for h in hits])
        results = []
        for hit in hits:
            row = rows.get(hit.id)
            if row is None:  # derived index lagging the source of truth: skip, never widen
                continue
            results.append(SearchHit(self.note_of(row), hit.score, via))
        return results

    def check_hits(self, hits: Sequence[Hit]) -> None:
        """ScopeViolation unless every hit's payload carries the caller's user and a reader."""
        user, readers = self.index_tags()
        for hit in hits:
            payload = hit.payload
            if payload.get("user_id") != user or not set(readers) & set(payload.get("readers", [])):
                raise ScopeViolation("the index returned a point outside the caller's scopes")

    def live_rows(self, sess: Any, ids: Sequence[str] | CompoundSelect) -> dict[str, NoteRow]:
        """The rows with these ids the caller may read now (live, in its scopes): one statement,
        planned as primary-key lookups."""
        statement = scoped_select_ids(self.readable, ids, *self.live_clause())
        return {r.id: r for r in sess.execute(statement).scalars()}

    def live_records(
        self, ids: Sequence[str], *, with_links: bool = False
    ) -> dict[str, NoteRecord]:
        """`live_rows` for a search's hits, run on the driver's cursor: the records of the
        notes with these ids the caller may read now, in one statement per 512 ids, compiled
        once per size bucket with the scope as bound parameters. `with_links`: each record
        also says whether its note has any link (else `has_links` is false)."""
        unique = list(dict.fromkeys(ids))
        found: dict[str, NoteRecord] = {}
        if not unique:
            return found
        scope_values = {**self.readable.bound_values(), "now": self._parts.clock()}
        with self._parts.db.driver_transaction(self.scope.tenant) as conn:
            for start in range(0, len(unique), MAX_IDS_PER_READ):
                chunk = unique[start : start + MAX_IDS_PER_READ]
                size = id_bucket(len(chunk))
                # padded with the last id: a repeated id in `IN (...)` matches nothing new
                params = {f"id_{i}": chunk[min(i, len(chunk) - 1)] for i in range(size)}
                statement = _live_by_ids(size, with_links, self.readable.own_only)
                for values in statement.rows(conn, {**params, **scope_values}):
                    record = record_of(tuple(values))
                    found[record.id] = record
        return found

    def live_note(self, note_id: str) -> Note:
        """A readable, live note by id (`live_records`, decrypted); NotFound for anything else."""
        canonical = canonical_uuid(note_id) if isinstance(note_id, str) else None
        record = self.live_records([canonical]).get(canonical) if canonical else None
        if record is None:
            raise NotFound("no such memory")
        return self.note_of(record)

    def note_of(self, row: NoteFields) -> Note:
        """Decrypt a row from `live_rows` or `live_records`, re-checking its scope at the exit."""
        return self._checked(self.vault.decrypt_row(row))

    def readable_ids(self, note_ids: Sequence[str]) -> set[str]:
        """The subset of `note_ids` the caller may read now (live, in its scopes)."""
        if not note_ids:
            return set()
        with self._parts.db.session(self.scope.tenant) as sess:
            return set(
                sess.execute(
                    scoped_select(
                        self.readable, NoteRow.id.in_(list(note_ids)), *self.live_clause()
                    ).with_only_columns(NoteRow.id)
                ).scalars()
            )

    # -- helpers shared with the write paths ---------------------------------------------------

    def live_clause(self) -> tuple[Any, ...]:
        """Active, not soft-deleted and not expired now (expiry needs no sweep to take effect)."""
        return (NoteRow.status == ACTIVE, NoteRow.is_active == 1, self.unexpired_clause())

    def unexpired_clause(self) -> Any:
        """Not expired at the vault clock's now: a note is gone from the moment it expires."""
        now = self._parts.clock()
        return (NoteRow.expires_at.is_(None)) | (NoteRow.expires_at > now)

    def _checked(self, note: Note) -> Note:
        if not self.readable.admits(note.tenant, note.user, list(note.readers), note.agent):
            raise ScopeViolation("a note outside the caller's scopes reached the exit")
        return note

    def readable_row(self, note_id: str, include_inactive: bool = False) -> NoteRow:
        """The row of a note the caller may read; NotFound for anything else."""
        canonical = canonical_uuid(note_id) if isinstance(note_id, str) else None
        if canonical is None:
            raise NotFound("no such memory")
        params = {**self.readable.bound_values(), "id": canonical, "now": self._parts.clock()}
        with self._parts.db.session(self.scope.tenant) as sess:
            statement = _ROW_BY_ID[(include_inactive, self.readable.own_only)]
            row = sess.execute(statement, params).scalar_one_or_none()
        if row is None:
            raise NotFound("no such memory")
        readers = parse_member_list(row.readers)
        if not self.readable.admits(row.tenant_id, row.user_id, readers, row.agent_id):
            raise ScopeViolation("a row outside the caller's scopes passed the SQL filter")
        return row

    def writable_row(self, note_id: str, include_inactive: bool = False) -> NoteRow:
        """The row of a note the caller may write; PermissionDenied for a reader only."""
        row = self.readable_row(note_id, include_inactive=include_inactive)
        writers = parse_member_list(row.writers)
        if not may_write(self.scope.agent, writers):
            raise PermissionDenied("not a writer of this memory")
        return row

    def find_duplicate(self, storage: Scope, digest: str) -> Note | None:
        """A live note of `storage` with the same keyed content hash, if any."""
        with self._parts.db.session(storage.tenant) as sess:
            row = sess.execute(
                scoped_select(
                    self.readable,
                    NoteRow.agent_id == storage.agent,
                    NoteRow.content_hash == digest,
                    *self.live_clause(),
                ).limit(1)
            ).scalar_one_or_none()
        return None if row is None else self._checked(self.vault.decrypt_row(row))


MAX_IDS_PER_READ = 512


def id_bucket(count: int) -> int:
    """The id-list size a statement is compiled for: the next power of two, at least 8."""
    return max(8, 1 << (count - 1).bit_length())


def _bound_live(*, include_inactive: bool = False) -> tuple[ColumnElement[bool], ...]:
    """`live_clause` with the clock as the bound parameter `now`; `include_inactive`: soft-
    deleted notes too (for a purge), as `readable_row` allows, never expired ones."""
    unexpired = NoteRow.expires_at.is_(None) | (NoteRow.expires_at > bindparam("now"))
    active = () if include_inactive else (NoteRow.is_active == 1,)
    return (NoteRow.status == ACTIVE, *active, unexpired)


@functools.cache
def _live_by_ids(size: int, with_links: bool, own_only: bool = False) -> DriverStatement:
    """`scoped_select_ids` with the live clause, for `size` ids, as a driver statement
    (`own_only`: a Mode B reader's rule, `ReadableBy.own_only`)."""
    links = note_has_links() if with_links else false()
    statement = scoped_select_bound(
        NoteRow.id.in_([bindparam(f"id_{i}", type_=NoteRow.id.type) for i in range(size)]),
        *_bound_live(),
        columns=(*RECORD_COLUMNS, links.label("has_links")),
        own_only=own_only,
    )
    return DriverStatement(statement, "select")


_ROW_BY_ID: dict[tuple[bool, bool], Select[Any]] = {
    (flag, own): scoped_select_bound(
        NoteRow.id == bindparam("id", type_=NoteRow.id.type),
        *_bound_live(include_inactive=flag),
        own_only=own,
    )
    for flag in (False, True)
    for own in (False, True)
}
"""One note by id (`readable_row`), by (`include_inactive`, Mode B), the scope bound at execution:
building the statement per call cost more than running it."""
