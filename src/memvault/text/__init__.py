"""Text analysis for hybrid retrieval: tokens, BM25 sparse vectors, fusion and heat."""

from memvault.text.bm25 import BM25_AVGDL, BM25_B, BM25_K1, SparseEncoder, bm25_weights, idf
from memvault.text.fusion import rrf
from memvault.text.heat import heat_boost
from memvault.text.tokenizer import tokenize

__all__ = [
    "BM25_AVGDL",
    "BM25_B",
    "BM25_K1",
    "SparseEncoder",
    "bm25_weights",
    "heat_boost",
    "idf",
    "rrf",
    "tokenize",
]
