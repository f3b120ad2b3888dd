"""Coerce backend output into the `Embedder` contract: float32 rows of unit length."""

from __future__ import annotations

from typing import Any

import numpy as np

from memvault.embed.base import Vectors


def as_unit_rows(raw: Any, dimension: int) -> Vectors:
    """Return `raw` as a C-contiguous float32 (n, dimension) array with L2-normalized rows.

    Backends already normalize; doing it again costs microseconds and guarantees the contract
    whatever a backend version does. All-zero rows (nothing to embed) stay zero.
    """
    rows = np.asarray(raw, dtype=np.float32)
    if rows.ndim == 1:
        rows = rows.reshape(1, -1)
    if rows.ndim != 2 or rows.shape[1] != dimension:
        raise ValueError(
            f"embedding backend returned shape {rows.shape}, expected (n, {dimension})"
        )
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return np.ascontiguousarray(rows / norms, dtype=np.float32)


def empty(dimension: int) -> Vectors:
    """A (0, dimension) float32 array, returned for an empty batch without touching the model."""
    return np.zeros((0, dimension), dtype=np.float32)
