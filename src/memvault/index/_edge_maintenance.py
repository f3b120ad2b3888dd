"""`EdgeIndex`'s physical upkeep under the right locks: drops, rebuilds, recovery on open.

`_edge_rebuild` holds the file operations; this class takes the namespace and partition locks
around them (see `_edge_shards`) and turns failures into `IndexError_`s without paths.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

from qdrant_edge import EdgeShard

from memvault.index._edge_layout import (
    TRASH_PREFIX,
    _looks_like_folder_id,
    fsync_dir,
    is_dirty,
    is_shard,
    log,
    read_record,
)
from memvault.index._edge_rebuild import (
    SPLIT_FILE,
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

    def __init__(self, shards: ShardTable) -> None:
        self._shards = shards

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
            self._shards.close_partition(key)
            guarded("delete", lambda: drop_partition_folder(self._shards.part_path(key)))

    def delete_then_rebuild(self, key: PartKey, op: Callable[[EdgeShard, PartKey], bool]) -> None:
        """Run the delete `op` on the partition and, if it removed anything, rebuild it at once.

        The partition's lock is held throughout, so that user's writes wait for the rebuild.
        """
        with self._shards.namespace_lock(key[0]).shared(), self._shards.partition_lock(key):
            shard = self._shards.handle(key, create=False)
            if shard is not None and guarded("delete", lambda: op(shard, key)):
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
        shard = self._shards.handle(key, create=False)
        if shard is None:
            return False
        folder = self._shards.part_path(key)
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
