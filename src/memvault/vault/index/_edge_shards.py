"""The table of open qdrant-edge shards behind `EdgeIndex`: lazy open, LRU close, locking, errors.

Every open shard holds threads, file handles and its WAL lock, so at most `max_open` stay open;
beyond that the least recently used is flushed and closed. One lock guards the table, one lock per
shard serializes the calls on that shard. Lock order is always table, then shard.

Errors name the operation, never the engine's message: it carries filesystem paths.
"""

from __future__ import annotations

import logging
import shutil
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from qdrant_edge import (
    Distance,
    EdgeConfig,
    EdgeShard,
    EdgeSparseVectorParams,
    EdgeVectorParams,
    IntegerIndexParams,
    KeywordIndexParams,
    Modifier,
    UpdateOperation,
)

from memvault.errors import IndexError_, VaultError
from memvault.vault.index._edge_layout import is_shard, shard_folder_name, write_record
from memvault.vault.index.base import DENSE, SPARSE, validate_namespace

# The adapter's logger: these messages are `EdgeIndex`'s, wherever the code sits.
log = logging.getLogger("memvault.vault.index.edge")

T = TypeVar("T")


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


def _payload_indexes() -> dict[str, Any]:
    """Payload fields the shard indexes, and how. `user_id` is the tenant key inside a shard."""
    return {
        "user_id": KeywordIndexParams(is_tenant=True),
        "agent_id": KeywordIndexParams(),
        "readers": KeywordIndexParams(),
        "note_type": KeywordIndexParams(),
        "topic_tags": KeywordIndexParams(),
        "is_active": IntegerIndexParams(lookup=True, range=False),
    }


@dataclass(slots=True)
class _OpenShard:
    shard: EdgeShard
    lock: threading.Lock
    closed: bool = False

    def shut(self) -> None:
        """Flush and close; the caller holds `lock`."""
        self.closed = True
        try:
            self.shard.flush()
        finally:
            self.shard.close()


class ShardTable:
    """The open shards under `root`, by namespace, least recently used first.

    Shards are created with a cosine dense vector of `dense_dim` and an IDF sparse vector; at most
    `max_open` are open at once.
    """

    def __init__(self, root: Path, dense_dim: int, max_open: int) -> None:
        self.root = root
        self.dense_dim = dense_dim
        self.max_open = max_open
        self._table: OrderedDict[str, _OpenShard] = OrderedDict()
        self._table_lock = threading.Lock()

    def _config(self) -> EdgeConfig:
        return EdgeConfig(
            vectors={DENSE: EdgeVectorParams(size=self.dense_dim, distance=Distance.Cosine)},
            sparse_vectors={SPARSE: EdgeSparseVectorParams(modifier=Modifier.Idf)},
            max_search_threads=1,
            wal_enabled=True,
        )

    def path(self, namespace: str) -> Path:
        """The folder of `namespace`'s shard (it may not exist)."""
        return self.root / shard_folder_name(namespace)

    def _on_disk(self, namespace: str) -> bool:
        return is_shard(self.path(namespace))

    def _open(self, namespace: str) -> EdgeShard:
        folder = self.path(namespace)
        # Passing the config on load makes the engine refuse a shard of another dimension.
        if self._on_disk(namespace):
            shard = EdgeShard.load(str(folder), self._config())
        else:
            # The record goes in before the shard, so every shard folder names its namespace.
            folder.mkdir(mode=0o700, exist_ok=True)
            write_record(folder, namespace)
            shard = EdgeShard.create(str(folder), self._config())
        # Also on load: a crash between create and the index calls leaves them missing.
        present = shard.info().payload_schema
        for field, params in _payload_indexes().items():
            if field not in present:
                shard.update(UpdateOperation.create_field_index(field, params))
        return shard

    def _acquire(self, namespace: str, create: bool) -> _OpenShard | None:
        with self._table_lock:
            handle = self._table.get(namespace)
            if handle is not None:
                self._table.move_to_end(namespace)
                return handle
            if not create and not self._on_disk(namespace):
                return None
            try:
                shard = self._open(namespace)
            except Exception as exc:
                raise index_error("open", exc) from None
            handle = _OpenShard(shard=shard, lock=threading.Lock())
            self._table[namespace] = handle
            self._evict_beyond_limit()
            return handle

    def _evict_beyond_limit(self) -> None:
        """Close least recently used shards; the caller holds the table lock.

        Closing under the table lock means a namespace is never reopened while its old handle
        still holds the WAL lock.
        """
        while len(self._table) > self.max_open:
            _, oldest = self._table.popitem(last=False)
            with oldest.lock:
                try:
                    oldest.shut()
                except Exception as exc:
                    log.warning("closing an evicted edge shard failed: %s", type(exc).__name__)

    def run(
        self,
        namespace: str,
        op: Callable[[EdgeShard], T],
        *,
        create: bool,
        missing: T,
        action: str,
    ) -> T:
        """Run `op` on the namespace's shard under its lock; `missing` if it does not exist.

        `create` opens a new shard for an unknown namespace instead. `action` names the
        operation in the error raised if the engine fails.
        """
        validate_namespace(namespace)
        while True:
            handle = self._acquire(namespace, create)
            if handle is None:
                return missing
            with handle.lock:
                if handle.closed:  # evicted between acquire and lock: open it again
                    continue
                try:
                    return op(handle.shard)
                except VaultError:
                    raise
                except Exception as exc:
                    raise index_error(action, exc) from None

    def drop(self, namespace: str) -> None:
        """Close the namespace's shard and delete its folder. Unknown namespaces are ignored."""
        validate_namespace(namespace)
        with self._table_lock:
            handle = self._table.pop(namespace, None)
            if handle is not None:
                with handle.lock:
                    try:
                        handle.shut()
                    except Exception as exc:  # the engine's message holds a path
                        log.warning("closing a dropped shard failed: %s", type(exc).__name__)
            path = self.path(namespace)
            try:
                if path.exists():
                    shutil.rmtree(path)
            except OSError as exc:
                raise index_error("namespace drop", exc) from None

    def open_names(self) -> list[str]:
        """Namespaces whose shard is open now, least recently used first."""
        with self._table_lock:
            return list(self._table)

    def flush(self) -> None:
        """Flush every open shard's pending writes to its segments."""
        with self._table_lock:
            handles = list(self._table.values())
        for handle in handles:
            with handle.lock:
                if not handle.closed:
                    try:
                        handle.shard.flush()
                    except Exception as exc:
                        raise index_error("flush", exc) from None

    def close(self) -> None:
        """Flush and close every open shard. Later calls reopen shards lazily."""
        with self._table_lock:
            failures = 0
            while self._table:
                _, handle = self._table.popitem(last=False)
                with handle.lock:
                    try:
                        handle.shut()
                    except Exception as exc:
                        failures += 1
                        log.warning("closing an edge shard failed: %s", type(exc).__name__)
            if failures:
                raise IndexError_(f"{failures} edge shard(s) failed to close")
