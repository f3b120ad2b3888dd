"""`EdgeIndex`: the embedded default, one qdrant-edge shard folder per namespace.

qdrant-edge runs Qdrant's Rust engine inside this process. Each namespace is a shard folder under
`root`, opened lazily and closed again (least recently used first) beyond `max_open`, because every
open shard holds threads, file handles and its WAL lock. Search is exact: HNSW is never built on the
request path, since `optimize()` holds the GIL for seconds.

Folders are named by a stable internal id, `ns-` + 32 hex digits of the SHA-256 of the namespace
(`shard_folder_name`), never by the raw tenant string: `GLOBEX` and `globex` would share one folder
on a case-insensitive file system. Each folder records its namespace in `namespace.json`. Folders
of older versions, named by the raw namespace, are renamed when an `EdgeIndex` opens its root.

Errors name the operation, never the engine's message: it carries filesystem paths.

Thread safety: the API calls us from a thread pool. One lock guards the table of open shards, one
lock per shard serializes the calls on that shard. Lock order is always table, then shard.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import shutil
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from qdrant_edge import (
    CountRequest,
    Distance,
    EdgeConfig,
    EdgeShard,
    EdgeSparseVectorParams,
    EdgeVectorParams,
    FieldCondition,
    Filter,
    Fusion,
    HasIdCondition,
    IntegerIndexParams,
    KeywordIndexParams,
    MatchAny,
    MatchValue,
    Modifier,
    Point,
    Prefetch,
    Query,
    QueryRequest,
    ScoredPoint,
    ScrollRequest,
    UpdateOperation,
)
from qdrant_edge import SparseVector as EdgeSparseVector

if TYPE_CHECKING:
    from qdrant_edge import PointId, Record

from memvault.errors import IndexError_, InvalidRequest, VaultError
from memvault.vault.index.base import (
    DENSE,
    NAMESPACE_PATTERN,
    RRF_K,
    SPARSE,
    Hit,
    IndexPoint,
    PointFilter,
    SparseVector,
    canonical_point_id,
    store_payload,
    validate_namespace,
)

log = logging.getLogger(__name__)

T = TypeVar("T")

_CONFIG_FILE = "edge_config.json"
_RECORD_FILE = "namespace.json"
_RECORD_FORMAT = 1
_FOLDER_PREFIX = "ns-"
_SCROLL_PAGE = 1000


def shard_folder_name(namespace: str) -> str:
    """The shard folder's name: `ns-` + the first 32 hex digits of SHA-256(namespace, UTF-8)."""
    validate_namespace(namespace)
    return _FOLDER_PREFIX + hashlib.sha256(namespace.encode("utf-8")).hexdigest()[:32]


def _looks_like_folder_id(name: str) -> bool:
    hexpart = name[len(_FOLDER_PREFIX) :]
    return (
        name.startswith(_FOLDER_PREFIX)
        and len(hexpart) == 32
        and all(c in "0123456789abcdef" for c in hexpart)
    )


