"""`bm25_weights` and `SparseEncoder`: BM25 term weights under keyed, per-tenant token ids."""

from __future__ import annotations

import hashlib
import hmac
import math
from collections.abc import Callable

import pytest

from memvault.index.base import SparseVector
from memvault.text import SparseEncoder, bm25_weights, tokenize


def hmac_token_id(key: bytes) -> Callable[[str], int]:
    """A real keyed hash, as the keyring's `IndexKey.token_id` computes it: HMAC → uint32."""

    def token_id(token: str) -> int:
        digest = hmac.new(key, token.encode("utf-8"), hashlib.sha256).digest()
        return int.from_bytes(digest[:4], "big")

    return token_id


TENANT_A = hmac_token_id(b"tenant-a index key: 32 bytes....")
TENANT_B = hmac_token_id(b"tenant-b index key: 32 bytes....")


def test_bm25_weights_matches_formula() -> None:
    tokens = ["tea", "tea", "cup"]
    weights = bm25_weights(tokens, avgdl=6.0, k1=1.2, b=0.75)
    norm = 1.2 * (1 - 0.75 + 0.75 * 3 / 6.0)
    assert weights["tea"] == pytest.approx(2 * 2.2 / (2 + norm))
    assert weights["cup"] == pytest.approx(1 * 2.2 / (1 + norm))
    assert set(weights) == {"tea", "cup"}


def test_bm25_weights_term_frequency_saturates() -> None:
    once = bm25_weights(["x"] + ["pad"] * 9, avgdl=10.0)["x"]
    twice = bm25_weights(["x"] * 2 + ["pad"] * 8, avgdl=10.0)["x"]
    many = bm25_weights(["x"] * 9 + ["pad"], avgdl=10.0)["x"]
    assert once < twice < many < 1.5 + 1  # bounded by k1 + 1


def test_bm25_weights_longer_document_weighs_term_less() -> None:
    short = bm25_weights(["tea", "cup"], avgdl=5.0)["tea"]
    long = bm25_weights(["tea"] + ["filler"] * 9, avgdl=5.0)["tea"]
    assert long < short


def test_bm25_weights_nonpositive_avgdl_disables_length_norm() -> None:
    assert bm25_weights(["a", "b", "c"], avgdl=0.0)["a"] == pytest.approx(1.0)
    assert bm25_weights([], avgdl=0.0) == {}


def test_bm25_weights_invalid_b_raises() -> None:
    with pytest.raises(ValueError):
        bm25_weights(["a"], avgdl=1.0, b=1.5)


def test_encode_document_ids_sorted_unique_and_weighted() -> None:
    encoder = SparseEncoder(TENANT_A)
    text = "Tea, tea and more tea with a biscuit."
    vector = encoder.encode_document(text, avgdl=4.0)
    tokens = tokenize(text)
    expected = {TENANT_A(t): w for t, w in bm25_weights(tokens, 4.0).items()}
    assert list(vector.indices) == sorted(expected)
    assert len(set(vector.indices)) == len(vector.indices)
    assert dict(zip(vector.indices, vector.values, strict=True)) == pytest.approx(expected)


def test_encode_query_each_distinct_token_weight_one() -> None:
    vector = SparseEncoder(TENANT_A).encode_query("tea tea biscuit 茶 茶")
    assert len(vector.indices) == 3
    assert vector.values == (1.0, 1.0, 1.0)
    assert list(vector.indices) == sorted(vector.indices)


def test_encode_same_query_same_tenant_same_ids() -> None:
    first = SparseEncoder(TENANT_A).encode_query("where does Alice work 她在哪里工作")
    second = SparseEncoder(TENANT_A).encode_query("where does Alice work 她在哪里工作")
    assert first == second


def test_encode_same_query_other_tenant_different_ids() -> None:
    a = SparseEncoder(TENANT_A).encode_query("where does Alice work 她在哪里工作")
    b = SparseEncoder(TENANT_B).encode_query("where does Alice work 她在哪里工作")
    assert len(a.indices) == len(b.indices) > 0
    assert not set(a.indices) & set(b.indices)


def test_encode_query_matches_document_ids_for_shared_terms() -> None:
    encoder = SparseEncoder(TENANT_A)
    doc = encoder.encode_document("Alice works at the bakery on Main Street", avgdl=5.0)
    query = encoder.encode_query("Where is the bakery Alice works at?")
    assert set(query.indices) <= set(doc.indices)


def test_encode_document_colliding_tokens_sum_weights() -> None:
    # Every token except "zebra" lands on id 7: a forced collision with a real weight check.
    def colliding(token: str) -> int:
        return 99 if token == "zebra" else 7

    encoder = SparseEncoder(colliding, stem=False)
    vector = encoder.encode_document("apples pears zebra apples", avgdl=4.0)
    weights = bm25_weights(["apples", "pears", "zebra", "apples"], 4.0)
    assert vector.indices == (7, 99)
    assert vector.values[0] == pytest.approx(weights["apples"] + weights["pears"])
    assert vector.values[1] == pytest.approx(weights["zebra"])
    assert encoder.encode_query("apples pears zebra") == SparseVector((7, 99), (2.0, 1.0))


def test_encode_empty_text_gives_empty_vector() -> None:
    encoder = SparseEncoder(TENANT_A)
    assert encoder.encode_document("。，the", avgdl=3.0) == SparseVector((), ())
    assert encoder.encode_query("") == SparseVector((), ())


def test_encode_token_id_out_of_uint32_range_raises() -> None:
    with pytest.raises(ValueError, match="32-bit"):
        SparseEncoder(lambda token: 2**32).encode_query("tea")
    with pytest.raises(ValueError, match="32-bit"):
        SparseEncoder(lambda token: -1).encode_query("tea")


def test_bm25_dot_product_with_idf_ranks_matching_doc_first() -> None:
    encoder = SparseEncoder(TENANT_A)
    docs = [
        "Alice is allergic to peanuts and shellfish.",
        "Bob is training for the Berlin marathon.",
        "我女儿上个月开始学小提琴。",
    ]
    avgdl = sum(len(encoder.tokens(d)) for d in docs) / len(docs)
    vectors = [encoder.encode_document(d, avgdl) for d in docs]
    n = len(docs)
    df: dict[int, int] = {}
    for v in vectors:
        for i in v.indices:
            df[i] = df.get(i, 0) + 1

    def score(query: SparseVector, doc: SparseVector) -> float:
        weights = dict(zip(doc.indices, doc.values, strict=True))
        return sum(
            math.log(1 + (n - df[i] + 0.5) / (df[i] + 0.5)) * weights[i]
            for i in query.indices
            if i in weights
        )

    for query_text, expected in [("what is alice allergic to", 0), ("谁在学小提琴", 2)]:
        query = encoder.encode_query(query_text)
        scores = [score(query, v) for v in vectors]
        assert scores.index(max(scores)) == expected
