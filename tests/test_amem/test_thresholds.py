"""The calibrated A-MEM thresholds and the quantile matching that produced them (no model loads)."""

from __future__ import annotations

import numpy as np
import pytest
from bench.amem_calibrate import fraction_at_or_above, match_threshold

from memvault.amem.thresholds import OPENCLAW, THRESHOLDS_BY_MODEL, thresholds_for
from memvault.embed.e5 import E5Embedder
from memvault.embed.minilm import FastembedEmbedder
from memvault.embed.use import UseEmbedder

CALIBRATED = sorted(THRESHOLDS_BY_MODEL)


def test_every_installed_embedder_is_calibrated_under_its_real_model_id() -> None:
    expected = {UseEmbedder.model_id, E5Embedder.model_id, FastembedEmbedder.model_id}
    assert set(THRESHOLDS_BY_MODEL) == expected


@pytest.mark.parametrize("model_id", CALIBRATED)
def test_thresholds_are_ordered_as_quantile_matching_implies(model_id: str) -> None:
    th = thresholds_for(model_id)
    # a link is looser than an evolution candidate, and the band is not empty
    assert -1.0 < th.link < th.evolve_low < th.evolve_high < 1.0
    # the four upper thresholds are matched on one pair set, by a monotone map of
    # openclaw's 0.72 <= 0.75 <= 0.80 <= 0.85, so they keep that order
    assert th.evolve_low <= th.consolidate <= th.same_day <= th.evolve_high


def test_unknown_model_falls_back_to_openclaw_values() -> None:
    th = thresholds_for("some-model-nobody-calibrated")
    assert th == OPENCLAW
    assert (th.link, th.evolve_low, th.evolve_high, th.same_day, th.consolidate) == (
        0.30,
        0.72,
        0.85,
        0.80,
        0.75,
    )


def test_calibrated_models_do_not_all_reuse_openclaw_values() -> None:
    assert any(thresholds_for(m) != OPENCLAW for m in CALIBRATED)


def test_match_threshold_recovers_a_monotone_map() -> None:
    # the target model's cosine is 0.5 * reference + 0.4 on every pair (shuffled order)
    rng = np.random.default_rng(0)
    reference = rng.uniform(-0.1, 1.0, 20_001)
    target = 0.5 * reference + 0.4
    for t, want in ((0.30, 0.55), (0.72, 0.76), (0.85, 0.825)):
        assert match_threshold(reference, target, t) == pytest.approx(want, abs=2e-3)


def test_match_threshold_keeps_the_share_of_pairs_above() -> None:
    reference = np.linspace(0.0, 1.0, 101)  # 0.00, 0.01, ..., 1.00
    target = np.linspace(0.5, 1.0, 1001)  # a different count and spread
    got = match_threshold(reference, target, 0.80)  # 21 of 101 reference values >= 0.80
    assert fraction_at_or_above(reference, 0.80) == pytest.approx(21 / 101)
    assert fraction_at_or_above(target, got) == pytest.approx(21 / 101, abs=2e-3)
    assert got == pytest.approx(0.5 + 0.5 * (1 - 21 / 101), abs=1e-9)


def test_match_threshold_edges() -> None:
    reference = np.array([0.1, 0.2, 0.3])
    target = np.array([0.5, 0.7, 0.9])
    assert match_threshold(reference, target, 0.95) == pytest.approx(0.9)  # none reach it
    assert match_threshold(reference, target, 0.0) == pytest.approx(0.5)  # all do
    with pytest.raises(ValueError):
        match_threshold(np.array([]), target, 0.5)
