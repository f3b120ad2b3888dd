"""Small test doubles shared across test folders."""

from __future__ import annotations

import time


class FakeClock:
    """A clock moved by hand: call it for the time, set or add to `now` to move it."""

    def __init__(self, now: float | None = None) -> None:
        self.now = time.time() if now is None else now

    def __call__(self) -> float:
        return self.now
