"""`EdgeIndex`'s physical upkeep under the right locks: drops, rebuilds, recovery on open.

`_edge_rebuild` holds the file operations; this class takes the namespace and partition locks
around them (see `_edge_shards`) and turns failures into `IndexError_`s without paths.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from qdrant_edge import EdgeShard, Point, ScrollRequest, UpdateOperation

if TYPE_CHECKING:
    from qdrant_edge import PointId

from memvault.index._edge_hnsw import BUILDING_FILE, BUILT_FILE, PENDING_FILE
from memvault.index._edge_layout import (
    REBUILD_PREFIX,
    REBUILT_FILE,
    TRASH_PREFIX,
    _looks_like_folder_id,
    add_churn,
    churn_share,
    fsync_dir,
    has_churn,
    is_dirty,
    is_shard,
    log,
    mark_dirty,
    read_record,
)
from memvault.index._edge_rebuild import (
    PAGE,
    SPLIT_FILE,
    _copy,
    _touch_synced,
    drop_partition_folder,
    rebuild_partition,
    recover_namespace,
    recover_partition,
    split_legacy_shard,
    swap_in,
)
from memvault.index._edge_shards import PartKey, ShardTable, guarded, index_error
from memvault.index.base import validate_namespace


class EdgeMaintenance:
    """Drops, rebuilds and crash recovery of the partitions in one `ShardTable`."""

    def __init__(self, shards: ShardTable, build_timeout_s: float = 3600.0) -> None:
        self._shards = shards
        self.build_timeout_s = build_timeout_s
        self._builds: dict[PartKey, _Build] = {}
        self._builds_lock = threading.Lock()
        self._touched: set[PartKey] = set()
        self._walked: set[str] = set()
        self._touched_lock = threading.Lock()

    # -- what a maintenance pass looks at ----------------------------------------------------

    def touched(self, key: PartKey) -> None:
        """The partition was written: the next maintenance pass looks at it."""
        with self._touched_lock:
            self._touched.add(key)

    def due(self, namespace: str, every_key: Callable[[], list[PartKey]]) -> list[PartKey]:
        """The partitions of `namespace` a maintenance pass looks at: all of them the first
        time (markers left on disk by an earlier process), then only those written since.

        One process owns the shards, so its own writes are all there is to see. A returned
        partition leaves the set; the pass puts it back (`touched`) if it still needs work.
        """
        with self._touched_lock:
            keys = [k for k in self._touched if k[0] == namespace]
            self._touched.difference_update(keys)
            if namespace in self._walked:
                return keys
            self._walked.add(namespace)
        return every_key()

    def maintain(
        self, namespace: str, every_key: Callable[[], list[PartKey]], rebuild_share: float
    ) -> int:
        """`EdgeIndex.maintain` on the partitions `due` (written since the last pass): rebuild
        those with deleted points or a replaced share of at least `rebuild_share`, then build
        the HNSW index of those marked pending. Returns how many were rebuilt or indexed."""

        def needed(folder: Path) -> bool:
            return is_dirty(folder) or (has_churn(folder) and churn_share(folder) >= rebuild_share)

        def unindexed(folder: Path) -> bool:
            return (folder / PENDING_FILE).exists() and not (folder / BUILT_FILE).exists()

        validate_namespace(namespace)
        rebuilt = 0
        for key in self.due(namespace, every_key):
            folder = self._shards.part_path(key)
            try:
                if needed(folder) and self.rebuild(key, dirty_only=True, needed=needed):
                    rebuilt += 1
                if unindexed(folder):
                    rebuilt += self.build_hnsw(key)
            finally:
                if is_dirty(folder) or unindexed(folder):
                    self.touched(key)  # failed, cancelled or timed out: the next pass retries
        return rebuilt

    # -- HNSW builds in a side process (`_edge_hnsw`) ----------------------------------------

    def changed(self, key: PartKey, ids: Sequence[object]) -> None:
        """Note ids written or deleted (caller: the partition's lock): for the next pass, and for
        the partition's HNSW copy while it builds."""
        self.touched(key)
        build = self._builds.get(key)
        if build is not None:
            build.ids.update(str(i) for i in ids)

    def cancel_build(self, key: PartKey) -> None:
        """Abandon the running build (a rebuild, a drop or a filter delete came first).

        The caller holds the partition's lock. The side process is killed and waited for, and
        the copy closed, so nothing of the build touches `.rebuild-…` again: the caller may
        delete or reuse that folder at once.
        """
        build = self._builds.get(key)
        if build is None:
            return
        build.cancelled = True
        if build.proc is not None and build.proc.poll() is None:
            build.proc.kill()
            build.proc.wait()
        if build.copy is not None:
            _close_quietly(build.copy)
            build.copy = None

    def build_hnsw(self, key: PartKey) -> bool:
        """Copy the partition, build its HNSW index in a child process, catch up, swap it in.

        Reads and writes go on during the copy (the partition's lock is taken per page of 1,000
        points) and the build (not taken); they wait only for the catch-up and swap. True if
        swapped in; False if it was cancelled, failed or timed out (retried by the next pass).
        """
        folder = self._shards.part_path(key)
        target = folder.parent / (REBUILD_PREFIX + folder.name)
        build = _Build()
        with self._builds_lock:
            if key in self._builds:
                return False
            self._builds[key] = build
        try:
            if not self._copy_for_build(key, target, build):
                return False
            with self._shards.namespace_lock(key[0]).shared(), self._shards.partition_lock(key):
                if build.cancelled:
                    return False
                dim = str(self._shards.factory.dense_dim)
                build.proc = subprocess.Popen(  # our own module, fixed arguments
                    [sys.executable, "-m", "memvault.index._edge_hnsw_child", str(target), dim],
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
            try:
                code = build.proc.wait(timeout=self.build_timeout_s)
            except subprocess.TimeoutExpired:
                build.proc.kill()
                build.proc.wait()
                log.warning("edge index: an HNSW build timed out")
                return False
            with self._shards.namespace_lock(key[0]).shared(), self._shards.partition_lock(key):
                if build.cancelled:
                    return False
                if code != 0:
                    log.warning("edge index: an HNSW build failed (exit %d)", code)
                    return False
                return self._catch_up_and_swap(key, target, build)
        except Exception as exc:
            if build.cancelled:
                return False
            raise index_error("hnsw build", exc) from None
        finally:
            with self._shards.namespace_lock(key[0]).shared(), self._shards.partition_lock(key):
                with self._builds_lock:
                    self._builds.pop(key, None)
                if build.copy is not None:
                    _close_quietly(build.copy)
                if (target / BUILDING_FILE).exists():  # ours (a rebuild's has none), not swapped
                    shutil.rmtree(target, ignore_errors=True)

    def _copy_for_build(self, key: PartKey, target: Path, build: _Build) -> bool:
        """Copy the live points into `target` a page at a time, each page under the lock."""
        offset = None
        with self._shards.namespace_lock(key[0]).shared(), self._shards.partition_lock(key):
            if self._shards.handle(key, create=False) is None or target.exists():
                return False
            build.copy = self._shards.factory.open(target)
            _touch_synced(target / BUILDING_FILE)
        while True:
            with self._shards.namespace_lock(key[0]).shared(), self._shards.partition_lock(key):
                live = self._shards.handle(key, create=False)
                if live is None or build.cancelled or build.copy is None:
                    return False
                records, offset = live.scroll(
                    ScrollRequest(offset=offset, limit=PAGE, with_payload=True, with_vector=True)
                )
                if records:
                    build.copy.update(UpdateOperation.upsert_points([_copy(r) for r in records]))
                if offset is None:
                    build.copy.flush()
                    copy, build.copy = build.copy, None
                    copy.close()
                    fsync_dir(target.parent)
                    return True

    def _catch_up_and_swap(self, key: PartKey, target: Path, build: _Build) -> bool:
        live = self._shards.handle(key, create=False)
        if live is None or build.cancelled:
            return False
        folder = self._shards.part_path(key)
        copy = self._shards.factory.open(target)
        try:
            ids: list[PointId] = sorted(build.ids)
            present: list[Point] = []
            for start in range(0, len(ids), PAGE):
                present.extend(
                    _copy(r) for r in live.retrieve(ids[start : start + PAGE], True, True)
                )
            if present:
                copy.update(UpdateOperation.upsert_points(present))
            gone = sorted(set(ids) - {str(p.id) for p in present})
            if gone:
                copy.update(UpdateOperation.delete_points(list(gone)))
            copy.flush()
        finally:
            copy.close()
        if gone:  # deleted during the build: their bytes are in the copy's files and WAL
            mark_dirty(target)
        if present:  # rewritten during the build: their first copies stay in its WAL
            add_churn(target, len(present), len(present))
        (target / BUILDING_FILE).unlink(missing_ok=True)
        _touch_synced(target / BUILT_FILE)
        _touch_synced(target / REBUILT_FILE)
        self._shards.close_partition(key)
        try:
            swap_in(folder)
        except Exception:
            recover_partition(folder)
            raise
        return True

    def open_root(self) -> None:
        """Finish what a crash left under the root, split legacy shards, redo partial rebuilds."""
        root = self._shards.root
        redo: list[PartKey] = []
        try:
            for folder in sorted(root.iterdir()):
                if folder.name.startswith(TRASH_PREFIX):  # a dropped namespace
                    shutil.rmtree(folder)
                    continue
                if not folder.is_dir() or not _looks_like_folder_id(folder.name):
                    continue
                namespace = read_record(folder)
                if namespace is None:
                    continue
                if is_shard(folder) or (folder / SPLIT_FILE).exists():
                    split_legacy_shard(folder, self._shards.factory.open)
                redo.extend((namespace, name) for name in recover_namespace(folder))
            fsync_dir(root)
        except Exception as exc:
            raise index_error("open", exc) from None
        for key in redo:
            self.rebuild(key, dirty_only=False)

    def drop_partition(self, key: PartKey) -> None:
        """Close the partition and delete its folder: its points are physically gone."""
        with self._shards.namespace_lock(key[0]).shared(), self._shards.partition_lock(key):
            self.cancel_build(key)
            self._shards.close_partition(key)
            guarded("delete", lambda: drop_partition_folder(self._shards.part_path(key)))

    def delete_then_rebuild(self, key: PartKey, op: Callable[[EdgeShard, PartKey], bool]) -> None:
        """Run the delete `op` on the partition and, if it removed anything, rebuild it at once.

        The partition's lock is held throughout, so that user's writes wait for the rebuild.
        """
        with self._shards.namespace_lock(key[0]).shared(), self._shards.partition_lock(key):
            shard = self._shards.handle(key, create=False)
            try:
                deleted = shard is not None and guarded("delete", lambda: op(shard, key))
            finally:
                self._shards.forget_counts(key)
            if deleted:
                self._rebuild_locked(key)

    def rebuild(
        self, key: PartKey, *, dirty_only: bool, needed: Callable[[Path], bool] = is_dirty
    ) -> bool:
        """Rebuild the partition (with `dirty_only`, only if `needed(folder)` still holds, checked
        under its lock); True if rebuilt."""
        with self._shards.namespace_lock(key[0]).shared(), self._shards.partition_lock(key):
            if dirty_only and not needed(self._shards.part_path(key)):
                return False
            return self._rebuild_locked(key)

    def _rebuild_locked(self, key: PartKey) -> bool:
        self.cancel_build(key)
        shard = self._shards.handle(key, create=False)
        if shard is None:
            return False
        folder = self._shards.part_path(key)
        # An in-process rebuild writes no index: a big partition is queued for a new build.
        big = (folder / BUILT_FILE).exists() or (folder / PENDING_FILE).exists()
        try:
            rebuild_partition(folder, shard, self._shards.factory.open)
        except Exception as exc:
            raise index_error("compaction", exc) from None
        self._shards.close_partition(key)
        try:
            swap_in(folder)
        except Exception as exc:
            try:
                recover_partition(folder)
            except Exception:
                log.warning("edge index: a failed partition swap is finished on the next open")
            raise index_error("compaction", exc) from None
        if big:
            (folder / PENDING_FILE).touch(mode=0o600)
            self.touched(key)
        return True

    def drop_namespace(self, namespace: str) -> None:
        """Close the namespace's shards and delete its folder (renamed to trash first)."""
        validate_namespace(namespace)
        with self._shards.namespace_lock(namespace).exclusive():
            self._shards.close_namespace(namespace)
            folder = self._shards.path(namespace)
            trash = folder.parent / (TRASH_PREFIX + folder.name)

            def drop() -> None:
                if trash.exists():
                    shutil.rmtree(trash)
                if folder.exists():
                    os.replace(folder, trash)
                    fsync_dir(folder.parent)
                    shutil.rmtree(trash)

            guarded("namespace drop", drop)


def _close_quietly(shard: EdgeShard) -> None:
    try:
        shard.close()
    except Exception as exc:  # the engine's message holds a path
        log.warning("closing an HNSW build's copy failed: %s", type(exc).__name__)


class _Build:
    """A running HNSW build: ids changed since its copy began, its side process, its open copy.

    Fields change only under the partition's lock.
    """

    __slots__ = ("cancelled", "copy", "ids", "proc")

    def __init__(self) -> None:
        self.ids: set[str] = set()
        self.cancelled = False
        self.proc: subprocess.Popen[bytes] | None = None
        self.copy: EdgeShard | None = None
