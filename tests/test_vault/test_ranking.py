"""The re-ranking features over fused candidates: neighbours in a session and the event date."""

from __future__ import annotations

import pytest

from memvault.index.base import Hit
from memvault.vault.ranking import Fusion, Scored, fuse_scores, rerank


def _cand(i: str, fused: float, **payload: object) -> Scored:
    return Scored(Hit(i, fused, dict(payload)), fused, 0.0, fused, fused)


def test_fusion_normalises_each_list_and_fills_absent_with_zero() -> None:
    dense = [Hit("a", 0.9), Hit("b", 0.5), Hit("c", 0.1)]
    sparse = [Hit("c", 12.0), Hit("d", 6.0)]
    got = {s.hit.id: (s.bm25, s.dense, s.fused) for s in fuse_scores(dense, sparse, 0.25)}
    assert got["a"] == pytest.approx((0.0, 1.0, 0.25))
    assert got["b"] == pytest.approx((0.0, 0.5, 0.125))
    assert got["c"] == pytest.approx((1.0, 0.0, 0.75))
    assert got["d"] == pytest.approx((0.5, 0.0, 0.375))
    assert [s.hit.id for s in fuse_scores(dense, sparse, 0.25)] == ["c", "d", "a", "b"]


def test_neighbour_smoothing_lifts_a_turn_between_matching_turns() -> None:
    cands = [
        _cand("x", 0.50),
        _cand("p", 0.45),
        _cand("m", 0.40, prev="p"),  # between p and n
        _cand("n", 0.45, prev="m"),
    ]
    plain = [s.hit.id for s in rerank(cands, Fusion())]
    assert plain == ["x", "p", "n", "m"]
    smoothed = rerank(cands, Fusion(prev=0.2, next=0.2))
    assert smoothed[0].hit.id == "m"
    assert smoothed[0].score == pytest.approx(0.40 + 0.2 * (0.45 + 0.45))
    only_next = {s.hit.id: s.score for s in rerank(cands, Fusion(next=0.5))}
    assert only_next["m"] == pytest.approx(0.40 + 0.5 * 0.45)  # n follows m
    assert only_next["n"] == pytest.approx(0.45)  # nothing follows n


def test_date_bonus_only_inside_the_named_range() -> None:
    cands = [_cand("early", 0.5, occurred_at=100), _cand("inside", 0.45, occurred_at=1_000)]
    assert rerank(cands, Fusion(date=0.1), [])[0].hit.id == "early"
    assert rerank(cands, Fusion(date=0.1), [(900.0, 1_100.0)])[0].hit.id == "inside"
    assert rerank(cands, Fusion(date=0.0), [(900.0, 1_100.0)])[0].hit.id == "early"


def test_chinese_queries_get_their_own_dense_share() -> None:
    from memvault.vault.ranking import mostly_han

    fusion = Fusion(dense_weight=0.4, dense_weight_han=0.2)
    assert mostly_han("美国的首都是哪里？") and not mostly_han("Where is the capital?")
    assert mostly_han("谁是 Alice 的老师") and not mostly_han("Alice said 你好 to everyone here")
    assert fusion.for_query("美国的首都是哪里？").dense_weight == 0.2
    assert fusion.for_query("Where is the capital?").dense_weight == 0.4
    assert Fusion(dense_weight=0.4).for_query("美国的首都").dense_weight == 0.4
