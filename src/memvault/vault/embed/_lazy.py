"""`LazyModel`: load a slow model once, on first use, and serialize calls into it."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

ModelT = TypeVar("ModelT")
ResultT = TypeVar("ResultT")


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
