"""`heat_boost`: the seed's two examples, the knowledge exemption and the age rule."""

from __future__ import annotations

import math

import pytest

from memvault.text import heat_boost


def test_heat_boost_ten_retrievals_sixty_days_about_1_002() -> None:
    boost = heat_boost(10, 60.0, note_type="episodic")
    assert boost == pytest.approx(1 + 0.05 * math.log(11) / 61)
    assert round(boost, 3) == 1.002


def test_heat_boost_ten_retrievals_today_about_1_060() -> None:
    boost = heat_boost(10, 0.2, note_type="episodic")
    assert boost == pytest.approx(1 + 0.05 * math.log(11) / 2)
    assert round(boost, 3) == 1.060


def test_heat_boost_started_day_counts_as_whole_day() -> None:
    assert heat_boost(10, 59.1, note_type="episodic") == heat_boost(10, 60, note_type="episodic")
    assert heat_boost(10, 0.0, note_type="episodic") == heat_boost(10, 1.0, note_type="episodic")
    assert heat_boost(10, 1.01, note_type="episodic") < heat_boost(10, 1.0, note_type="episodic")


def test_heat_boost_knowledge_note_is_exempt() -> None:
    assert heat_boost(10, 0.0, note_type="knowledge") == 1.0
    assert heat_boost(1000, 3.0, note_type="knowledge") == 1.0


def test_heat_boost_never_retrieved_is_neutral() -> None:
    assert heat_boost(0, 0.0, note_type="episodic") == 1.0


def test_heat_boost_more_retrievals_more_boost() -> None:
    assert heat_boost(1, 2, note_type="x") < heat_boost(5, 2, note_type="x")


def test_heat_boost_negative_inputs_clamped() -> None:
    assert heat_boost(-3, 5.0, note_type="episodic") == 1.0
    assert heat_boost(10, -2.0, note_type="episodic") == heat_boost(10, 0.0, note_type="episodic")
