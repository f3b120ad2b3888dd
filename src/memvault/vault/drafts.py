"""What a write is made of before it is stored: drafts, row states, keyed hashes, tags, and the
statements that store a new row and swap in an update's staged version."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Table, bindparam, cast, exists, insert, literal, or_, select
from sqlalchemy.orm import Session

from memvault.errors import InvalidRequest
from memvault.scope import Scope
from memvault.store.corpus import CorpusStats
from memvault.store.driver_sql import DriverStatement
from memvault.store.models import NoteRow
from memvault.store.scoping import OwnedBy, scoped_update
from memvault.vault.notes import Provenance, Visibility

PENDING = "pending"
"""A new row whose vector may not be written yet (the reconciler completes it)."""
ACTIVE = "active"
NEXT_COLUMNS = ("next_text_ct", "next_attrs_ct", "next_state", "next_at")


def namespace_for(tenant: str) -> str:
    """Mode A: one vector namespace per tenant."""
    return tenant


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
    session_id: str | None = None
    occurred_at: float | str | None = None
    """Epoch seconds or an RFC 3339 time; None: the write time."""
    provenance: Provenance = "trusted"
    """`untrusted`: written in a session marked untrusted (`memvault.vault.provenance`)."""


def content_hash(tag: Callable[[str], str], storage: Scope, text: str) -> str:
    """Keyed hash for exact-duplicate checks within one storage scope."""
    return tag(f"note|{storage.user}|{storage.agent}|{text}")


def user_tag(tag: Callable[[str], str], user: str) -> str:
    """Blind tag of a user id in the vector index (the partition key of its points)."""
    return tag("user:" + user)


DEDICATED = "dedicated"
"""The stored `visibility` of a dedicated (Mode B) agent's notes: read back as `private`, and
indexed in the agent's own partition (`partition_tag`)."""


def dedicated_tag(tag: Callable[[str], str], user: str, agent: str) -> str:
    """Blind partition key of a dedicated (Mode B) agent: its own partition, apart from its
    user's (`user_tag`). Ids never hold `:`, so no user and agent pair shares one."""
    return tag("dedicated:" + user + ":" + agent)


def partition_tag(tag: Callable[[str], str], user: str, agent: str, visibility: str) -> str:
    """The partition key (the point's `user_id`) of a note stored with `visibility`."""
    return dedicated_tag(tag, user, agent) if visibility == DEDICATED else user_tag(tag, user)


def agent_tag(tag: Callable[[str], str], agent: str) -> str:
    """Blind tag of an agent or reader id (`*` included) in the vector index."""
    return tag("agent:" + agent)


def topic_tag(tag: Callable[[str], str], topic: str) -> str:
    """Blind tag of a topic: case-insensitive, keyed per tenant."""
    return tag("topic:" + topic.strip().casefold())


# The non-secret fields an update stages in `next_state` (JSON): ids, flags and keyed hashes.
STAGED_FIELDS = (
    "key_version",
    "readers",
    "ephemeral",
    "suspicious",
    "redacted_types",
    "content_hash",
    "token_count",
    "model_id",
    "updated_at",
    "index_version",
)


def swap_in_next(corpus: CorpusStats, sess: Session, row: NoteRow, staged_at: float) -> bool:
    """Make the staged next version of `row` live (inside the caller's transaction).

    Returns False when nothing was staged at `staged_at` any more (the row is gone or another
    swap won). The row's corpus statistics move by the change in token count.
    """
    target = OwnedBy(row.tenant_id, row.user_id, row.agent_id)
    current = sess.execute(
        select(NoteRow.token_count, NoteRow.next_state, NoteRow.next_text_ct, NoteRow.next_attrs_ct)
        .where(target.clause(), NoteRow.id == row.id, NoteRow.next_at == staged_at)
        .with_for_update()
    ).first()
    if current is None or current.next_state is None:
        return False
    state = json.loads(current.next_state)
    values = {name: state[name] for name in STAGED_FIELDS if name in state}
    sess.execute(
        scoped_update(
            target,
            NoteRow.id == row.id,
            NoteRow.next_at == staged_at,
            text_ct=current.next_text_ct,
            attrs_ct=current.next_attrs_ct,
            next_text_ct=None,
            next_attrs_ct=None,
            next_state=None,
            next_at=None,
            **values,
        )
    )
    corpus.adjust(
        sess,
        row.tenant_id,
        namespace_for(row.tenant_id),
        0,
        int(state["token_count"]) - int(current.token_count),
    )
    return True


def staged_view(row: NoteRow) -> NoteRow:
    """A detached copy of `row` carrying its staged next version (for indexing and decrypting)."""
    if row.next_state is None or row.next_text_ct is None or row.next_attrs_ct is None:
        raise InvalidRequest("no staged version")
    state = json.loads(row.next_state)
    copy = NoteRow(**{c.key: getattr(row, c.key) for c in NoteRow.__table__.columns})
    for name in STAGED_FIELDS:
        if name in state:  # versions staged before a field was added lack it
            setattr(copy, name, state[name])
    copy.text_ct = row.next_text_ct
    copy.attrs_ct = row.next_attrs_ct
    return copy


# -- the add's one statement per row -----------------------------------------------------------

_NOTES: Table = NoteRow.__table__  # type: ignore[assignment]
STORED_COLUMNS = tuple(c.name for c in _NOTES.columns if c.name not in ("category", *NEXT_COLUMNS))
"""The columns an add writes (`category` and the staged-update `next_*` stay NULL)."""

_LIVE_TWIN = (
    select(literal(1))
    .select_from(_NOTES)
    .where(
        _NOTES.c.tenant_id == bindparam("tenant_id"),
        _NOTES.c.user_id == bindparam("user_id"),
        _NOTES.c.agent_id == bindparam("agent_id"),
        _NOTES.c.content_hash == bindparam("content_hash"),
        _NOTES.c.status == ACTIVE,
        _NOTES.c.is_active == 1,
        or_(_NOTES.c.expires_at.is_(None), _NOTES.c.expires_at > bindparam("now")),
    )
)

INSERT_UNLESS_TWIN = (
    insert(_NOTES)
    .from_select(
        list(STORED_COLUMNS),
        select(
            *(
                cast(bindparam(name, type_=_NOTES.c[name].type), _NOTES.c[name].type)
                for name in STORED_COLUMNS
            )
        ).where(~exists(_LIVE_TWIN)),
    )
    .returning(_NOTES.c.id)
)
"""Insert one note row unless a live note of the same storage scope has the same keyed content
hash: the duplicate check folded into the insert (no row returned means "a twin exists"). Built
once, so SQLAlchemy compiles it once. Parameters: every stored column by name, plus `now`."""


INSERT_NOTE = DriverStatement(INSERT_UNLESS_TWIN, "insert")
"""`INSERT_UNLESS_TWIN` on the driver's cursor (the add's hot path: `store.driver_sql`)."""


def row_params(row: NoteRow, now: float) -> dict[str, Any]:
    """The parameters of `INSERT_UNLESS_TWIN` for a prepared (transient) row."""
    state = row.__dict__  # a transient row's set columns; an unset column is NULL
    params = {name: state.get(name) for name in STORED_COLUMNS}
    params["now"] = now
    return params
