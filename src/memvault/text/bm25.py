"""BM25 as sparse vectors: a document carries term frequencies, the query carries the IDF.

A document vector carries each term's saturated, length-normalized frequency, normalized by a
fixed `BM25_AVGDL` (no statistic of other notes enters a stored weight). The query vector
carries each distinct term's IDF, computed by the caller over the notes the reader may read
(`idf`, `SparseEncoder.weigh_query`); the store applies no IDF modifier. Their dot product is
BM25 over the readable set, so a reader's scores never depend on notes it cannot read.
Token ids are keyed hashes (the tenant's index key), so no word is stored in clear.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable, Sequence

from memvault.text.tokenizer import tokenize
from memvault.text.vectors import SparseVector

BM25_K1 = 0.9
BM25_B = 0.4
"""Index version 2 (`memvault.vault.sessions`): chosen on LoCoMo conversations 0-4 for
context-keyed notes, which are about twice as long as their own text (docs/retrieval.md)."""
_MAX_TOKEN_ID = 2**32 - 1

BM25_AVGDL = 24.0
"""The fixed average document length (tokens) of index version 3: about the mean length of a
context-keyed note on LoCoMo. A partition's live mean would let one agent's notes move the
weights of another agent's later notes (docs/retrieval.md, "BM25 per readable set")."""


def idf(n_docs: int, df: int) -> float:
    """Qdrant's (and Lucene's) BM25 IDF, `ln(1 + (N - df + 0.5) / (df + 0.5))`, never negative."""
    n, d = max(n_docs, 0), min(max(df, 0), max(n_docs, 0))
    return math.log(1.0 + (n - d + 0.5) / (d + 0.5))


def bm25_weights(
    tokens: list[str], avgdl: float, k1: float = BM25_K1, b: float = BM25_B
) -> dict[str, float]:
    """Per-term BM25 TF component `tf·(k1+1) / (tf + k1·(1−b+b·dl/avgdl))`, dl = len(tokens).

    `avgdl` is the collection's mean document length in tokens; a non-positive value (an empty
    collection) disables length normalization (dl/avgdl taken as 1).
    """
    if k1 < 0 or not 0 <= b <= 1:
        raise ValueError("BM25 needs k1 >= 0 and 0 <= b <= 1")
    dl = len(tokens)
    length_ratio = dl / avgdl if avgdl > 0 else 1.0
    norm = k1 * (1 - b + b * length_ratio)
    return {term: tf * (k1 + 1) / (tf + norm) for term, tf in Counter(tokens).items()}


class SparseEncoder:
    """Turns text into `SparseVector`s whose indices are keyed token hashes.

    `token_id` maps a token to a uint32 id; in memvault it is the tenant's `IndexKey.token_id`
    (an HMAC), so the same word gets different ids in different tenants and the index never
    holds a word in clear. Two tokens that collide on one id add their weights.
    """

    def __init__(self, token_id: Callable[[str], int], *, stem: bool = True) -> None:
        self._token_id = token_id
        self._stem = stem

    def tokens(self, text: str) -> list[str]:
        """The tokens this encoder indexes for `text` (see `tokenize`)."""
        return tokenize(text, stem=self._stem)

    def encode_document(self, text: str, avgdl: float) -> SparseVector:
        """BM25 TF weights of the document's tokens, keyed by token id (empty text → empty)."""
        return self.encode_tokens(self.tokens(text), avgdl)

    def encode_tokens(self, tokens: Sequence[str], avgdl: float) -> SparseVector:
        """`encode_document` for tokens already computed by `tokens` (tokenize once per write)."""
        return self._pack(bm25_weights(list(tokens), avgdl).items())

    def encode_query(self, text: str) -> SparseVector:
        """Weight 1.0 for each distinct query token; `weigh_query` puts each term's IDF in."""
        return self._pack((token, 1.0) for token in dict.fromkeys(self.tokens(text)))

    @staticmethod
    def weigh_query(query: SparseVector, n_docs: int, dfs: Sequence[int]) -> SparseVector:
        """`query` with each term's weight times its `idf(n_docs, df)`; `dfs` parallel to it."""
        values = tuple(v * idf(n_docs, df) for v, df in zip(query.values, dfs, strict=True))
        return SparseVector(indices=query.indices, values=values)

    def _pack(self, weights: Iterable[tuple[str, float]]) -> SparseVector:
        by_id: dict[int, float] = {}
        for token, weight in weights:
            token_id = self._token_id(token)
            if not 0 <= token_id <= _MAX_TOKEN_ID:
                raise ValueError("token_id must return an unsigned 32-bit integer")
            by_id[token_id] = by_id.get(token_id, 0.0) + weight
        ordered = sorted(by_id.items())
        return SparseVector(
            indices=tuple(i for i, _ in ordered), values=tuple(v for _, v in ordered)
        )
