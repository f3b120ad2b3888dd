"""The on-disk layout of `EdgeIndex`'s root: one shard folder per namespace, named by folder id.

A folder's name is `ns-` + 32 hex digits of the SHA-256 of the namespace (`shard_folder_name`),
never the raw tenant string: `GLOBEX` and `globex` would share one folder on a case-insensitive
file system. Each folder records its namespace in `namespace.json`. Folders of older versions,
named by the raw namespace, are renamed by `migrate_legacy_folders`.

Nothing here opens a shard; callers wrap the `OSError`s raised here in their own errors.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
from pathlib import Path

from memvault.vault.index.base import NAMESPACE_PATTERN, validate_namespace

# The adapter's logger: these messages are `EdgeIndex`'s, wherever the code sits.
log = logging.getLogger("memvault.vault.index.edge")

CONFIG_FILE = "edge_config.json"
RECORD_FILE = "namespace.json"
RECORD_FORMAT = 1
FOLDER_PREFIX = "ns-"


def shard_folder_name(namespace: str) -> str:
    """The shard folder's name: `ns-` + the first 32 hex digits of SHA-256(namespace, UTF-8)."""
    validate_namespace(namespace)
    return FOLDER_PREFIX + hashlib.sha256(namespace.encode("utf-8")).hexdigest()[:32]


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
    """Namespaces with a shard folder under `root`, sorted, read from their records.

    A folder counts only if it holds a shard and its name is the folder id of its record.
    """
    found = []
    for folder in root.iterdir():
        if not is_shard(folder):
            continue
        namespace = read_record(folder)
        if namespace is not None and folder.name == shard_folder_name(namespace):
            found.append(namespace)
    return sorted(found)
