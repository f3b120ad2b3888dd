"""Physical removal for `EdgeIndex`: rebuild a partition, drop one, recover, split legacy shards.

qdrant-edge keeps a deleted point in its segment files until a vacuum, and in its WAL for good.
Only a shard written afresh, or a deleted folder, is clean. So:

- `rebuild_partition` copies a partition's live points into a fresh shard in the sibling folder
  `.rebuild-u-…`, flushes and closes it, marks it complete (`rebuild.done`), then swaps: the old
  folder is renamed to `.trash-u-…`, the new one into place, the parent fsynced, the trash
  deleted.
- `drop_partition_folder` renames a partition to `.trash-u-…` (atomic) before deleting it, so a
  crash never leaves a half-deleted shard that looks live.
- `recover_namespace` finishes or undoes what a crash left, on every open of the root: a
  complete rebuild is swapped in, a partial one is discarded (its partition is returned for a
  rebuild, since it still holds what was removed), a trash folder is deleted.
- `split_legacy_shard` turns a namespace folder that is itself a shard (the layout before
  partitions) into one shard per partition, then deletes the legacy files last.

No function here takes locks: the callers hold the partition's (or the namespace's) lock.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from qdrant_edge import EdgeShard, Point, ScrollRequest, UpdateOperation

from memvault.index._edge_hnsw import BUILDING_FILE
from memvault.index._edge_layout import (
    CONFIG_FILE,
    REBUILD_PREFIX,
    REBUILT_FILE,
    RECORD_FILE,
    TRASH_PREFIX,
    fsync_dir,
    is_partition_name,
    is_shard,
    log,
    partition_folder_name,
    partition_key,
)

PAGE = 1000
SPLIT_FILE = "legacy.split"
"""In a legacy namespace shard: every partition has been written; the legacy files may go."""


def _touch_synced(path: Path) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    fsync_dir(path.parent)


def _copy(record: Any) -> Point:
    """A point with the record's id, vectors and payload (the record has them all)."""
    return Point(id=record.id, vector=dict(record.vector or {}), payload=dict(record.payload or {}))


def live_points(shard: EdgeShard, page: int = PAGE) -> Iterator[list[Point]]:
    """Every live point of `shard`, with vectors and payload, one page at a time."""
    offset: Any = None
    while True:
        records, offset = shard.scroll(
            ScrollRequest(offset=offset, limit=page, with_payload=True, with_vector=True)
        )
        if records:
            yield [_copy(r) for r in records]
        if offset is None:
            return


def _write_shard(
    folder: Path, open_shard: Callable[[Path], EdgeShard], pages: Any, *, mark: bool = True
) -> None:
    """Create a shard in `folder`, upsert `pages` of points, flush, close; `mark` it complete."""
    shard = open_shard(folder)
    try:
        for points in pages:
            shard.update(UpdateOperation.upsert_points(points))
        shard.flush()
    finally:
        shard.close()
    if mark:
        _touch_synced(folder / REBUILT_FILE)


def rebuild_partition(
    part_folder: Path, source: EdgeShard, open_shard: Callable[[Path], EdgeShard]
) -> None:
    """Write `source`'s live points into `.rebuild-<name>`, complete and closed (no swap yet).

    The caller closes `source` next and calls `swap_in`. A failure removes the partial folder.
    """
    parent, name = part_folder.parent, part_folder.name
    target = parent / (REBUILD_PREFIX + name)
    trash = parent / (TRASH_PREFIX + name)
    for stale in (target, trash):  # left by an earlier failure that could not clean up
        if stale.exists():
            shutil.rmtree(stale)
    try:
        _write_shard(target, open_shard, live_points(source))
    except BaseException:
        shutil.rmtree(target, ignore_errors=True)
        raise
    fsync_dir(parent)


def swap_in(part_folder: Path) -> None:
    """Replace `part_folder` by its complete `.rebuild-` sibling; delete the old one."""
    parent, name = part_folder.parent, part_folder.name
    trash = parent / (TRASH_PREFIX + name)
    os.replace(part_folder, trash)
    os.replace(parent / (REBUILD_PREFIX + name), part_folder)
    fsync_dir(parent)
    shutil.rmtree(trash)
    fsync_dir(parent)


def drop_partition_folder(part_folder: Path) -> None:
    """Delete a (closed) partition with whatever an earlier failure left beside it.

    A `.rebuild-` sibling goes first, its `rebuild.done` before the rest, so that no recovery can
    ever swap it back in; the partition is renamed to `.trash-` (atomic) before it is deleted.
    """
    parent, name = part_folder.parent, part_folder.name
    rebuild = parent / (REBUILD_PREFIX + name)
    trash = parent / (TRASH_PREFIX + name)
    if rebuild.exists():
        (rebuild / REBUILT_FILE).unlink(missing_ok=True)
        fsync_dir(rebuild)
        shutil.rmtree(rebuild)
    if part_folder.exists():
        if trash.exists():
            shutil.rmtree(trash)
        os.replace(part_folder, trash)
        fsync_dir(parent)
    if trash.exists():
        shutil.rmtree(trash)
    fsync_dir(parent)


