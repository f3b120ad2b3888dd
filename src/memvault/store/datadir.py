"""The data directory: one process at a time (an exclusive lock), and private files.

The embedded default keeps everything in DATA_DIR: the SQLite data store and keystore, the Edge
shards, the master key file and the operator key file. Edge shards take a WAL lock of their own,
but only when a shard is first touched, so without a lock on the whole directory a second
`memvault serve` would start, answer `/healthz`, and then fail every request. `DataDirLock` takes
an exclusive `flock` on `DATA_DIR/memvault.lock` for as long as the services are open: a second
process (serve, reconcile, any CLI command) fails at once with `DataDirInUse`, and so does a
second opening in the same process. The kernel drops the lock when the process dies, even on
kill -9, so a crash never leaves a stale lock behind.

This module imports only the standard library, so the CLI can take the lock before it imports
the heavy parts (engines, models) and a refused command exits within a second or two.

Error messages name what to do, never a filesystem path.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from memvault.errors import VaultError

if TYPE_CHECKING:
    from memvault.config import Settings

LOCK_FILE = "memvault.lock"
"""The lock file inside DATA_DIR. It holds the pid of the process that has the lock."""

_SQLITE_SIDECARS = ("", "-wal", "-shm", "-journal")


class DataDirInUse(VaultError):
    """Another process (or another opening in this one) holds the data directory."""

    code = "data_dir_in_use"


_held: set[tuple[int, int]] = set()
"""(st_dev, st_ino) of the lock files this process holds; stable while their fd stays open."""
_held_guard = threading.Lock()


class DataDirLock:
    """An exclusive lock on a data directory, held until `release()` (or the process ends)."""

    __slots__ = ("_fd", "_key")

    def __init__(self, fd: int, key: tuple[int, int]) -> None:
        self._fd: int | None = fd
        self._key = key

    @classmethod
    def acquire(cls, data_dir: Path) -> DataDirLock:
        """Lock `data_dir` (created 0700 if missing), or raise `DataDirInUse` at once."""
        private_dir(data_dir)
        flags = os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0)
        try:
            fd = os.open(Path(data_dir) / LOCK_FILE, flags, 0o600)
        except OSError as exc:
            raise DataDirInUse(
                f"cannot create the data directory's lock file ({_reason(exc)})"
            ) from None
        try:
            # flock locks belong to the open file description: a second open() of the same
            # file conflicts even within this process, so a double opening is refused too.
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            holder = _read_pid(fd)
            mine = _key(fd) in _held
            os.close(fd)
            if not isinstance(exc, BlockingIOError):
                raise DataDirInUse(f"cannot lock the data directory ({_reason(exc)})") from None
            if mine:
                raise DataDirInUse(
                    "the data directory is already open in this process: "
                    "close those services before opening it again"
                ) from None
            who = f" (pid {holder})" if holder else ""
            raise DataDirInUse(
                f"the data directory is in use by another memvault process{who}: "
                "stop that process first, or use another --data-dir / MEMVAULT_DATA_DIR"
            ) from None
        with contextlib.suppress(OSError):
            os.fchmod(fd, 0o600)
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        key = _key(fd)
        with _held_guard:
            _held.add(key)
        return cls(fd, key)

    @property
    def held(self) -> bool:
        return self._fd is not None

    def release(self) -> None:
        """Drop the lock (idempotent). The lock file stays: removing it would race a new owner."""
        with _held_guard:
            fd, self._fd = self._fd, None
            if fd is None:
                return
            _held.discard(self._key)
            try:
                with contextlib.suppress(OSError):
                    fcntl.flock(fd, fcntl.LOCK_UN)
            finally:
                os.close(fd)

    def __repr__(self) -> str:
        return f"DataDirLock(held={self.held})"


def needs_lock(settings: Settings) -> bool:
    """True when a single-process store lives in DATA_DIR: the SQLite data store or keystore
    (their default URLs), or the Edge shards (no Qdrant URL).

    A deployment whose database, keystore and index are all configured elsewhere (PostgreSQL,
    a Qdrant server) takes no lock: its API workers are stateless and may share a DATA_DIR.
    """
    return (
        settings.database_url is None
        or settings.keystore_url is None
        or settings.qdrant_url is None
    )


def private_dir(path: Path) -> None:
    """Create `path` (and parents) if missing and make it 0700."""
    try:
        Path(path).mkdir(parents=True, exist_ok=True, mode=0o700)
        os.chmod(path, 0o700)
    except OSError as exc:
        raise VaultError(f"cannot prepare the data directory ({_reason(exc)})") from None


def private_sqlite_file(url: str) -> None:
    """For a SQLite file URL: create the database file 0600 if missing, tighten an existing one.

    SQLite creates its `-wal`, `-shm` and `-journal` files with the database file's mode, so a
    0600 database keeps them 0600 too. Existing files (from an older version) are tightened.
    Other URLs are left alone.
    """
    from sqlalchemy.engine import make_url

    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite" or parsed.database in (None, "", ":memory:"):
        return
    database = str(parsed.database)
    if database.startswith("file:"):
        return  # a URI filename: the caller chose its own open mode
    try:
        fd = os.open(database, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        pass
    except OSError as exc:
        raise VaultError(f"cannot create the SQLite database file ({_reason(exc)})") from None
    else:
        os.close(fd)
    for suffix in _SQLITE_SIDECARS:
        with contextlib.suppress(OSError):
            sidecar = database + suffix
            if os.stat(sidecar).st_mode & 0o077:
                os.chmod(sidecar, 0o600)


def _key(fd: int) -> tuple[int, int]:
    info = os.fstat(fd)
    return (info.st_dev, info.st_ino)


def _read_pid(fd: int) -> int | None:
    try:
        text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def _reason(exc: OSError) -> str:
    """An OS error without its filename: the strerror, or the exception's type."""
    return exc.strerror or type(exc).__name__
