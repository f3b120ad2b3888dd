"""Recently verified API keys, so a request can be authenticated without a database read.

`ApiKeys` puts a key here after the database confirmed it (live, secret matching) and clears
the whole cache whenever it changes a key row (revoke, delete). A cached key answers only a
token whose secret has the SHA-256 the database held, and only for `ttl` seconds after it was
read: the bound on how long a change made by another process sharing the database (PostgreSQL)
can go unseen. A lookup that raced an invalidation is not cached (the generation check).
"""

from __future__ import annotations

import hmac
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, TypeVar

DEFAULT_SIZE = 4096

Principal = TypeVar("Principal")
"""What a verified key stands for (`memvault.tenancy.principals.Principal`); generic, so the cache
needs nothing of the module that fills it."""


class VerifiedKeys(Generic[Principal]):
    """A bounded, time-limited map (tenant, key id) -> (secret digest, principal)."""

    def __init__(
        self,
        ttl: float,
        *,
        size: int = DEFAULT_SIZE,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.ttl = ttl
        self._size = size
        self._clock = clock
        self._lock = threading.Lock()
        self._entries: OrderedDict[tuple[str, str], tuple[str, Principal, float]] = OrderedDict()
        self._generation = 0

    @property
    def enabled(self) -> bool:
        return self.ttl > 0

    @property
    def generation(self) -> int:
        """Read before a database lookup and passed to `put`; changes on every `invalidate`."""
        return self._generation

    def get(self, tenant: str, key_id: str, digest: str) -> Principal | None:
        """The principal of a key verified less than `ttl` ago whose secret digest is
        `digest`; None otherwise (the caller then asks the database)."""
        if not self.enabled:
            return None
        with self._lock:
            entry = self._entries.get((tenant, key_id))
            if entry is None:
                return None
            if entry[2] <= self._clock():
                del self._entries[(tenant, key_id)]
                return None
        expected, principal, _ = entry
        return principal if hmac.compare_digest(expected, digest) else None

    def put(
        self, tenant: str, key_id: str, digest: str, principal: Principal, generation: int
    ) -> None:
        """Remember a key the database just verified, unless the cache was invalidated since
        `generation` was read (the row may have changed under the lookup)."""
        if not self.enabled:
            return
        with self._lock:
            if generation != self._generation:
                return
            self._entries[(tenant, key_id)] = (digest, principal, self._clock() + self.ttl)
            self._entries.move_to_end((tenant, key_id))
            while len(self._entries) > self._size:
                self._entries.popitem(last=False)

    def invalidate(self) -> None:
        """Forget every key (called after any change to key rows by this process)."""
        with self._lock:
            self._generation += 1
            self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)