def recover_namespace(ns_folder: Path) -> list[str]:
    """`recover_partition` for every partition with leftovers; return those needing a rebuild.

    Only safe while no rebuild runs in the namespace (when the root is opened).
    """
    names = set()
    for entry in ns_folder.iterdir():
        for prefix in (REBUILD_PREFIX, TRASH_PREFIX):
            if entry.name.startswith(prefix) and is_partition_name(entry.name[len(prefix) :]):
                names.add(entry.name[len(prefix) :])
    return [name for name in sorted(names) if recover_partition(ns_folder / name)]


def has_leftovers(part_folder: Path) -> bool:
    """Whether an interrupted rebuild or drop left a `.rebuild-` or `.trash-` sibling."""
    parent, name = part_folder.parent, part_folder.name
    return (parent / (REBUILD_PREFIX + name)).exists() or (parent / (TRASH_PREFIX + name)).exists()


def recover_partition(part_folder: Path) -> bool:
    """Finish or undo an interrupted rebuild or drop of one partition; True if it needs a rebuild.

    - a complete `.rebuild-` folder is swapped in (its old folder, if still there, goes to
      trash first): the removed points are gone and every live point is in it;
    - a partial `.rebuild-` folder is deleted; the partition still holds what was to be removed,
      so True is returned (`swap_in` renames only complete rebuilds, so the old folder is
      there), except for an HNSW build's copy (`hnsw.building`), which was to remove nothing;
    - a `.trash-` folder left beside it is a finished swap or drop: it is deleted.
    The caller holds the partition's lock (or no other thread runs).
    """
    ns_folder, name = part_folder.parent, part_folder.name
    rebuild = ns_folder / (REBUILD_PREFIX + name)
    trash = ns_folder / (TRASH_PREFIX + name)
    redo = False
    if rebuild.exists() and (rebuild / REBUILT_FILE).exists():
        if trash.exists() and part_folder.exists():
            shutil.rmtree(trash)
        if part_folder.exists():
            os.replace(part_folder, trash)
        os.replace(rebuild, part_folder)
        fsync_dir(ns_folder)
        log.info("edge index: finished an interrupted partition rebuild")
    elif rebuild.exists():
        hnsw_copy = (rebuild / BUILDING_FILE).exists()  # a copy for an index: nothing to redo
        shutil.rmtree(rebuild)
        if not part_folder.exists() and trash.exists():
            os.replace(trash, part_folder)
        redo = part_folder.exists() and not hnsw_copy
        log.info("edge index: discarded a partial partition rebuild")
    if trash.exists():
        shutil.rmtree(trash)
    fsync_dir(ns_folder)
    return redo


def split_legacy_shard(ns_folder: Path, open_shard: Callable[[Path], EdgeShard]) -> int:
    """Split a namespace folder that is itself a shard into partition shards; return how many.

    Crash-safe: partitions are written first (a rerun starts them afresh), then `legacy.split`
    is written, and only then are the legacy engine files deleted, `edge_config.json` first.
    """
    done = ns_folder / SPLIT_FILE
    count = 0
    if is_shard(ns_folder) and not done.exists():
        for entry in ns_folder.iterdir():  # partitions of an interrupted split
            if is_partition_name(entry.name) or entry.name.startswith(
                (REBUILD_PREFIX, TRASH_PREFIX)
            ):
                shutil.rmtree(entry)
        legacy = open_shard(ns_folder)
        try:
            groups: dict[str, list[Any]] = {}
            offset: Any = None
            while True:
                records, offset = legacy.scroll(
                    ScrollRequest(offset=offset, limit=PAGE, with_payload=True, with_vector=False)
                )
                for r in records:
                    part = partition_folder_name(partition_key(dict(r.payload or {})))
                    groups.setdefault(part, []).append(r.id)
                if offset is None:
                    break
            for part, ids in sorted(groups.items()):
                _write_shard(ns_folder / part, open_shard, _pages_by_id(legacy, ids), mark=False)
                count += 1
        finally:
            legacy.close()
        fsync_dir(ns_folder)
        _touch_synced(done)
        log.info("edge index: split a legacy namespace shard into %d partitions", count)
    if done.exists():
        # `edge_config.json` first: from then on the folder is no longer taken for a shard.
        (ns_folder / CONFIG_FILE).unlink(missing_ok=True)
        fsync_dir(ns_folder)
        for entry in ns_folder.iterdir():
            if entry.name in (RECORD_FILE, SPLIT_FILE) or is_partition_name(entry.name):
                continue
            if entry.name.startswith((REBUILD_PREFIX, TRASH_PREFIX, ".namespace.json")):
                continue
            if entry.is_dir():
                shutil.rmtree(entry)
            else:
                entry.unlink()
        fsync_dir(ns_folder)
        done.unlink()
        fsync_dir(ns_folder)
    return count


def _pages_by_id(shard: EdgeShard, ids: list[Any]) -> Iterator[list[Point]]:
    for start in range(0, len(ids), PAGE):
        records = shard.retrieve(ids[start : start + PAGE], True, True)
        yield [_copy(r) for r in records]
