"""Keyset (cursor) pages over a scoped view's readable notes, newest first.

A list is ordered by `(created_at, id)` descending, and both never change for a note. A cursor
names the last note of a page by that key; the next page is every readable note strictly after
it. So a walk that deletes notes (or sees new ones written) never skips or repeats a note that
is alive for the whole walk: new notes sort before the cursor, deleted ones simply vanish.
An offset page (kept for compatibility) moves under writes: a delete shifts every later note
one place towards the front.

The cursor is opaque: `version | created_at (float64) | note id (16 bytes) | MAC`, in URL-safe
base64. The MAC is the tenant index key's keyed hash over the caller's user and agent and the
position, so a cursor edited by hand, or made for another key's scope, is `InvalidRequest`
(422), never a position. A cursor only positions within the caller's own readable list; the
query keeps its scope predicate whatever the cursor says.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import math
import struct
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sqlalchemy import ColumnElement, and_, func, or_, select

from memvault.errors import InvalidRequest
from memvault.store.models import NoteRow
from memvault.store.scoping import scoped_select
from memvault.vault.fields import MAX_LIST_LIMIT, MAX_OFFSET
from memvault.vault.notes import Note

if TYPE_CHECKING:
    from memvault.vault.scoped_reads import ScopedReads

MAX_CURSOR_CHARS = 128
"""Longer than any cursor this module writes (56 characters); the API bounds the parameter."""

_VERSION = b"\x01"
_POSITION = struct.Struct(">d16s")
_MAC_BYTES = 16
_CURSOR_BYTES = len(_VERSION) + _POSITION.size + _MAC_BYTES
_BAD_CURSOR = "cursor is not a cursor of this list (pass next_cursor back unchanged)"


@dataclass(frozen=True, slots=True)
class NotePage:
    """One page of a list: its notes, the total count, and the cursor of the next page (None
    after the last page)."""

    notes: list[Note]
    total: int
    next_cursor: str | None


def _mac(view: ScopedReads, position: bytes) -> bytes:
    key = view._parts.keyring.index_key(view.scope.tenant)
    label = f"memvault.list-cursor|{view.scope.user}|{view.scope.agent}|{position.hex()}"
    return bytes.fromhex(key.tag(label))[:_MAC_BYTES]


def encode_cursor(view: ScopedReads, created_at: float, note_id: str) -> str:
    """The cursor that positions a list of `view` just after the note (`created_at`, `note_id`)."""
    position = _POSITION.pack(created_at, uuid.UUID(note_id).bytes)
    raw = _VERSION + position + _mac(view, position)
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def decode_cursor(view: ScopedReads, cursor: str) -> tuple[float, str]:
    """The (created_at, note id) a cursor of `view` names; `InvalidRequest` for anything else
    (malformed, edited, or made for another scope)."""
    if not isinstance(cursor, str) or not cursor or len(cursor) > MAX_CURSOR_CHARS:
        raise InvalidRequest(_BAD_CURSOR)
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
    except (binascii.Error, ValueError):
        raise InvalidRequest(_BAD_CURSOR) from None
    if len(raw) != _CURSOR_BYTES or raw[:1] != _VERSION:
        raise InvalidRequest(_BAD_CURSOR)
    position, mac = raw[1 : 1 + _POSITION.size], raw[1 + _POSITION.size :]
    if not hmac.compare_digest(mac, _mac(view, position)):
        raise InvalidRequest(_BAD_CURSOR)
    created_at, id_bytes = _POSITION.unpack(position)
    if not math.isfinite(created_at):
        raise InvalidRequest(_BAD_CURSOR)
    return created_at, str(uuid.UUID(bytes=id_bytes))


def list_page(
    view: ScopedReads, *, limit: int = 50, offset: int = 0, cursor: str | None = None
) -> NotePage:
    """A page of `view`'s readable live notes, newest first: after `cursor` (keyset, stable
    under writes) or at `offset` (unstable under writes); never both."""
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIST_LIMIT:
        raise InvalidRequest(f"limit must be 1-{MAX_LIST_LIMIT}")
    if isinstance(offset, bool) or not isinstance(offset, int) or not 0 <= offset <= MAX_OFFSET:
        raise InvalidRequest(f"offset must be 0-{MAX_OFFSET}")
    live = view.live_clause()
    after: tuple[ColumnElement[bool], ...] = ()
    if cursor is not None:
        if offset:
            raise InvalidRequest("pass either cursor or offset, not both")
        created_at, note_id = decode_cursor(view, cursor)
        after = (
            or_(
                NoteRow.created_at < created_at,
                and_(NoteRow.created_at == created_at, NoteRow.id < note_id),
            ),
        )
    with view._parts.db.session(view.scope.tenant) as sess:
        rows = list(
            sess.execute(
                scoped_select(view.readable, *live, *after)
                .order_by(NoteRow.created_at.desc(), NoteRow.id.desc())
                .limit(limit + 1)
                .offset(offset)
            ).scalars()
        )
        total = sess.execute(
            select(func.count()).select_from(scoped_select(view.readable, *live).subquery())
        ).scalar_one()
        more = len(rows) > limit
        rows = rows[:limit]
        notes = [view._checked(view.vault.decrypt_row(r)) for r in rows]
    last = rows[-1] if more and rows else None
    next_cursor = encode_cursor(view, last.created_at, last.id) if last is not None else None
    return NotePage(notes, int(total), next_cursor)
