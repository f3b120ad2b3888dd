"""What a layer above the vault adds to its writes (A-MEM), without the vault importing it.

`memvault.amem.wiring.install` sets `VaultParts.hooks`; the vault calls:
- `construct` while a new note is prepared (before it is sealed), for sealed attributes;
- `after_add` once the add is durable, with the notes the add stored.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from memvault.scope import Scope
from memvault.vault.notes import Note


class NoteHooks(Protocol):
    """Write hooks of a layer above the vault."""

    def construct(self, scope: Scope, text: str, note_type: str) -> dict[str, Any]:
        """Sealed attributes of a new note, from its screened text (may be empty)."""

    def after_add(
        self, view: Any, notes: Sequence[Note], new_ids: set[str], *, background: bool = False
    ) -> list[Note]:
        """Run after an add is durable; returns the notes (possibly annotated), in order.

        `background`: a batch write asks for its follow-up work to run off the request
        (as jobs), where the layer has a worker for it.

        `view` is the `memvault.vault.service.ScopedVault` that wrote (typed loosely so this
        protocol, beneath the service, never imports it)."""
