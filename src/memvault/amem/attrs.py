"""Changing a note's sealed A-MEM attributes (context, tags, evolution history) and its flags.

The attributes travel in the note's `attrs_ct` envelope, sealed like its text; a change opens it,
applies the change and seals it again in one transaction that checks the row did not change
meanwhile. Strings written back (a judge's context, tags and keywords) are screened first.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from sqlalchemy import update

from memvault.store.models import NoteRow
from memvault.store.scoping import scoped_update

if TYPE_CHECKING:
    from memvault.vault.service import ScopedVault

MAX_HISTORY = 20
"""Evolution history entries kept per note (the oldest are dropped)."""

AttrsChange = Callable[[dict[str, Any]], dict[str, Any]]


def append_history(attrs: dict[str, Any], entry: dict[str, Any]) -> dict[str, Any]:
    """`attrs` with `entry` appended to its evolution history (bounded)."""
    history = [*attrs.get("evolution_history", []), entry][-MAX_HISTORY:]
    return {**attrs, "evolution_history": history}


def update_attrs(
    view: ScopedVault, note_id: str, change: AttrsChange, *, screen: bool = False
) -> bool:
    """Apply `change` to the sealed attributes of a note the caller may write.

    `screen`: pass the new `context`, `tags` and `keywords` through the write screen first
    (a refusal leaves the note as it was). Returns False when the note changed or went meanwhile.
    """
    vault = view.vault
    parts = vault.parts
    with vault.note_lock(note_id):
        row = view.writable_row(note_id)
        storage = vault.row_scope(row)
        text, attrs = vault.codec.open(storage, row.id, row.key_version, row.text_ct, row.attrs_ct)
        new = change(dict(attrs))
        if screen:
            new = _screened(view, new, shared=row.agent_id != view.scope.agent)
        key_version, text_ct, attrs_ct = vault.codec.seal(storage, row.id, text, new)
        with parts.db.session(row.tenant_id) as sess:
            done = sess.execute(
                scoped_update(
                    view.readable,
                    NoteRow.id == row.id,
                    NoteRow.key_version == row.key_version,
                    NoteRow.updated_at == row.updated_at,
                    NoteRow.next_at.is_(None),
                    key_version=key_version,
                    text_ct=text_ct,
                    attrs_ct=attrs_ct,
                    index_version=0 if screen else row.index_version,
                )
            )
        return bool(done.rowcount)  # type: ignore[attr-defined]


def _screened(view: ScopedVault, attrs: dict[str, Any], *, shared: bool) -> dict[str, Any]:
    gate = view.vault.parts.gate
    scope = view.scope
    if attrs.get("context"):
        attrs["context"] = gate.screen_strings(scope, "context", [attrs["context"]], shared)[0]
    if attrs.get("tags"):
        attrs["tags"] = list(gate.screen_strings(scope, "tags", list(attrs["tags"]), shared))
    if attrs.get("keywords"):
        attrs["keywords"] = list(
            gate.screen_strings(scope, "keywords", list(attrs["keywords"]), shared)
        )
    return attrs


def set_flags(view: ScopedVault, note_ids: Sequence[str], **flags: int) -> int:
    """Set integer flags (`conflict`, `low_quality`) on notes the caller may read; how many."""
    if not note_ids:
        return 0
    with view.vault.parts.db.session(view.scope.tenant) as sess:
        done = sess.execute(
            update(NoteRow)
            .where(view.readable.clause(), NoteRow.id.in_(list(note_ids)))
            .values(**flags)
        )
    return int(done.rowcount)  # type: ignore[attr-defined]
