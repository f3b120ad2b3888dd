"""Fusion by scores over the two scoped prefetches orders a known case alike on both adapters."""

from __future__ import annotations

import math

import pytest

from memvault.index import Hit, PointFilter, VectorIndex
from memvault.vault.ranking import Fusion, search_fused
from tests.test_index.test_conformance import FUSION_QUERY, NS, _fusion_points

# Cosines to axis 0 of A (1, .1), C (1, .5), D (1, 1), B (1, 3); min-max over the four.
_COS = {"A": 1 / math.sqrt(1.01), "C": 1 / math.sqrt(1.25), "D": 1 / math.sqrt(2), "B": 0.1**0.5}
_DENSE = {k: (v - _COS["B"]) / (_COS["A"] - _COS["B"]) for k, v in _COS.items()}
# BM25 over the query {1, 2}: both terms have the same IDF, so B = 2, C = 1, D = .5, A = 0 units.
_BM25 = {"A": 0.0, "B": 1.0, "C": 0.5, "D": 0.25}


def _fused(index: VectorIndex, limit: int, fusion: Fusion) -> tuple[list[str], list[Hit]]:
    """Store the fusion points and run `search_fused` for their query inside u1; the names of
    the hits, and the hits."""
    name = {v: k for k, v in _fusion_points(index).items()}
    hits = search_fused(index, NS, *FUSION_QUERY, PointFilter(user_id="u1"), limit, fusion)
    return [name[h.id] for h in hits], hits


@pytest.mark.parametrize(
    "dense_weight, order", [(0.3, ["B", "C", "D", "A"]), (0.7, ["C", "A", "D", "B"])]
)
def test_score_fusion_orders_a_known_case(
    index: VectorIndex, dense_weight: float, order: list[str]
) -> None:
    names, hits = _fused(index, 4, Fusion(dense_weight=dense_weight, prefetch=4))
    assert names == order  # X, best on both lists, is another user's
    for n, hit in zip(names, hits, strict=True):
        expected = (1 - dense_weight) * _BM25[n] + dense_weight * _DENSE[n]
        assert hit.score == pytest.approx(expected, abs=1e-3)
        assert hit.payload["user_id"] == "u1"


def test_rrf_stays_selectable(index: VectorIndex) -> None:
    names, hits = _fused(index, 2, Fusion(method="rrf", dense_weight=1.0, k=60, prefetch=3))
    assert names == ["C", "D"]
    assert hits[0].score == pytest.approx(2 / 61, rel=1e-4)
