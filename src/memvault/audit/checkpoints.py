"""Signed audit checkpoints, made off the request path: every N events or every minute.

The audit chain is an unkeyed SHA-256 chain in the data store, so whoever can write that store
can delete events and recompute it. A checkpoint is the deployment's Ed25519 signature over a
tenant's chain head `(seq, hash)`, kept in the keystore (`Keyring.audit_checkpoints()`), which
such an attacker does not reach. Exports carry the checkpoints they cover, and a re-chained log
no longer matches a checkpoint made before the edit (docs/audit.md, SECURITY.md).

`Checkpointer.appended` is told of every committed append (by `AuditLog`); it only marks the
tenant. A daemon thread signs the head of a tenant once `every` events have been appended since
its last checkpoint, or `seconds` after the first unsigned event, whichever comes first. Before
signing, it checks that the events since the previous checkpoint continue it (seq, prev and
hash): a chain edited before the last checkpoint is refused (`AuditChainBroken`, logged) and never
signed, so a checkpoint only ever vouches for a chain that continues the ones before it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from memvault.canonical import GENESIS, event_hash, rfc3339
from memvault.errors import VaultError

if TYPE_CHECKING:
    from memvault.audit.log import AuditLog
    from memvault.keyring import AuditCheckpoints

log = logging.getLogger(__name__)

DEFAULT_EVERY_EVENTS = 1000
DEFAULT_SECONDS = 60.0


class AuditChainBroken(VaultError):
    """The tenant's audit chain does not continue its last signed checkpoint (it was edited)."""

    code = "audit_chain_broken"


class Checkpointer:
    """Signs tenants' audit chain heads into the keystore, in a background thread."""

    def __init__(
        self,
        audit: AuditLog,
        checkpoints: Callable[[], AuditCheckpoints],
        clock: Callable[[], float],
        *,
        every: int = DEFAULT_EVERY_EVENTS,
        seconds: float = DEFAULT_SECONDS,
    ) -> None:
        """`checkpoints` returns the keystore's `AuditCheckpoints` (opened on first use)."""
        if every < 1 or seconds <= 0:
            raise ValueError("checkpoint every >= 1 event and after > 0 seconds")
        self._audit = audit
        self._checkpoints = checkpoints
        self._clock = clock
        self.every = every
        self.seconds = seconds
        self._cond = threading.Condition()
        self._dirty: dict[str, float] = {}  # tenant -> monotonic time of its first unsigned event
        self._urgent: set[str] = set()  # tenants `every` events past their last checkpoint
        self._signed: dict[str, int] = {}  # tenant -> seq of the last checkpoint known here
        self._thread: threading.Thread | None = None
        self._stopped = False

    def appended(self, tenant: str, seq: int) -> None:
        """An append of `tenant` committed up to `seq` (cheap: marks the tenant, wakes the thread
        when `every` events are unsigned)."""
        with self._cond:
            if self._stopped:
                return
            self._dirty.setdefault(tenant, time.monotonic())
            if seq - self._signed.get(tenant, 0) >= self.every and tenant not in self._urgent:
                self._urgent.add(tenant)
                self._cond.notify()
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._loop, name="memvault-audit-checkpoints", daemon=True
                )
                self._thread.start()

    def checkpoint(self, tenant: str) -> dict[str, Any] | None:
        """Sign the tenant's chain head now (if it moved since its last checkpoint) and return
        the newest checkpoint; None when the tenant has no event. Raises `AuditChainBroken` when
        the events since the last checkpoint do not continue it."""
        with self._cond:
            self._dirty.pop(tenant, None)
            self._urgent.discard(tenant)
        store = self._checkpoints()
        latest = store.latest(tenant)
        start_seq, start_hash = (0, GENESIS) if latest is None else (latest["seq"], latest["hash"])
        head_seq, head_hash = self._audit.head(tenant)
        if head_seq == start_seq and head_hash == start_hash:
            return latest
        if head_seq < start_seq:
            raise AuditChainBroken(
                f"the audit log of tenant {tenant} ends at seq {head_seq}, before its checkpoint "
                f"at seq {start_seq}: events were removed; not signed"
            )
        if head_seq == start_seq:
            raise AuditChainBroken(
                f"the audit log of tenant {tenant} does not match its checkpoint at seq "
                f"{start_seq}: the log was edited; not signed"
            )
        prev, expected = start_hash, start_seq + 1
        for event in self._audit.events(tenant, start_seq, head_seq):
            if (
                event["seq"] != expected
                or event["prev"] != prev
                or event["hash"] != event_hash(event)
            ):
                raise AuditChainBroken(
                    f"the audit log of tenant {tenant} does not continue its checkpoint at seq "
                    f"{start_seq} (seq {expected}): the log was edited; not signed"
                )
            prev, expected = event["hash"], expected + 1
        if expected != head_seq + 1 or prev != head_hash:
            raise AuditChainBroken(f"the audit log of tenant {tenant} changed while checked")
        made = store.sign(tenant, head_seq, head_hash, rfc3339(self._clock()))
        with self._cond:
            self._signed[tenant] = head_seq
        return made

    def checkpoint_all(self, *, due_only: bool = False) -> int:
        """Checkpoint every tenant with unsigned events (only those due, with `due_only`);
        returns how many were signed. Errors are logged by type, never raised."""
        now = time.monotonic()
        with self._cond:
            tenants = [
                t
                for t, since in self._dirty.items()
                if not due_only or t in self._urgent or now - since >= self.seconds
            ]
        signed = 0
        for tenant in tenants:
            try:
                if self.checkpoint(tenant) is not None:
                    signed += 1
            except AuditChainBroken as exc:
                log.error("%s", exc)
            except Exception as exc:  # the keystore or the database is away: next round
                log.warning("audit checkpoint not made: %s", type(exc).__name__)
                with self._cond:
                    self._dirty.setdefault(tenant, time.monotonic())
        return signed

    def close(self, *, final: bool = True) -> None:
        """Stop the thread; with `final`, sign what is unsigned first (shrinks the window)."""
        with self._cond:
            self._stopped = True
            self._cond.notify()
            thread = self._thread
        if thread is not None:
            thread.join(timeout=10)
        if final:
            self.checkpoint_all()

    def _loop(self) -> None:
        while True:
            with self._cond:
                if self._stopped:
                    return
                if not self._urgent:
                    oldest = min(self._dirty.values(), default=None)
                    wait = self.seconds if oldest is None else oldest + self.seconds
                    wait = wait - time.monotonic() if oldest is not None else wait
                    self._cond.wait(timeout=max(0.01, wait))
                if self._stopped:
                    return
            self.checkpoint_all(due_only=True)