def _read_record(folder: Path) -> str | None:
    """The namespace recorded in `folder`, or None when there is no valid record."""
    try:
        record = json.loads((folder / _RECORD_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    namespace = record.get("namespace") if isinstance(record, dict) else None
    if not isinstance(namespace, str) or not NAMESPACE_PATTERN.fullmatch(namespace):
        return None
    return namespace


def _write_record(folder: Path, namespace: str) -> None:
    """Write `namespace.json` atomically (0600, fsynced, then renamed into place)."""
    data = json.dumps({"namespace": namespace, "format": _RECORD_FORMAT}).encode("utf-8")
    tmp = folder / f".{_RECORD_FILE}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, folder / _RECORD_FILE)
    _fsync_dir(folder)


def _fsync_dir(directory: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _engine_reason(exc: BaseException) -> str:
    """A fixed description of a known engine failure (its own message holds paths), or ''."""
    text = str(exc)
    if "WouldBlock" in text:
        return "the shard is locked by another process"
    if "incompatible" in text:
        return "the shard was created with another vector configuration"
    return ""


def _index_error(action: str, exc: BaseException) -> IndexError_:
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


def edge_filter(where: PointFilter) -> Filter | None:
    """Translate a `PointFilter` into an edge `Filter`; `None` when it has no condition."""
    must: list[Any] = []
    if where.user_id is not None:
        must.append(FieldCondition(key="user_id", match=MatchValue(where.user_id)))
    if where.agent_id is not None:
        must.append(FieldCondition(key="agent_id", match=MatchValue(where.agent_id)))
    if where.readers_any:
        must.append(FieldCondition(key="readers", match=MatchAny(list(where.readers_any))))
    if where.active_only:
        # An int, not True: the binding turns MatchValue(True) into 1, which never matches a bool.
        must.append(FieldCondition(key="is_active", match=MatchValue(1)))
    if where.note_type is not None:
        must.append(FieldCondition(key="note_type", match=MatchValue(where.note_type)))
    must.extend(FieldCondition(key="topic_tags", match=MatchValue(t)) for t in where.topic_tags)
    if where.only_ids:
        must.append(HasIdCondition({canonical_point_id(i) for i in where.only_ids}))
    must_not: list[Any] = []
    if where.exclude_ids:
        # The binding insists on a set here, not a list.
        must_not.append(HasIdCondition({canonical_point_id(i) for i in where.exclude_ids}))
    if not must and not must_not:
        return None
    return Filter(must=must or None, must_not=must_not or None)


def _point_ids(ids: Sequence[str]) -> list[PointId]:
    """Canonical UUID strings, typed as the binding wants them."""
    return [canonical_point_id(i) for i in ids]


def _hit(point: ScoredPoint) -> Hit:
    return Hit(id=str(point.id), score=float(point.score), payload=dict(point.payload or {}))


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


class EdgeIndex:
    """`VectorIndex` on qdrant-edge shards: `root/ns-<id>/` per namespace (`shard_folder_name`).

    `max_open` bounds the shards open at once (each costs threads and memory). With
    `flush_every_write` each write is also flushed to the segments; off by default because the
    WAL already makes an acknowledged write survive a crash (it is replayed on the next open).
    One `EdgeIndex` per `root` per process: a shard's WAL lock refuses a second opener.
    """

    def __init__(
        self,
        root: Path,
        dense_dim: int,
        *,
        max_open: int = 64,
        flush_every_write: bool = False,
    ) -> None:
        if dense_dim < 1:
            raise InvalidRequest("dense_dim must be positive")
        if max_open < 1:
            raise InvalidRequest("max_open must be at least 1")
        self.root = Path(root)
        self.dense_dim = dense_dim
        self.max_open = max_open
        self.flush_every_write = flush_every_write
        try:
            self.root.mkdir(parents=True, exist_ok=True, mode=0o700)
            os.chmod(self.root, 0o700)
            self._migrate_legacy_folders()
        except OSError as exc:
            raise _index_error("open", exc) from None
        self._table: OrderedDict[str, _OpenShard] = OrderedDict()
        self._table_lock = threading.Lock()

    def _migrate_legacy_folders(self) -> None:
        """Rename folders named by their raw namespace to their folder id, recording the name.

        The record is written first, then the folder renamed, so a crash in between is finished
        by the next open. A folder whose target already exists is left alone and logged.
        """
        for folder in sorted(self.root.iterdir()):
            if not folder.is_dir() or folder.name.startswith("."):
                continue
            namespace = _read_record(folder)
            if namespace is None:
                if not (folder / _CONFIG_FILE).is_file():
                    continue  # not a shard (or a shard not created yet)
                if _looks_like_folder_id(folder.name) or not NAMESPACE_PATTERN.fullmatch(
                    folder.name
                ):
                    log.warning("edge shard folder without a namespace record left alone")
                    continue
                namespace = folder.name
                _write_record(folder, namespace)
            target = self.root / shard_folder_name(namespace)
            if folder == target:
                continue
            if target.exists():
                log.warning("edge shard folder not migrated: its folder id is taken")
                continue
            os.rename(folder, target)
            _fsync_dir(self.root)
            log.info("edge shard folder renamed to its folder id %s", target.name)

    # -- shard table -------------------------------------------------------------------------

    def _config(self) -> EdgeConfig:
        return EdgeConfig(
            vectors={DENSE: EdgeVectorParams(size=self.dense_dim, distance=Distance.Cosine)},
            sparse_vectors={SPARSE: EdgeSparseVectorParams(modifier=Modifier.Idf)},
            max_search_threads=1,
            wal_enabled=True,
        )

    def _path(self, namespace: str) -> Path:
        return self.root / shard_folder_name(namespace)

    def shard_path(self, namespace: str) -> Path:
        """The folder of `namespace`'s shard (it may not exist): for operations and tests."""
        return self._path(namespace)

    def _on_disk(self, namespace: str) -> bool:
        return (self._path(namespace) / _CONFIG_FILE).is_file()

    def _open(self, namespace: str) -> EdgeShard:
        folder = self._path(namespace)
        # Passing the config on load makes the engine refuse a shard of another dimension.
        if self._on_disk(namespace):
            shard = EdgeShard.load(str(folder), self._config())
        else:
            # The record goes in before the shard, so every shard folder names its namespace.
            folder.mkdir(mode=0o700, exist_ok=True)
            _write_record(folder, namespace)
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
                raise _index_error("open", exc) from None
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

    def _run(
        self,
        namespace: str,
        op: Callable[[EdgeShard], T],
        *,
        create: bool,
        missing: T,
        action: str,
    ) -> T:
        """Run `op` on the namespace's shard under its lock; `missing` if it does not exist.

        `action` names the operation in the error raised if the engine fails.
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
                    raise _index_error(action, exc) from None

    # -- VectorIndex -------------------------------------------------------------------------

    def _dense(self, vector: Sequence[float]) -> list[float]:
        if len(vector) != self.dense_dim:
            raise InvalidRequest(f"dense vector must have {self.dense_dim} dimensions")
        return [float(x) for x in vector]

    def _point(self, point: IndexPoint) -> Point:
        vectors: dict[str, Any] = {DENSE: self._dense(point.dense)}
        if point.sparse is not None:
            vectors[SPARSE] = _edge_sparse(point.sparse)
        return Point(
            id=canonical_point_id(point.id), vector=vectors, payload=store_payload(point.payload)
        )

    def upsert(self, namespace: str, points: Sequence[IndexPoint]) -> None:
        """Insert or replace points; creates the namespace's shard on first use."""
        validate_namespace(namespace)
        if not points:
            return
        edge_points = [self._point(p) for p in points]

        def op(shard: EdgeShard) -> None:
            shard.update(UpdateOperation.upsert_points(edge_points))
            if self.flush_every_write:
                shard.flush()

        self._run(namespace, op, create=True, missing=None, action="upsert")

    def set_payload(self, namespace: str, ids: Sequence[str], payload: dict[str, Any]) -> None:
        """Merge `payload` into each existing point's payload; unknown ids are skipped."""
        wanted = _point_ids(ids)
        if not wanted:
            return
        values = store_payload(payload)

        def op(shard: EdgeShard) -> None:
            # The engine rejects the whole call if one id is missing, so keep the existing ones.
            existing: list[PointId] = [str(r.id) for r in shard.retrieve(wanted, False, False)]
            if existing:
                shard.update(UpdateOperation.set_payload(existing, values))

        self._run(namespace, op, create=False, missing=None, action="payload update")

    def delete(self, namespace: str, ids: Sequence[str]) -> None:
        """Delete points by id; unknown ids and namespaces are ignored."""
        wanted = _point_ids(ids)
        if not wanted:
            return
        self._run(
            namespace,
            lambda shard: shard.update(UpdateOperation.delete_points(wanted)),
            create=False,
            missing=None,
            action="delete",
        )

    def delete_where(self, namespace: str, where: PointFilter) -> None:
        """Delete every point matching `where` (all points for an empty filter)."""
        flt = edge_filter(where) or Filter()
        self._run(
            namespace,
            lambda shard: shard.update(UpdateOperation.delete_points_by_filter(flt)),
            create=False,
            missing=None,
            action="delete",
        )

    def drop_namespace(self, namespace: str) -> None:
        """Close the namespace's shard and delete its folder. Unknown namespaces are ignored."""
        validate_namespace(namespace)
        with self._table_lock:
            handle = self._table.pop(namespace, None)
            if handle is not None:
                with handle.lock:
                    handle.shut()
            path = self._path(namespace)
            try:
                if path.exists():
                    shutil.rmtree(path)
            except OSError as exc:
                raise _index_error("namespace drop", exc) from None

    def search_dense(
        self, namespace: str, vector: Sequence[float], where: PointFilter, limit: int
    ) -> list[Hit]:
        """Exact cosine nearest neighbours among points matching `where`, best first."""
        request = QueryRequest(
            limit=max(limit, 0),
            query=Query.Nearest(self._dense(vector), using=DENSE),
            filter=edge_filter(where),
            with_payload=True,
        )
        return self._query(namespace, request, limit)

    def search_sparse(
        self, namespace: str, vector: SparseVector, where: PointFilter, limit: int
    ) -> list[Hit]:
        """Sparse dot product with the shard's IDF modifier, best first."""
        request = QueryRequest(
            limit=max(limit, 0),
            query=Query.Nearest(_edge_sparse(vector), using=SPARSE),
            filter=edge_filter(where),
            with_payload=True,
        )
        return self._query(namespace, request, limit)

    def search_hybrid(
        self,
        namespace: str,
        dense: Sequence[float],
        sparse: SparseVector,
        where: PointFilter,
        limit: int,
        prefetch: int,
        weights: tuple[float, float] = (1.0, 1.0),
        rrf_k: int = RRF_K,
    ) -> list[Hit]:
        """Dense and sparse prefetches, both filtered by `where`, fused by RRF (k=`RRF_K`).

        Each prefetch takes `max(prefetch, limit)` candidates. The filter sits on both prefetches
        and on the outer query, so no out-of-scope point can enter either candidate list.
        """
        flt = edge_filter(where)
        candidates = max(prefetch, limit, 1)
        request = QueryRequest(
            limit=max(limit, 0),
            prefetches=[
                Prefetch(
                    limit=candidates,
                    query=Query.Nearest(self._dense(dense), using=DENSE),
                    filter=flt,
                ),
                Prefetch(
                    limit=candidates,
                    query=Query.Nearest(_edge_sparse(sparse), using=SPARSE),
                    filter=flt,
                ),
            ],
            query=Fusion.Rrf(k=rrf_k, weights=list(weights)),  # type: ignore[arg-type]
            filter=flt,
            with_payload=True,
        )
        return self._query(namespace, request, limit)

    def _query(self, namespace: str, request: QueryRequest, limit: int) -> list[Hit]:
        if limit <= 0:
            validate_namespace(namespace)
            return []
        none: list[ScoredPoint] = []
        points = self._run(
            namespace,
            lambda shard: shard.query(request),
            create=False,
            missing=none,
            action="search",
        )
        return [_hit(p) for p in points]

    def retrieve(self, namespace: str, ids: Sequence[str]) -> list[Hit]:
        """Points by id, in the order asked, with payload and score 0. Missing ids are skipped."""
        wanted = [canonical_point_id(i) for i in ids]
        if not wanted:
            return []
        point_ids: list[PointId] = list(wanted)
        none: list[Record] = []
        records = self._run(
            namespace,
            lambda shard: shard.retrieve(point_ids, True, False),
            create=False,
            missing=none,
            action="retrieve",
        )
        found = {str(r.id): dict(r.payload or {}) for r in records}
        return [Hit(id=i, score=0.0, payload=found[i]) for i in dict.fromkeys(wanted) if i in found]

    def scroll_ids(self, namespace: str, where: PointFilter) -> list[str]:
        """Every point id matching `where`."""
        flt = edge_filter(where)

        def op(shard: EdgeShard) -> list[str]:
            ids: list[str] = []
            offset: Any = None
            while True:
                records, offset = shard.scroll(
                    ScrollRequest(offset=offset, limit=_SCROLL_PAGE, filter=flt, with_payload=False)
                )
                ids.extend(str(r.id) for r in records)
                if offset is None:
                    return ids

        return self._run(namespace, op, create=False, missing=[], action="scroll")

    def count(self, namespace: str, where: PointFilter) -> int:
        """Exact count of points matching `where`; 0 for an unknown namespace."""
        request = CountRequest(exact=True, filter=edge_filter(where))
        return self._run(
            namespace, lambda shard: shard.count(request), create=False, missing=0, action="count"
        )

    def namespaces(self) -> list[str]:
        """Namespaces with a shard folder under `root`, open or not, read from their records."""
        found = []
        for folder in self.root.iterdir():
            if not (folder / _CONFIG_FILE).is_file():
                continue
            namespace = _read_record(folder)
            if namespace is not None and folder.name == shard_folder_name(namespace):
                found.append(namespace)
        return sorted(found)

    def open_namespaces(self) -> list[str]:
        """Namespaces whose shard is open now, least recently used first (for ops and tests)."""
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
                        raise _index_error("flush", exc) from None

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


def _edge_sparse(vector: SparseVector) -> EdgeSparseVector:
    return EdgeSparseVector(
        indices=[int(i) for i in vector.indices], values=[float(v) for v in vector.values]
    )
