"""Batch add: many independent notes in one write (`POST /v1/memories/batch`).

Each draft is validated, screened and sealed on its own: a draft that is invalid or that the
screen refuses gets its error in its place, and the others are stored. The stored ones take the
add's one path (`NoteWriter` -> `group_commit`): one embedding call, one index upsert and one
transaction for the whole batch, with the add's crash-safety protocol. A-MEM's after-add work is
asked to run as background jobs (`NoteHooks.after_add(background=True)`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from memvault.errors import InvalidRequest, ScreenRefused, VaultError
from memvault.vault.drafts import NoteDraft
from memvault.vault.notes import Note
from memvault.vault.writes import NoteWriter

if TYPE_CHECKING:
    from memvault.vault.service import ScopedVault

__all__ = ["ITEM_REFUSALS", "MAX_BATCH_ITEMS", "add_each"]

MAX_BATCH_ITEMS = 256
"""The most drafts one batch may carry."""

ITEM_REFUSALS: tuple[type[VaultError], ...] = (InvalidRequest, ScreenRefused)
"""Errors that concern one draft alone (its fields, its text): reported in its place. Anything
else (the scope being erased, a storage failure) fails the whole batch, and nothing of it is
acknowledged."""


def add_each(view: ScopedVault, drafts: Sequence[NoteDraft]) -> list[Note | VaultError]:
    """Add 1-256 independent drafts as `view`: per draft, in order, the note as a single add
    returns it (a live twin in the same scope returns the existing note), or the `VaultError`
    (`ITEM_REFUSALS`) that refused it."""
    if not 1 <= len(drafts) <= MAX_BATCH_ITEMS:
        raise InvalidRequest(f"a batch holds 1-{MAX_BATCH_ITEMS} items")
    vault = view.vault
    parts = vault.parts
    scope = view.scope
    with parts.guard.using(scope.tenant, scope.user, scope.agent), vault.adds_in_flight:
        writer = NoteWriter(view)
        outcomes = writer.add_each(drafts, ITEM_REFUSALS)
        hooks = parts.hooks
        if hooks is None or not writer.new_ids:
            return outcomes
        unique = list({o.id: o for o in outcomes if isinstance(o, Note)}.values())
        annotated = {
            n.id: n for n in hooks.after_add(view, unique, writer.new_ids, background=True)
        }
        return [annotated.get(o.id, o) if isinstance(o, Note) else o for o in outcomes]
