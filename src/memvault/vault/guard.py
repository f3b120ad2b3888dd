"""`ScopeGuard`: erasure and tenant deletion never race a write.

Every scoped operation (a principal's reads and writes, the reconciler's work on a tenant) runs
inside `guard.using(tenant, user, agent)`. An erase runs inside `guard.blocking(tenant, user,
agent)`: from that moment new operations on the scope are refused with 409 `scope_erasing`, and
the erase waits for the operations already inside to finish before it shreds keys and deletes
rows and vectors. A write that raced in is therefore either complete before the erase deletes
it, or refused; it is never half-written, and it never meets a shredded key.

A target is (tenant, user, agent); `None` widens it: `agent=None` is the whole user (a user's
erase, an export of the user), `user=None` the whole tenant (tenant deletion, a tenant-wide
reconcile). Two targets overlap when one covers the other, so erasing one agent blocks that
agent's operations and the user-wide ones, never another agent's of the same user.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from memvault.errors import ScopeBusy, ScopeErasing

__all__ = ["ScopeBusy", "ScopeErasing", "ScopeGuard"]

Target = tuple[str, str | None, str | None]

DEFAULT_DRAIN_SECONDS = 60.0


def _overlaps(a: Target, b: Target) -> bool:
    """Two targets overlap when they share the tenant and, at each level (user, then agent),
    one of them covers the other."""
    return (
        a[0] == b[0]
        and (a[1] is None or b[1] is None or a[1] == b[1])
        and (a[1] is None or b[1] is None or a[2] is None or b[2] is None or a[2] == b[2])
    )


def scope_target(tenant: str, user: str | None, agent: str | None) -> Target:
    """The guard's key for an operation or an erase (an agent narrows a user)."""
    if agent is not None and user is None:
        raise ValueError("an agent narrows a user: give the user too")
    return (tenant, user, agent)


class ScopeGuard:
    """Counts operations in flight per (tenant, user, agent) and blocks scopes being erased."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._active: Counter[Target] = Counter()
        self._blocked: Counter[Target] = Counter()

    def _is_blocked(self, target: Target) -> bool:
        return any(_overlaps(target, b) for b, n in self._blocked.items() if n > 0)

    def _busy(self, target: Target) -> bool:
        return any(_overlaps(target, a) for a, n in self._active.items() if n > 0)

    def erasing(self, tenant: str, user: str | None = None, agent: str | None = None) -> bool:
        """Whether an erase in this process blocks the scope now."""
        with self._cond:
            return self._is_blocked(scope_target(tenant, user, agent))

    @contextmanager
    def using(
        self, tenant: str, user: str | None = None, agent: str | None = None
    ) -> Iterator[None]:
        """Run one operation on (tenant, user, agent); `ScopeErasing` while the scope is blocked.

        `agent=None`: an operation on the whole user (it waits for, and is refused by, the erase
        of any of its agents); a principal's operations name its agent.
        """
        op = scope_target(tenant, user, agent)
        with self._cond:
            if self._is_blocked(op):
                raise ScopeErasing("this scope is being erased; the write was not stored")
            self._active[op] += 1
        try:
            yield
        finally:
            with self._cond:
                self._active[op] -= 1
                if self._active[op] <= 0:
                    del self._active[op]
                self._cond.notify_all()

    @contextmanager
    def blocking(
        self,
        tenant: str,
        user: str | None = None,
        agent: str | None = None,
        *,
        before_drain: Callable[[], None] | None = None,
        drain_seconds: float = DEFAULT_DRAIN_SECONDS,
    ) -> Iterator[None]:
        """Refuse new operations on the scope, wait for those in flight, then run the body.

        The scope is an agent of a user, a user (every agent of it), or a tenant; operations on
        other agents of the same user go on. `before_drain` runs once the scope is blocked and
        before the wait (an erase revokes the scope's API keys there). `ScopeBusy` if the
        operations in flight outlast `drain_seconds`; nothing after `before_drain` has happened
        then.
        """
        scope = scope_target(tenant, user, agent)
        with self._cond:
            self._blocked[scope] += 1
        try:
            if before_drain is not None:
                before_drain()
        except BaseException:
            with self._cond:
                self._unblock(scope)
            raise
        deadline = time.monotonic() + drain_seconds
        with self._cond:
            try:
                while self._busy(scope):
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        raise ScopeBusy("writes to this scope are still in flight; try again")
                    self._cond.wait(remaining)
            except BaseException:
                self._unblock(scope)
                raise
        try:
            yield
        finally:
            with self._cond:
                self._unblock(scope)

    def _unblock(self, target: Target) -> None:
        self._blocked[target] -= 1
        if self._blocked[target] <= 0:
            del self._blocked[target]
        self._cond.notify_all()
