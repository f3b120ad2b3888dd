"""BM25 as sparse vectors: the term-frequency part is computed here, the IDF part by the store.

The vector store applies an IDF modifier to the `bm25` sparse vector at query time, so a
document vector carries only each term's saturated, length-normalized frequency, and a query
vector carries 1.0 per distinct term. Their dot product under the IDF modifier is BM25.
Token ids are keyed hashes (the tenant's index key), so no word is stored in clear.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence

from memvault.text.tokenizer import tokenize
from memvault.text.vectors import SparseVector

BM25_K1 = 0.9
BM25_B = 0.4
"""Index version 2 (`memvault.vault.sessions`): chosen on LoCoMo conversations 0-4 for
context-keyed notes, which are about twice as long as their own text (docs/retrieval.md)."""
_MAX_TOKEN_ID = 2**32 - 1


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
        """Weight 1.0 for each distinct query token: the store's IDF completes the score."""
        return self._pack((token, 1.0) for token in dict.fromkeys(self.tokens(text)))

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
