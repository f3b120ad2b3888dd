"""The table of open qdrant-edge shards behind `EdgeIndex`: lazy open, LRU close, locking, errors.

A shard is one partition (a user) of a namespace, keyed `(namespace, partition folder name)`.
Every open shard holds threads, file handles, mapped memory and its WAL lock, so at most
`max_open` stay open, and their estimated memory stays within `budget_mib` (when set); beyond
either, the least recently used idle one is flushed and closed. A shard's cost is estimated
from its point count (`shard_cost_mib`, measured figures in docs/performance.md), counted at
open and grown by the writes made while it is open.

Locks, always taken in this order:
1. the namespace's `SharedLock`: shared for work on its partitions, exclusive to drop it;
2. one partition's lock, held for a whole operation on that partition (a rebuild included), so
   writes to one user wait while other users go on;
3. the table lock, held only briefly to look up, insert or remove a handle. Eviction only
   try-locks a partition, so it never waits for a busy one while holding the table lock.

Errors name the operation, never the engine's message: it carries filesystem paths.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from qdrant_edge import EdgeShard

from memvault.errors import IndexError_, VaultError
from memvault.index._edge_factory import ShardFactory
from memvault.index._edge_layout import is_shard, list_partitions, shard_folder_name, write_record
from memvault.index._edge_locks import SharedLock
from memvault.index._edge_rebuild import has_leftovers, recover_partition
from memvault.index.base import PointFilter, payload_test, validate_namespace

# The adapter's logger: these messages are `EdgeIndex`'s, wherever the code sits.
log = logging.getLogger("memvault.index.edge")

T = TypeVar("T")

KEEPS_COUNTS = frozenset({"search", "retrieve", "scroll", "count", "upsert"})
"""`ShardTable.run` actions that leave remembered counts right: reads, and `upsert`, which
adds its new points to them itself (`count_added`); any other action forgets them."""

MAX_COUNT_UPKEEP = 50_000
"""Past this many (remembered count x new point) checks, a write forgets the counts instead."""

MAX_COUNTS = 4096
"""Remembered counts per open partition (readers × query terms); past it they start over."""

SHARD_BASE_MIB = 18.0
"""Estimated RSS of an open shard beyond its points: measured 18.6 MiB for 100 points, almost
all the four payload indexes' preallocated pages (4 MiB each, 2 for `is_active`), paged in at
load (docs/performance.md, "Many users")."""
POINT_KIB = 6.0
"""Estimated RSS per point of an open, searched shard: 2.6 KiB measured after a load (WAL,
index entries), plus the 2 KiB of a 512-d vector paged in by exact search, rounded up."""


def shard_cost_mib(points: int) -> float:
    """The estimated memory of an open shard of `points` points, in MiB."""
    return SHARD_BASE_MIB + max(points, 0) * POINT_KIB / 1024


PartKey = tuple[str, str]
"""`(namespace, partition folder name)`."""


def _engine_reason(exc: BaseException) -> str:
    """A fixed description of a known engine failure (its own message holds paths), or ''."""
    text = str(exc)
    if "WouldBlock" in text:
        return "the shard is locked by another process"
    if "incompatible" in text:
        return "the shard was created with another vector configuration"
    return ""


def index_error(action: str, exc: BaseException) -> IndexError_:
    """`IndexError_` naming the operation; the engine's message is logged at DEBUG only."""
    reason = _engine_reason(exc)
    log.warning("edge index %s failed: %s %s", action, type(exc).__name__, reason)
    log.debug("edge index %s failed", action, exc_info=exc)
    return IndexError_(f"vector index {action} failed" + (f": {reason}" if reason else ""))


@dataclass(slots=True)
class _OpenShard:
    shard: EdgeShard
    lock: threading.Lock  # the partition's lock
    cost: float = 0.0  # estimated MiB (`shard_cost_mib`)
    counts: dict[PointFilter, int] = field(default_factory=dict)  # `ShardTable.counted`

    def shut(self) -> None:
        """Flush and close; the caller holds `lock`."""
        try:
            self.shard.flush()
        finally:
            self.shard.close()


