"""The periodic quality scan (openclaw-amem's `memory_quality_scan`), a pure function over the
notes of ONE scope: which notes a human should review, and why."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from memvault.amem.views import NoteView

TOO_SHORT: Final = "too_short"
EXPIRED_EPHEMERAL: Final = "expired_ephemeral"
PENDING_CONFLICT: Final = "pending_conflict"
REASONS: tuple[str, ...] = (TOO_SHORT, EXPIRED_EPHEMERAL, PENDING_CONFLICT)
"""Every reason `scan` gives, in the order it lists them."""

MIN_CHARS = 10
"""As the write gate (`memvault.screening`): a text under 10 characters, stripped, is too short."""

EPHEMERAL_DAYS = 7
SECONDS_PER_DAY = 86_400


@dataclass(frozen=True, slots=True)
class QualityFlag:
    """Why note `note_id` needs review: one or more of `REASONS`, in that order."""

    note_id: str
    reasons: tuple[str, ...]


def scan(
    notes: Sequence[NoteView],
    now: float,
    *,
    min_chars: int = MIN_CHARS,
    ephemeral_days: float = EPHEMERAL_DAYS,
) -> list[QualityFlag]:
    """The flagged notes among `notes`, in their order; a note without a reason is left out.

    - `too_short`: `len(text.strip()) < min_chars` (exactly `min_chars` characters is fine);
      notes older than the write gate can be that short.
    - `expired_ephemeral`: an ephemeral note created MORE than `ephemeral_days` days before
      `now` (epoch seconds, like `created_at`); exactly `ephemeral_days` old is not expired.
    - `pending_conflict`: the note is marked `conflict` and waits for a decision.

    A repeated id is flagged once (its first occurrence). Knowledge, shared and read-only notes
    are scanned like any other; the caller decides what a reviewer may change.
    """
    if min_chars < 0 or ephemeral_days < 0:
        raise ValueError("min_chars and ephemeral_days must not be negative")
    cutoff = now - ephemeral_days * SECONDS_PER_DAY
    flags: list[QualityFlag] = []
    seen: set[str] = set()
    for note in notes:
        if note.id in seen:
            continue
        seen.add(note.id)
        reasons: list[str] = []
        if len(note.text.strip()) < min_chars:
            reasons.append(TOO_SHORT)
        if note.ephemeral and note.created_at < cutoff:
            reasons.append(EXPIRED_EPHEMERAL)
        if note.conflict:
            reasons.append(PENDING_CONFLICT)
        if reasons:
            flags.append(QualityFlag(note.id, tuple(reasons)))
    return flags
