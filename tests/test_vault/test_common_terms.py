"""A big readable set leaves a term in most of its notes out of the BM25 query (issue 35)."""

from __future__ import annotations

import math
from pathlib import Path

from memvault.index import EdgeIndex, PointFilter
from memvault.text.vectors import SparseVector
from memvault.vault.readable_idf import COMMON_SHARE, weigh_by_readable_idf
from tests.test_index.shapes import DIM, axis, point

NS = "tenant-common"
COMMON, RARE, OTHER = 11, 22, 33
READER = PointFilter(user_id="u1", readers_any=("a1", "*"), active_only=True)


def _query(*terms: int) -> SparseVector:
    return SparseVector(indices=tuple(sorted(terms)), values=tuple(1.0 for _ in terms))


def test_a_common_term_is_left_out_only_of_a_big_set_and_never_alone(tmp_path: Path) -> None:
    index = EdgeIndex(tmp_path / "index", DIM)
    try:
        # 10 readable notes: COMMON in 8 (> half), RARE in 2; 5 notes another agent keeps
        # private hold COMMON too, and do not count.
        notes = [point(axis(0), words={COMMON: 1.0}) for _ in range(8)]
        notes += [point(axis(1), words={RARE: 1.0}) for _ in range(2)]
        notes += [point(axis(2), words={COMMON: 1.0}, agent="a2") for _ in range(5)]
        index.upsert(NS, notes)
        assert COMMON_SHARE * 10 < 8

        both = weigh_by_readable_idf(index, NS, READER, _query(COMMON, RARE), common_min_docs=10)
        assert both.indices == (RARE,)
        assert both.values[0] == math.log(1 + (10 - 2 + 0.5) / (2 + 0.5))
        alone = weigh_by_readable_idf(index, NS, READER, _query(COMMON), common_min_docs=10)
        assert alone.indices == (COMMON,)  # nothing rarer: kept whole
        unseen = weigh_by_readable_idf(index, NS, READER, _query(COMMON, OTHER), common_min_docs=10)
        assert unseen.indices == (OTHER,)  # a term in no note is rare
        small = weigh_by_readable_idf(index, NS, READER, _query(COMMON, RARE), common_min_docs=11)
        assert small.indices == (COMMON, RARE)  # a smaller set is scored in full
        default = weigh_by_readable_idf(index, NS, READER, _query(COMMON, RARE))
        assert default.indices == (COMMON, RARE)  # the default threshold is far above 10
    finally:
        index.close()
