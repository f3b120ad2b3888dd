"""Evidence cleaning, chunking and ranking metrics of the retrieval benchmarks (no model)."""

from __future__ import annotations

import math
from typing import Any

import pytest
from bench._retrieval_data import (
    MetricTable,
    Turn,
    clean_evidence,
    dedupe,
    hit_at,
    parse_conversation,
    percentile,
    recall_at,
    reciprocal_rank,
    split_chunks,
)

KNOWN = {"D1:18", "D1:20", "D8:6", "D9:17", "D11:26", "D30:5", "D9:1", "D4:4", "D4:6"}


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (["D8:6; D9:17"], ["D8:6", "D9:17"]),
        (["D:11:26"], ["D11:26"]),
        (["D30:05"], ["D30:5"]),
        (["D9:1 D4:4 D4:6"], ["D9:1", "D4:4", "D4:6"]),
        (["D1:18", "D", "D1:20"], ["D1:18", "D1:20"]),
        (["D"], []),
    ],
)
def test_clean_evidence_malformed_readme_examples_extracts_every_id(
    raw: list[str], expected: list[str]
) -> None:
    assert clean_evidence(raw, KNOWN) == expected


def test_clean_evidence_unknown_turn_is_dropped() -> None:
    assert clean_evidence(["D10:19", "D1:18"], KNOWN) == ["D1:18"]


def test_clean_evidence_repeated_id_is_kept_once() -> None:
    assert clean_evidence(["D8:6", "D8:06; D8:6"], KNOWN) == ["D8:6"]


def test_parse_conversation_question_without_valid_evidence_is_dropped() -> None:
    raw: dict[str, Any] = {
        "sample_id": "conv-x",
        "conversation": {
            "speaker_a": "A",
            "session_2": [{"speaker": "B", "dia_id": "D2:1", "text": "later"}],
            "session_1_date_time": "1 May 2023",
            "session_1": [
                {"speaker": "A", "dia_id": "D1:1", "text": "hi", "blip_caption": "a dog"},
            ],
        },
        "qa": [
            {"question": "q1", "evidence": ["D1:01"], "category": 4},
            {"question": "q2", "evidence": ["D7:3"], "category": 1},
            {"question": "q3", "evidence": [], "category": 3},
        ],
    }
    conv = parse_conversation(raw)
    assert [t.dia_id for t in conv.turns] == ["D1:1", "D2:1"]
    assert [(q.text, q.evidence) for q in conv.questions] == [("q1", ("D1:1",))]


def test_turn_memory_text_caption_only_when_asked() -> None:
    turn = Turn("D1:1", "Mel", "look at this", "a photo of a dog")
    assert turn.memory_text(captions=False) == "Mel: look at this"
    assert turn.memory_text(captions=True) == "Mel: look at this [image: a photo of a dog]"


def test_split_chunks_packs_whole_sentences_under_limit() -> None:
    text = "第一句话。第二句话！第三句话比较长一些？"
    chunks = split_chunks(text, 10)
    assert chunks == ["第一句话。第二句话！", "第三句话比较长一些？"]
    assert "".join(chunks) == text


def test_split_chunks_overlong_sentence_is_cut() -> None:
    chunks = split_chunks("一" * 25 + "。", 10)
    assert [len(c) for c in chunks] == [10, 10, 6]


def test_split_chunks_zero_keeps_whole_text() -> None:
    assert split_chunks("  一句。两句。 ", 0) == ["一句。两句。"]


def test_recall_at_counts_fraction_of_relevant_in_top_k() -> None:
    ranked = ["a", "b", "c", "d"]
    assert recall_at(ranked, {"b", "d"}, 2) == 0.5
    assert recall_at(ranked, {"b", "d"}, 4) == 1.0
    assert recall_at(ranked, {"x"}, 4) == 0.0
    assert recall_at(ranked, set(), 4) == 0.0


def test_hit_at_any_relevant_in_top_k() -> None:
    assert hit_at(["a", "b", "c"], {"c"}, 2) == 0.0
    assert hit_at(["a", "b", "c"], {"c"}, 3) == 1.0


def test_reciprocal_rank_first_relevant_within_k() -> None:
    assert reciprocal_rank(["a", "b", "c"], {"c", "b"}) == 0.5
    assert reciprocal_rank(["a", "b", "c"], {"c"}, k=2) == 0.0
    assert reciprocal_rank([], {"c"}) == 0.0


def test_dedupe_keeps_first_occurrence_order() -> None:
    assert dedupe(["b", "a", "b", "c", "a"]) == ["b", "a", "c"]


def test_percentile_interpolates_linearly() -> None:
    assert percentile([1.0, 2.0, 3.0, 4.0], 50) == 2.5
    assert percentile([5.0], 95) == 5.0
    assert math.isnan(percentile([], 50))


def test_metric_table_means_per_group() -> None:
    table = MetricTable()
    table.add(("multi-hop", "overall"), {"recall@10": 1.0})
    table.add(("single-hop", "overall"), {"recall@10": 0.0})
    assert table.mean("overall", "recall@10") == 0.5
    assert table.as_dict()["multi-hop"] == {"n": 1, "recall@10": 1.0}


def test_weighted_rrf_textbook_zero_weight_keeps_other_order() -> None:
    from bench.locomo import weighted_rrf

    assert weighted_rrf([(["x", "b"], 0.0), (["a", "b", "c"], 1.0)]) == ["a", "b", "c"]


def test_weighted_rrf_qdrant_formula_matches_measured_edge_score() -> None:
    from bench.locomo import weighted_rrf

    # Edge scored dense rank 1 + sparse rank 1 at weights (0.1, 1) as 1/69 + 1/60: with the
    # sparse list alone weighted 1, a sparse-only item at rank 1 beats a dense-only one.
    ranked = weighted_rrf([(["d"], 0.1), (["s"], 1.0)], k=60, formula="qdrant")
    assert ranked == ["s", "d"]
    assert weighted_rrf([(["d"], 1.0), (["s"], 0.1)], k=60, formula="qdrant") == ["d", "s"]
