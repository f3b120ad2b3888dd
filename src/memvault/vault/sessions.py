"""Sessions and context-keyed indexing: what a note's vector point is built from besides its text.

A note written with a `session_id` is indexed together with its **predecessor**: the live note
of the same storage scope and session that comes just before it in event order (`occurred_at`,
or the write time, then id). The predecessor's text joins the note's BM25 tokens and its
embedding text; its event date joins the BM25 tokens in a normalised form that date queries
match. A note that stands alone (`memvault.text.standalone.stands_alone`: a statement about a
subject it names, not a reply) borrows nothing, and its point does not name its predecessor, so
ranking lifts neither by the other. The predecessor is read from the decrypted scoped view at
index time and is never part of the note's content. A predecessor is used only when every
reader of the note may read it too, so a reader never finds a note through words of a note it
cannot read.

`INDEX_VERSION` names these rules. A row records the version its point was built with; rows of
an older version (or another embedding model) are stale until `memvault reindex` rebuilds them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, and_, func, or_, select
from sqlalchemy.orm import Session

from memvault.scope import Scope
from memvault.store.models import NoteRow
from memvault.store.scoping import parse_member_list
from memvault.vault.drafts import ACTIVE

INDEX_VERSION = 4
"""1: a note's own text, BM25 k1 1.5 / b 0.75. 2: context-keyed (predecessor text and event
date), BM25 k1 0.9 / b 0.4. 3: the fixed `BM25_AVGDL` instead of the namespace's mean length,
and the keyed token ids in the payload (`terms`), so IDF is counted over the reader's readable
set (issue 32). 4: a note that stands alone (`memvault.text.standalone`: a statement about a
subject it names) borrows nothing from its predecessor and its point names none (issue 31)."""


def session_tag(tag: Callable[[str], str], storage: Scope, session_id: str) -> str:
    """The keyed tag of a session within one storage scope: two users (or agents) with the same
    session id get different tags, so a session never joins notes across scopes."""
    return tag(f"session|{storage.user}|{storage.agent}|{session_id}")


def event_time(row: NoteRow) -> float:
    """When the note's event happened: its `occurred_at`, or its write time."""
    return row.occurred_at if row.occurred_at is not None else row.created_at


def order_key(row: NoteRow) -> tuple[float, str]:
    """A note's place in its session: event time, then id (uuid7 ids follow write order)."""
    return (event_time(row), row.id)


@dataclass(frozen=True, slots=True)
class IndexContext:
    """What a note is indexed with besides its own text."""

    prev_id: str | None = None
    """The predecessor (the session's `sequence` link), borrowed from or not."""
    prev_text: str = ""
    prev_tokens: tuple[str, ...] = ()
    date_tokens: tuple[str, ...] = ()
    extra_text: str = ""
    """A-MEM's context when it says more than the note's text (`enrichment_embed_text`)."""
    extra_tokens: tuple[str, ...] = ()
    """BM25 tokens of A-MEM's keywords and context (`enrichment_text`)."""
    alone: bool = False
    """The note stands alone (`memvault.text.standalone`): it borrows nothing from its
    predecessor, and its point names no predecessor, so neither lifts the other in ranking."""

    @property
    def ranked_prev(self) -> str | None:
        """The predecessor the point's payload names (`prev`): None for a note that stands
        alone."""
        return None if self.alone else self.prev_id

    def embed_text(self, text: str) -> str:
        """The text the dense vector embeds: the predecessor's, the note's own, then A-MEM's
        keywords and context."""
        body = f"{self.prev_text}\n{text}" if self.prev_text else text
        return f"{body}\n{self.extra_text}" if self.extra_text else body

    def bm25_tokens(self, own: Sequence[str]) -> list[str]:
        """The BM25 tokens: the note's own, the predecessor's, the event date's and A-MEM's."""
        return [*own, *self.prev_tokens, *self.date_tokens, *self.extra_tokens]


NO_CONTEXT = IndexContext()


def enrichment_embed_text(attrs: Mapping[str, Any], text: str) -> str:
    """What A-MEM adds to a note's embedding text: its context, unless the note's text already
    says it (the offline judge's context is the text's first clause: embedding it again, or the
    keywords, only skews the vector towards its rarest words)."""
    context = attrs.get("context")
    if not isinstance(context, str) or not context.strip():
        return ""
    squash = " ".join(context.casefold().split()).rstrip(".")
    return "" if squash in " ".join(text.casefold().split()) else context


def enrichment_text(attrs: Mapping[str, Any]) -> str:
    """The text A-MEM's construction adds to a note's BM25 tokens: keywords, then context."""
    keywords = " ".join(str(k) for k in attrs.get("keywords", ()) if isinstance(k, str))
    context = attrs.get("context")
    parts = [keywords, context if isinstance(context, str) else ""]
    return " ".join(p for p in parts if p).strip()


def may_borrow(note: NoteRow, predecessor: NoteRow) -> bool:
    """True when every reader of `note` may read `predecessor` (same storage scope assumed)."""
    theirs = set(parse_member_list(predecessor.readers))
    if "*" in theirs:
        return True
    return set(parse_member_list(note.readers)) <= theirs


def _session_rows(storage: Scope, tag: str) -> list[ColumnElement[bool]]:
    return [
        NoteRow.tenant_id == storage.tenant,
        NoteRow.user_id == storage.user,
        NoteRow.agent_id == storage.agent,
        NoteRow.session_tag == tag,
        NoteRow.status == ACTIVE,
        NoteRow.is_active == 1,
    ]


def _event_expr() -> Any:
    return func.coalesce(NoteRow.occurred_at, NoteRow.created_at)


def latest_before(
    sess: Session, storage: Scope, tag: str, key: tuple[float, str] | None, *, exclude: str = ""
) -> NoteRow | None:
    """The live note of the session just before `key` in event order (the last one when `key`
    is None); `exclude` leaves one id out (a note being deleted)."""
    return _adjacent(sess, storage, tag, key, exclude, after=False)


def first_after(
    sess: Session, storage: Scope, tag: str, key: tuple[float, str], *, exclude: str = ""
) -> NoteRow | None:
    """The live note of the session just after `key` in event order (its successor)."""
    return _adjacent(sess, storage, tag, key, exclude, after=True)


def _adjacent(
    sess: Session,
    storage: Scope,
    tag: str,
    key: tuple[float, str] | None,
    exclude: str,
    *,
    after: bool,
) -> NoteRow | None:
    """The nearest live note of the session on one side of `key` (any note when None)."""
    event = _event_expr()
    where = _session_rows(storage, tag)
    if key is not None:
        when, ident = key
        if after:
            where.append(or_(event > when, and_(event == when, NoteRow.id > ident)))
        else:
            where.append(or_(event < when, and_(event == when, NoteRow.id < ident)))
    if exclude:
        where.append(NoteRow.id != exclude)
    order = (event.asc(), NoteRow.id.asc()) if after else (event.desc(), NoteRow.id.desc())
    statement = select(NoteRow).where(*where).order_by(*order).limit(1)
    return sess.execute(statement).scalar_one_or_none()
