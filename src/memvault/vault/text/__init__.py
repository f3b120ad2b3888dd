"""Text analysis for hybrid retrieval: tokens, BM25 sparse vectors, fusion and heat."""

from memvault.vault.text.bm25 import BM25_B, BM25_K1, SparseEncoder, bm25_weights
from memvault.vault.text.fusion import rrf
from memvault.vault.text.heat import heat_boost
from memvault.vault.text.tokenizer import tokenize

__all__ = ["BM25_B", "BM25_K1", "SparseEncoder", "bm25_weights", "heat_boost", "rrf", "tokenize"]
