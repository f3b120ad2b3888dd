"""`bench.locomo_amem --suite temporal` at one person: every field the suite reports, and with
A-MEM on no temporal miss (the top result is never another version of the asked fact)."""

from __future__ import annotations

import pytest
from bench import _amem_temporal


def test_the_timeline_changes_each_fact_two_or_three_times_in_date_order() -> None:
    versions = _amem_temporal.timeline(2)
    assert [v.session for v in versions] == sorted(v.session for v in versions)
    per_fact: dict[tuple[str, int], int] = {}
    for v in versions:
        per_fact[(v.person, v.attribute)] = per_fact.get((v.person, v.attribute), 0) + 1
    assert len(per_fact) == 2 * len(_amem_temporal.ATTRIBUTES)
    assert set(per_fact.values()) == {2, 3}


@pytest.mark.slow
def test_one_person_with_amem_on_has_no_temporal_miss() -> None:
    r = _amem_temporal.run(amem=True, people=1)
    assert r["notes"] == len(_amem_temporal.timeline(1))
    assert r["questions"] == r["notes"]  # one "now" per fact, one "as of" per older version
    assert r["temporal_misses"] == 0 and r["temporal_correct"] == 1.0
    assert 0 <= r["retrieval_misses"] <= r["questions"]
    assert r["overall_correct"] == pytest.approx(
        1 - r["retrieval_misses"] / r["questions"], abs=0.001
    )
