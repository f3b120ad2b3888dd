"""`heat_boost`: a small, fading reward for memories that keep being retrieved."""

from __future__ import annotations

import math

HEAT_WEIGHT = 0.05
EXEMPT_NOTE_TYPES = frozenset({"knowledge"})


def heat_boost(retrieval_count: int, elapsed_days: float, *, note_type: str) -> float:
    """Multiplier for a note's fused score: `1 + 0.05·ln(1+retrieval_count)/(age_days+1)`.

    `age_days = max(1, ceil(elapsed_days))` counts started days since the last access; this is
    the reading under which the seed's examples hold (10 retrievals: ≈1.060 today, ≈1.002 at 60
    days; see DESIGN.md "Notes on the seed formulas"). Knowledge notes are facts whose rank
    should not depend on popularity: their boost is always 1.0. Negative inputs (clock skew,
    bad counters) are clamped to zero.
    """
    if note_type in EXEMPT_NOTE_TYPES:
        return 1.0
    count = max(0, retrieval_count)
    age_days = max(1, math.ceil(max(0.0, elapsed_days)))
    return 1.0 + HEAT_WEIGHT * math.log1p(count) / (age_days + 1)
