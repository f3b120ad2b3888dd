"""The on-disk layout of `EdgeIndex`'s root: a folder per namespace, a shard per partition in it.

A namespace folder's name is `ns-` + 32 hex digits of the SHA-256 of the namespace
(`shard_folder_name`), never the raw tenant string: `GLOBEX` and `globex` would share one folder
on a case-insensitive file system. Each folder records its namespace in `namespace.json` and
holds one qdrant-edge shard per partition (a user): `u-` + 32 hex digits of the SHA-256 of the
point's `user_id` (`partition_folder_name`), or `u-default` for points without one. The key
itself is never written to disk. Folders of older versions, named by the raw namespace, are
renamed by `migrate_legacy_folders`; a namespace folder that is itself a shard (one shard per
namespace, the layout before partitions) is split by `_edge_rebuild.split_legacy_shard`.

Nothing here opens a shard; callers wrap the `OSError`s raised here in their own errors.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
from pathlib import Path

from memvault.index.base import NAMESPACE_PATTERN, validate_namespace

# The adapter's logger: these messages are `EdgeIndex`'s, wherever the code sits.
log = logging.getLogger("memvault.index.edge")

CONFIG_FILE = "edge_config.json"
RECORD_FILE = "namespace.json"
RECORD_FORMAT = 1
FOLDER_PREFIX = "ns-"
PARTITION_PREFIX = "u-"
DEFAULT_PARTITION = "u-default"
REBUILD_PREFIX = ".rebuild-"
TRASH_PREFIX = ".trash-"
DIRTY_FILE = "compact.pending"
"""In a partition folder: deleted points may still be in its files; `compact` rebuilds it."""
CHURN_FILE = "churn.count"
"""In a partition folder: `<replaced> <live>`, points replaced since its last rebuild (their old
vectors stay in its files) and its live points then; `churn_share` weighs them."""
REBUILT_FILE = "rebuild.done"
"""In a `.rebuild-u-…` folder: the new shard is complete, flushed and closed."""


def shard_folder_name(namespace: str) -> str:
    """The shard folder's name: `ns-` + the first 32 hex digits of SHA-256(namespace, UTF-8)."""
    validate_namespace(namespace)
    return FOLDER_PREFIX + _hex32(namespace)


def _hex32(value: str) -> str:
    return hashlib.sha256(value.encode("utf-8")).hexdigest()[:32]


def partition_folder_name(key: str | None) -> str:
    """A partition's folder: `u-` + 32 hex digits of SHA-256(key), or `u-default` for None."""
    return DEFAULT_PARTITION if key is None else PARTITION_PREFIX + _hex32(key)


def partition_key(payload: dict[str, object]) -> str | None:
    """The partition key of a point: its payload's `user_id` when that is a string, else None."""
    key = payload.get("user_id")
    return key if isinstance(key, str) else None


def is_partition_name(name: str) -> bool:
    """Whether `name` is a partition folder's name (`u-<32 hex>` or `u-default`)."""
    if name == DEFAULT_PARTITION:
        return True
    hexpart = name[len(PARTITION_PREFIX) :]
    return (
        name.startswith(PARTITION_PREFIX)
        and len(hexpart) == 32
        and all(c in "0123456789abcdef" for c in hexpart)
    )


def list_partitions(ns_folder: Path) -> list[str]:
    """The partitions of a namespace folder, sorted by folder name.

    A partition counts if its shard exists, or if an interrupted rebuild or drop left a
    `.rebuild-` or `.trash-` folder for it: opening it then finishes or undoes that first.
    """
    try:
        entries = list(ns_folder.iterdir())
    except FileNotFoundError:
        return []
    names = set()
    for entry in entries:
        name = entry.name
        for prefix in (REBUILD_PREFIX, TRASH_PREFIX):
            if name.startswith(prefix) and is_partition_name(name[len(prefix) :]):
                names.add(name[len(prefix) :])
        if is_partition_name(name) and is_shard(entry):
            names.add(name)
    return sorted(names)


def is_dirty(part_folder: Path) -> bool:
    """Whether the partition may still hold deleted points in its files."""
    return (part_folder / DIRTY_FILE).exists()


