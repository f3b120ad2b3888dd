"""The data subject access export: every note and link one user has in a tenant, decrypted.

`DsarExport` reads exactly one `(tenant, user)`: every agent's notes, the user's shared notes, and
the links between them. Rows are selected through `OwnedBy(tenant, user)` (the scoped-predicate
helper), read in keyset-ordered batches so nothing holds the whole export in memory, and each row's
tenant and user are checked again before it is handed out: a mismatch raises `ScopeViolation`
rather than writing another person's data into the export.

What is in it: active notes, including soft-deleted ones (`active=False`), which are still held;
not expired notes (their TTL has passed: no read returns them, and the retention sweep deletes
them), nor pending writes a crash left unfinished. Links are listed when both ends are in it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

from sqlalchemy import ColumnElement, Select, and_, func, select
from sqlalchemy.orm import Session

from memvault.errors import ScopeViolation
from memvault.store.models import LinkRow, NoteRow
from memvault.store.scoping import OwnedBy, scoped_select
from memvault.vault.drafts import ACTIVE
from memvault.vault.notes import Note
from memvault.vault.service import Vault

BATCH = 200
"""Rows read (and decrypted) per query."""

K = TypeVar("K")
R = TypeVar("R")
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class ExportedNote:
    """One decrypted note of the subject; `active` is False for a soft-deleted note."""

    note: Note
    active: bool
    history: tuple[dict[str, Any], ...] = ()
    """A-MEM's evolution history (sealed with the note): each step's time, action and the
    text the note had before it."""


@dataclass(frozen=True, slots=True)
class ExportedLink:
    """A link or typed relation between two exported notes (`kind`, read from source)."""

    source_id: str
    target_id: str
    created_at: float
    kind: str = "link"


@dataclass(frozen=True, slots=True)
class ExportSummary:
    """Who the export is about, when it was taken, and how many notes and links it holds."""

    tenant: str
    user: str
    at: float
    notes: int
    links: int


class DsarExport:
    """One user's data in one tenant, read in batches. Construct per request.

    Expiry is judged at one instant, the vault clock when the export is created, and notes
    written after it are left out, so the summary and the rows agree unless a note is deleted
    while the export runs. Each batch runs inside the scope guard: an
    erase of the user that starts during the export stops it (`ScopeErasing`) instead of racing it.
    """

    def __init__(self, vault: Vault, tenant: str, user: str, *, batch: int = BATCH) -> None:
        self._owner = OwnedBy(tenant, user)  # validates both ids
        self._vault = vault
        self._parts = vault.parts
        self.tenant = tenant
        self.user = user
        self.at = self._parts.clock()
        self._batch = batch

    def _note_where(self) -> tuple[ColumnElement[bool], ...]:
        unexpired = NoteRow.expires_at.is_(None) | (NoteRow.expires_at > self.at)
        return (NoteRow.status == ACTIVE, NoteRow.created_at <= self.at, unexpired)

    def _note_ids(self) -> Any:
        """The subject's exported note ids, as a subquery (for the link predicate)."""
        return scoped_select(self._owner, *self._note_where()).with_only_columns(NoteRow.id)

    def _link_where(self) -> tuple[ColumnElement[bool], ...]:
        ids = self._note_ids()
        return (
            LinkRow.tenant_id == self.tenant,
            LinkRow.user_id == self.user,
            LinkRow.src_id.in_(ids),
            LinkRow.dst_id.in_(ids),
        )

    @contextmanager
    def _session(self) -> Iterator[Session]:
        """A tenant session inside the scope guard (an erase that starts stops the export)."""
        with (
            self._parts.guard.using(self.tenant, self.user),
            self._parts.db.session(self.tenant) as sess,
        ):
            yield sess

    def _batches(
        self,
        after: K,
        page: Callable[[K], Select[R]],
        key: Callable[[R], K],
        convert: Callable[[R], T],
    ) -> Iterator[list[T]]:
        """Keyset paging: `page(after)` selects the rows past `after` in key order, `key(row)` is
        a row's key; each batch is read and converted in a session of its own."""
        while True:
            with self._session() as sess:
                rows = list(sess.execute(page(after).limit(self._batch)).scalars())
                batch = [convert(row) for row in rows]
            if batch:
                yield batch
            if len(rows) < self._batch:
                return
            after = key(rows[-1])

    def summary(self) -> ExportSummary:
        """The counts of notes and links the export holds."""
        with self._session() as sess:
            notes = sess.execute(
                select(func.count()).select_from(
                    scoped_select(self._owner, *self._note_where()).subquery()
                )
            ).scalar_one()
            links = sess.execute(
                select(func.count()).select_from(LinkRow).where(*self._link_where())
            ).scalar_one()
        return ExportSummary(self.tenant, self.user, self.at, int(notes), int(links))

    def note_batches(self) -> Iterator[list[ExportedNote]]:
        """The subject's notes, oldest id first, one decrypted batch at a time."""

        def page(after: str) -> Select[NoteRow]:
            where = (*self._note_where(), NoteRow.id > after)
            return scoped_select(self._owner, *where).order_by(NoteRow.id)

        yield from self._batches("", page, lambda row: row.id, self._exported)

    def link_batches(self) -> Iterator[list[ExportedLink]]:
        """Links between the subject's exported notes, one batch at a time."""

        def page(after: tuple[str, str]) -> Select[LinkRow]:
            keyset = (LinkRow.src_id > after[0]) | and_(
                LinkRow.src_id == after[0], LinkRow.dst_id > after[1]
            )
            return (
                select(LinkRow)
                .where(*self._link_where(), keyset)
                .order_by(LinkRow.src_id, LinkRow.dst_id)
            )

        yield from self._batches(("", ""), page, lambda row: (row.src_id, row.dst_id), self._link)

    def _exported(self, row: NoteRow) -> ExportedNote:
        if row.tenant_id != self.tenant or row.user_id != self.user:
            raise ScopeViolation("a note of another subject reached the export")
        note = self._vault.decrypt_row(row)
        if note.tenant != self.tenant or note.user != self.user:
            raise ScopeViolation("a note of another subject reached the export")
        _, attrs = self._vault.codec.open(
            self._vault.row_scope(row), row.id, row.key_version, row.text_ct, row.attrs_ct
        )
        history = tuple(h for h in attrs.get("evolution_history", ()) if isinstance(h, dict))
        return ExportedNote(note, bool(row.is_active), history)

    def _link(self, row: LinkRow) -> ExportedLink:
        if row.tenant_id != self.tenant or row.user_id != self.user:
            raise ScopeViolation("a link of another subject reached the export")
        return ExportedLink(row.src_id, row.dst_id, row.created_at, str(row.kind))
