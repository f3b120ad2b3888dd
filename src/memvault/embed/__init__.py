"""Embedders (text → unit vectors) and the per-scope embedding cache.

Backends import their heavy libraries only when first used; `make_embedder` picks one by name.
"""

from memvault.embed.base import Embedder, Vectors
from memvault.embed.cache import CachedEmbedder, EmbeddingCache, PendingQuery, cache_key
from memvault.embed.e5 import E5Embedder
from memvault.embed.factory import DEFAULT_EMBEDDER, EMBEDDER_NAMES, make_embedder
from memvault.embed.minilm import FastembedEmbedder, prepare_minilm_dir
from memvault.embed.use import UseEmbedder

__all__ = [
    "DEFAULT_EMBEDDER",
    "EMBEDDER_NAMES",
    "CachedEmbedder",
    "E5Embedder",
    "Embedder",
    "EmbeddingCache",
    "FastembedEmbedder",
    "PendingQuery",
    "UseEmbedder",
    "Vectors",
    "cache_key",
    "make_embedder",
    "prepare_minilm_dir",
]
