"""The namespace lock of `EdgeIndex`'s shard table (`_edge_shards` describes the lock order)."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator


class SharedLock:
    """Many shared holders or one exclusive holder (no writer preference, so no reentry trap)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._shared = 0
        self._exclusive = False

    @contextlib.contextmanager
    def shared(self) -> Iterator[None]:
        """Hold the lock shared."""
        with self._cond:
            while self._exclusive:
                self._cond.wait()
            self._shared += 1
        try:
            yield
        finally:
            with self._cond:
                self._shared -= 1
                self._cond.notify_all()

    @contextlib.contextmanager
    def exclusive(self) -> Iterator[None]:
        """Hold the lock alone."""
        with self._cond:
            while self._exclusive or self._shared:
                self._cond.wait()
            self._exclusive = True
        try:
            yield
        finally:
            with self._cond:
                self._exclusive = False
                self._cond.notify_all()
