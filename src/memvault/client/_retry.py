"""When to retry and how long to wait: shared by the sync and async clients.

Retried: 429 and 503, 409 `idempotency_key_in_progress` (the first attempt still runs), and
transport failures (connection refused or reset, timeouts, a response cut off). A write is
resent with the same `Idempotency-Key` and the same body bytes, so the server replays the first
answer instead of running it twice. Waits grow exponentially from `backoff` seconds, with
jitter, and honour a `Retry-After` of up to `MAX_RETRY_AFTER` seconds.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import httpx

RETRY_STATUSES = frozenset({429, 503})
MAX_RETRY_AFTER = 30.0
MAX_DELAY = 10.0


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """`retries` extra attempts after the first; delays `backoff * 2**n` (plus up to 25 %)."""

    retries: int = 3
    backoff: float = 0.2

    def retry_response(self, response: httpx.Response) -> bool:
        """True when this answer should be retried (its body must have been read)."""
        if response.status_code in RETRY_STATUSES:
            return True
        if response.status_code == 409 and "retry-after" in response.headers:
            try:
                code = response.json()["error"]["code"]
            except (ValueError, KeyError, TypeError):
                return False
            return bool(code == "idempotency_key_in_progress")
        return False

    def delay(self, attempt: int, response: httpx.Response | None = None) -> float:
        """Seconds to wait before retry number `attempt` (0-based)."""
        if response is not None:
            after = _retry_after(response)
            if after is not None:
                return after
        base = min(self.backoff * (2**attempt), MAX_DELAY)
        return base * (1 + random.random() / 4)


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after")
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        return None  # an HTTP date: fall back to the exponential delay
    return min(max(seconds, 0.0), MAX_RETRY_AFTER)
