"""The sparse vector BM25 produces and the RRF constant fusion uses: text's own types, which the
vector index (`memvault.index.base`) takes as they are, so text never imports the index."""

from __future__ import annotations

from dataclasses import dataclass

RRF_K = 60


@dataclass(frozen=True, slots=True)
class SparseVector:
    """A sparse vector: token ids (keyed hashes, uint32) and their weights."""

    indices: tuple[int, ...]
    values: tuple[float, ...]
