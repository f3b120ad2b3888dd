"""What a dedicated (Mode B) agent may not write: shared notes and notes with other readers.

A dedicated agent's notes are stored with `visibility = 'dedicated'` (`drafts.DEDICATED`) and
indexed in a partition of the agent's own (`drafts.dedicated_tag`); nothing it writes can
reach another agent, so a request that asks for sharing is refused (422 `isolation_refused`,
naming the field), never silently narrowed.
"""

from __future__ import annotations

from collections.abc import Sequence

from memvault.errors import IsolationRefused
from memvault.scope import WILDCARD_READER

SHARED_REFUSED = (
    "visibility: a dedicated (Mode B) agent cannot write shared notes; its notes stay in its "
    "own partition"
)
READERS_REFUSED = (
    "readers: a dedicated (Mode B) agent cannot give its notes other readers; its notes stay "
    "in its own partition"
)


def check_dedicated_write(
    dedicated: bool, agent: str, visibility: str | None, readers: Sequence[str] | None
) -> None:
    """`IsolationRefused` naming the field when a dedicated agent asks to share; else None."""
    if not dedicated:
        return
    if visibility == "shared":
        raise IsolationRefused(SHARED_REFUSED)
    check_dedicated_readers(dedicated, agent, readers)


def check_dedicated_readers(dedicated: bool, agent: str, readers: Sequence[str] | None) -> None:
    """`IsolationRefused` when a dedicated agent names a reader other than itself."""
    if not dedicated or readers is None:
        return
    if isinstance(readers, str) or any(r != agent or r == WILDCARD_READER for r in readers):
        raise IsolationRefused(READERS_REFUSED)