class ShardTable:
    """The open partition shards under `root`, least recently used first.

    Callers hold the namespace lock (`namespace_lock(ns).shared()`) and the partition lock
    (`partition_lock(key)`) around `handle`, `close_partition` and their use of the shard.
    `run` does all of that for one call.
    """

    def __init__(
        self, root: Path, dense_dim: int, max_open: int, budget_mib: float | None = None
    ) -> None:
        self.root = root
        self.factory = ShardFactory(dense_dim)
        self.max_open = max_open
        self.budget_mib = budget_mib
        self.opens = 0
        """Shards loaded or created so far (for tests and benchmarks)."""
        self._table: OrderedDict[PartKey, _OpenShard] = OrderedDict()
        self._table_lock = threading.Lock()
        self._locks_lock = threading.Lock()
        self._ns_locks: dict[str, SharedLock] = {}
        self._part_locks: dict[PartKey, threading.Lock] = {}

    # -- paths and locks ---------------------------------------------------------------------

    def path(self, namespace: str) -> Path:
        """The namespace's folder (it may not exist)."""
        return self.root / shard_folder_name(namespace)

    def part_path(self, key: PartKey) -> Path:
        """A partition's shard folder (it may not exist)."""
        return self.path(key[0]) / key[1]

    def partitions(self, namespace: str) -> list[str]:
        """The namespace's partitions on disk, by folder name."""
        return list_partitions(self.path(namespace))

    def namespace_lock(self, namespace: str) -> SharedLock:
        """The namespace's lock: shared for partition work, exclusive for a drop."""
        with self._locks_lock:
            return self._ns_locks.setdefault(namespace, SharedLock())

    def partition_lock(self, key: PartKey) -> threading.Lock:
        """The lock serializing every call on one partition."""
        with self._locks_lock:
            return self._part_locks.setdefault(key, threading.Lock())

    # -- handles -----------------------------------------------------------------------------

    def handle(self, key: PartKey, create: bool) -> EdgeShard | None:
        """The partition's open shard, opened (or created) if needed; None if it does not exist.

        The caller holds the partition lock, so nobody else opens or closes this partition.
        """
        shard, _ = self._handle(key, create, keep=True)
        return shard

    def _handle(self, key: PartKey, create: bool, keep: bool) -> tuple[EdgeShard | None, bool]:
        """`(shard, transient)`: a shard opened without `keep` while the table is full is not
        entered in the table (it would evict a busier one); the caller closes it after use."""
        with self._table_lock:
            handle = self._table.get(key)
            if handle is not None:
                self._table.move_to_end(key)
                return handle.shard, False
            transient = not keep and self._full()
        folder = self.part_path(key)
        try:
            if has_leftovers(folder):  # a rebuild or drop failed earlier in this process
                recover_partition(folder)
        except Exception as exc:
            raise index_error("open", exc) from None
        if not create and not is_shard(folder):
            return None, False
        try:
            if create:
                self._ensure_namespace_folder(key[0])
            shard = self.factory.open(folder)
            cost = shard_cost_mib(shard.info().points_count or 0)
        except Exception as exc:
            raise index_error("open", exc) from None
        self.opens += 1
        if transient:
            return shard, True
        with self._table_lock:
            self._table[key] = _OpenShard(shard=shard, lock=self.partition_lock(key), cost=cost)
            self._evict_beyond_limit()
        return shard, False

    def _full(self) -> bool:
        """Whether the table is at `max_open` or its memory budget; the caller holds the lock."""
        if len(self._table) >= self.max_open:
            return True
        return self.budget_mib is not None and self._cost() >= self.budget_mib

    def _cost(self) -> float:
        return sum(h.cost for h in self._table.values())

    def memory_mib(self) -> float:
        """The estimated memory of the open shards, in MiB."""
        with self._table_lock:
            return self._cost()

    def grew(self, key: PartKey, points: int) -> None:
        """`points` were written to the open partition: raise its estimate (no eviction here,
        the caller holds the partition's lock; the next open evicts)."""
        with self._table_lock:
            handle = self._table.get(key)
            if handle is not None:
                handle.cost += max(points, 0) * POINT_KIB / 1024

    def _ensure_namespace_folder(self, namespace: str) -> None:
        folder = self.path(namespace)
        with self._locks_lock:  # two partitions created at once must not race on the record
            if not (folder / "namespace.json").is_file():
                folder.mkdir(mode=0o700, exist_ok=True)
                write_record(folder, namespace)

    def close_partition(self, key: PartKey) -> None:
        """Flush and close the partition's shard if open; the caller holds its lock."""
        with self._table_lock:
            handle = self._table.pop(key, None)
        if handle is not None:
            try:
                handle.shut()
            except Exception as exc:  # the engine's message holds a path
                log.warning("closing an edge shard failed: %s", type(exc).__name__)

    def _evict_beyond_limit(self) -> None:
        """Close least recently used idle shards while the table holds more than `max_open`
        shards or more than `budget_mib` (the newest shard always stays); the caller holds the
        table lock.

        A shard whose partition is busy is skipped (its holder may be waiting for this very
        lock), so the table can briefly hold more than its bounds.
        """
        excess = len(self._table) - self.max_open
        over = self._cost() - self.budget_mib if self.budget_mib is not None else 0.0
        newest = next(reversed(self._table), None)
        for key in list(self._table):
            if excess <= 0 and over <= 0:
                return
            if key == newest:
                return
            handle = self._table[key]
            if not handle.lock.acquire(blocking=False):
                continue
            try:
                del self._table[key]
                handle.shut()
            except Exception as exc:
                log.warning("closing an evicted edge shard failed: %s", type(exc).__name__)
            finally:
                handle.lock.release()
            excess -= 1
            over -= handle.cost

    def run(
        self,
        key: PartKey,
        op: Callable[[EdgeShard], T],
        *,
        create: bool,
        missing: T,
        action: str,
        keep: bool = True,
    ) -> T:
        """Run `op` on the partition's shard under its locks; `missing` if it does not exist.

        `create` opens a new shard for an unknown partition instead. `action` names the
        operation in the error raised if the engine fails. Without `keep` (a visit of every
        partition), a shard opened while the table is full is closed again after `op` instead of
        evicting another, so a scan of a namespace with many users does not empty the cache.
        """
        validate_namespace(key[0])
        with self.namespace_lock(key[0]).shared(), self.partition_lock(key):
            shard, transient = self._handle(key, create, keep)
            if shard is None:
                return missing
            try:
                return guarded(action, lambda: op(shard))
            finally:
                if action not in KEEPS_COUNTS:
                    self.forget_counts(key)
                if transient:
                    try:
                        _OpenShard(shard=shard, lock=self.partition_lock(key)).shut()
                    except Exception as exc:  # the engine's message holds a path
                        log.warning("closing an edge shard failed: %s", type(exc).__name__)

    def counted(self, key: PartKey, memo: PointFilter, compute: Callable[[], int]) -> int:
        """`compute()` (the count of `memo`'s matches), remembered while the partition is open.

        The caller holds the partition's lock, as every write does (`run`, maintenance), so a
        count never misses a write: `run` forgets a partition's counts after any action not in
        `KEEPS_COUNTS`, an upsert of new points adds them (`count_added`), and closing,
        evicting, rebuilding or dropping a partition discards its open entry with them. One
        process owns a shard, so nobody else writes it.
        """
        with self._table_lock:
            handle = self._table.get(key)
        if handle is None:
            return compute()
        found = handle.counts.get(memo)
        if found is None:
            if len(handle.counts) >= MAX_COUNTS:
                handle.counts.clear()
            found = handle.counts[memo] = compute()
        return found

    def count_added(self, key: PartKey, points: Sequence[tuple[str, Mapping[str, Any]]]) -> None:
        """Add points just inserted (new ids, stored payloads) to the partition's remembered
        counts, each where it passes the count's filter; the caller holds the partition's lock.
        Too many checks forget the counts instead (always right, the next search recounts)."""
        with self._table_lock:
            handle = self._table.get(key)
        if handle is None or not handle.counts:
            return
        if len(handle.counts) * len(points) > MAX_COUNT_UPKEEP:
            handle.counts.clear()
            return
        for where in list(handle.counts):
            test = payload_test(where)
            handle.counts[where] += sum(1 for pid, payload in points if test(pid, payload))

    def forget_counts(self, key: PartKey) -> None:
        """Drop the partition's remembered counts (it was written); the caller holds its lock."""
        with self._table_lock:
            handle = self._table.get(key)
        if handle is not None:
            handle.counts.clear()

    # -- whole namespaces and the table ------------------------------------------------------

    def close_namespace(self, namespace: str) -> None:
        """Close every open shard of the namespace; the caller holds its lock exclusively."""
        with self._table_lock:
            keys = [k for k in self._table if k[0] == namespace]
        for key in keys:
            with self.partition_lock(key):
                self.close_partition(key)

    def open_names(self) -> list[PartKey]:
        """Partitions whose shard is open now, least recently used first."""
        with self._table_lock:
            return list(self._table)

    def flush(self) -> None:
        """Flush every open shard's pending writes to its segments."""
        for key in self.open_names():
            with self.partition_lock(key):
                with self._table_lock:
                    handle = self._table.get(key)
                if handle is not None:
                    guarded("flush", handle.shard.flush)

    def close(self) -> None:
        """Flush and close every open shard. Later calls reopen shards lazily."""
        failures = 0
        for key in self.open_names():
            with self.partition_lock(key):
                with self._table_lock:
                    handle = self._table.pop(key, None)
                if handle is None:
                    continue
                try:
                    handle.shut()
                except Exception as exc:
                    failures += 1
                    log.warning("closing an edge shard failed: %s", type(exc).__name__)
        if failures:
            raise IndexError_(f"{failures} edge shard(s) failed to close")


def guarded(action: str, call: Callable[[], T]) -> T:
    """Run `call`, turning an engine failure into an `IndexError_` naming `action`."""
    try:
        return call()
    except VaultError:
        raise
    except Exception as exc:
        raise index_error(action, exc) from None
