"""`rrf`: fusion scores and order match the store's Reciprocal Rank Fusion."""

from __future__ import annotations

import pytest

from memvault.index.base import RRF_K
from memvault.text import rrf


def test_rrf_scores_follow_zero_based_positions() -> None:
    fused = dict(rrf([["a", "b"], ["b", "c"]], k=60))
    assert fused["a"] == pytest.approx(1 / 60)
    assert fused["b"] == pytest.approx(1 / 61 + 1 / 60)
    assert fused["c"] == pytest.approx(1 / 61)


def test_rrf_item_in_both_lists_beats_single_list_leader() -> None:
    order = [item for item, _ in rrf([["a", "b", "c"], ["d", "c", "e"]])]
    assert order[0] == "c"
    assert set(order) == {"a", "b", "c", "d", "e"}


def test_rrf_ties_keep_first_seen_order() -> None:
    order = [item for item, _ in rrf([["x", "y"], ["y", "x"], ["p"], ["q"]])]
    assert order[:2] == ["x", "y"]
    assert order[2:] == ["p", "q"]


def test_rrf_duplicate_within_ranking_counts_once() -> None:
    fused = dict(rrf([["a", "a", "b"]], k=10))
    assert fused == pytest.approx({"a": 1 / 10, "b": 1 / 12})


def test_rrf_small_k_favours_top_ranks_more() -> None:
    rankings = [["a", "b", "c", "d"], ["d", "c", "b", "a"], ["a", "x", "y", "z"]]
    assert rrf(rankings, k=1)[0][0] == "a"
    scores_small = dict(rrf(rankings, k=1))
    scores_large = dict(rrf(rankings, k=RRF_K))
    assert scores_small["a"] / scores_small["c"] > scores_large["a"] / scores_large["c"]


def test_rrf_empty_input_gives_empty_list() -> None:
    assert rrf([]) == []
    assert rrf([[], []]) == []


def test_rrf_invalid_k_raises() -> None:
    with pytest.raises(ValueError):
        rrf([["a"]], k=0)
