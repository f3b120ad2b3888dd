"""The `Embedder` protocol: float32, L2-normalized vectors; the model id travels with them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

Vectors = npt.NDArray[np.float32]


@runtime_checkable
class Embedder(Protocol):
    """Turns text into unit vectors. Documents and queries may be encoded differently (e5)."""

    @property
    def model_id(self) -> str:
        """A stable id recorded with every vector, e.g. `use-m3`."""

    @property
    def dimension(self) -> int:
        """Vector length."""

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        """Shape (len(texts), dimension), each row unit length."""

    def embed_query(self, text: str) -> Vectors:
        """Shape (dimension,), unit length."""


class Wrapped:
    """The base of an embedder that passes its calls on to `inner` (a cache, a memo, a
    counter): the model id and the vector length are the wrapped embedder's."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner

    @property
    def model_id(self) -> str:
        """The wrapped embedder's model id."""
        return self.inner.model_id

    @property
    def dimension(self) -> int:
        """The wrapped embedder's vector length."""
        return self.inner.dimension
