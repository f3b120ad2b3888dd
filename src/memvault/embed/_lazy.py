"""`LazyModel`: load a slow model once, on first use, and serialize calls into it."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any, Generic, TypeVar

from memvault.batcher import Batcher
from memvault.embed._vectors import as_unit_rows, empty
from memvault.embed.base import Vectors
from memvault.observability import count_query_batch

ModelT = TypeVar("ModelT")
ResultT = TypeVar("ResultT")
QUERY_MAX_BATCH = 32
"""Search queries embedded in one model call at most (concurrent searches share a call)."""


class LazyModel(Generic[ModelT]):
    """Holds a model built by `loader` the first time it is needed.

    Loading takes seconds, so it happens once per process and only when asked for. Calls go
    through one lock: the backends here (a numpy pass under a process-wide BLAS thread limit,
    a C engine through ctypes, an ONNX session with a shared tokenizer) give no thread-safety
    promise, and each call already uses every core it is allowed.
    """

    def __init__(self, loader: Callable[[], ModelT]) -> None:
        self._loader = loader
        self._model: ModelT | None = None
        self._load_lock = threading.Lock()
        self._call_lock = threading.Lock()

    @property
    def loaded(self) -> bool:
        """Whether the model has been built."""
        return self._model is not None

    def get(self) -> ModelT:
        """The model, built on the first call (double-checked so loading happens once)."""
        model = self._model
        if model is None:
            with self._load_lock:
                model = self._model
                if model is None:
                    model = self._loader()
                    self._model = model
        return model

    def call(self, fn: Callable[[ModelT], ResultT]) -> ResultT:
        """Run `fn(model)` while holding the call lock."""
        model = self.get()
        with self._call_lock:
            return fn(model)


class LazyEmbedder(Generic[ModelT]):
    """The shared half of every backend: lazy loading, locking, empty batches, unit rows.

    A backend says how to build its model (`_build`) and how to encode a batch of documents
    (`_encode_documents`) and, where queries differ (e5's prefixes), a batch of queries
    (`_encode_queries`).

    Concurrent `embed_query` calls share one model call (`Batcher`, no window): while one
    query is being embedded, the queries that arrive queue and go in the next call together. A
    lone query runs at once. A short query's forward pass is mostly streaming the weights, so
    eight queries in one call cost about a third of eight calls (docs/architecture.md, "Query
    batching"). A query's vector does not depend on its batch beyond float rounding, and each
    caller gets an array of its own.
    """

    model_id: str
    dimension: int

    def __init__(self) -> None:
        self._model: LazyModel[ModelT] = LazyModel(self._build)
        self._queries = Batcher(
            self._embed_queries, max_batch=QUERY_MAX_BATCH, observe=count_query_batch
        )

    def _build(self) -> ModelT:
        raise NotImplementedError

    def _encode_documents(self, model: ModelT, batch: list[str]) -> Any:
        raise NotImplementedError

    def _encode_queries(self, model: ModelT, batch: list[str]) -> Any:
        return self._encode_documents(model, batch)

    def load(self) -> None:
        """Load the model now rather than on the first request (e.g. at service start)."""
        self._model.get()

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        """Embed a batch: shape (len(texts), dimension), unit rows."""
        batch = list(texts)
        if not batch:
            return empty(self.dimension)
        raw = self._model.call(lambda m: self._encode_documents(m, batch))
        return as_unit_rows(raw, self.dimension)

    def embed_query(self, text: str) -> Vectors:
        """Embed one query: shape (dimension,), unit length (in one model call with the
        queries of concurrent callers, if any)."""
        vector: Vectors = self._queries.submit(text)
        return vector

    def embed_query_batch(self, texts: Sequence[str]) -> Vectors:
        """Embed several queries in one model call: shape (len(texts), dimension), unit rows.

        `embed_query` batches concurrent callers through this; the embedding process
        (`ProcessEmbedder`) calls it with the batch its parent formed."""
        batch = list(texts)
        if not batch:
            return empty(self.dimension)
        raw = self._model.call(lambda m: self._encode_queries(m, batch))
        return as_unit_rows(raw, self.dimension)

    def _embed_queries(self, texts: Sequence[str]) -> list[Vectors]:
        return [row.copy() for row in self.embed_query_batch(texts)]