def mark_dirty(part_folder: Path) -> None:
    """Write the partition's dirty marker, fsynced with its folder entry, if not there yet."""
    marker = part_folder / DIRTY_FILE
    if marker.exists():
        return
    fd = os.open(marker, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    fsync_dir(part_folder)


def add_churn(part_folder: Path, replaced: int, live: int) -> None:
    """Count `replaced` more points replaced in place; `live` is the partition's size now.

    Written atomically but not fsynced: a crash may lose the count, which only delays the
    rebuild (`compact` still rebuilds any partition with a count, `maintain` once it grows).
    """
    before, _ = _read_churn(part_folder)
    tmp = part_folder / f".{CHURN_FILE}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, f"{before + replaced} {max(live, 0)}".encode("ascii"))
    finally:
        os.close(fd)
    os.replace(tmp, part_folder / CHURN_FILE)


def _read_churn(part_folder: Path) -> tuple[int, int]:
    try:
        replaced, live = (part_folder / CHURN_FILE).read_text(encoding="ascii").split()
        return max(int(replaced), 0), max(int(live), 0)
    except (OSError, ValueError):
        return 0, 0


def has_churn(part_folder: Path) -> bool:
    """Whether points were replaced in the partition since its last rebuild."""
    return (part_folder / CHURN_FILE).exists()


def churn_share(part_folder: Path) -> float:
    """Replaced points over replaced plus live ones: the share of dead vectors in its files."""
    replaced, live = _read_churn(part_folder)
    return replaced / (replaced + live) if replaced else 0.0


def is_shard(folder: Path) -> bool:
    """Whether `folder` holds a created shard (the engine writes its config file on create)."""
    return (folder / CONFIG_FILE).is_file()


def _looks_like_folder_id(name: str) -> bool:
    hexpart = name[len(FOLDER_PREFIX) :]
    return (
        name.startswith(FOLDER_PREFIX)
        and len(hexpart) == 32
        and all(c in "0123456789abcdef" for c in hexpart)
    )


def read_record(folder: Path) -> str | None:
    """The namespace recorded in `folder`, or None when there is no valid record."""
    try:
        record = json.loads((folder / RECORD_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    namespace = record.get("namespace") if isinstance(record, dict) else None
    if not isinstance(namespace, str) or not NAMESPACE_PATTERN.fullmatch(namespace):
        return None
    return namespace


def write_record(folder: Path, namespace: str) -> None:
    """Write `namespace.json` atomically (0600, fsynced, then renamed into place)."""
    data = json.dumps({"namespace": namespace, "format": RECORD_FORMAT}).encode("utf-8")
    tmp = folder / f".{RECORD_FILE}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, folder / RECORD_FILE)
    fsync_dir(folder)


def fsync_dir(directory: Path) -> None:
    """Fsync a directory so a rename or new entry in it survives a crash; errors are ignored."""
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def migrate_legacy_folders(root: Path) -> None:
    """Rename folders named by their raw namespace to their folder id, recording the name.

    The record is written first, then the folder renamed, so a crash in between is finished
    by the next open. A folder whose target already exists is left alone and logged.
    """
    for folder in sorted(root.iterdir()):
        if not folder.is_dir() or folder.name.startswith("."):
            continue
        namespace = read_record(folder)
        if namespace is None:
            if not is_shard(folder):
                continue  # not a shard (or a shard not created yet)
            if _looks_like_folder_id(folder.name) or not NAMESPACE_PATTERN.fullmatch(folder.name):
                log.warning("edge shard folder without a namespace record left alone")
                continue
            namespace = folder.name
            write_record(folder, namespace)
        target = root / shard_folder_name(namespace)
        if folder == target:
            continue
        if target.exists():
            log.warning("edge shard folder not migrated: its folder id is taken")
            continue
        os.rename(folder, target)
        fsync_dir(root)
        log.info("edge shard folder renamed to its folder id %s", target.name)


def list_namespaces(root: Path) -> list[str]:
    """Namespaces with a folder under `root`, sorted, read from their records.

    A folder counts only if its name is the folder id of its record.
    """
    found = []
    for folder in root.iterdir():
        if not folder.is_dir() or not _looks_like_folder_id(folder.name):
            continue
        namespace = read_record(folder)
        if namespace is not None and folder.name == shard_folder_name(namespace):
            found.append(namespace)
    return sorted(found)
