"""Master key (KEK) providers: they wrap and unwrap tenant keys and never hand out their own key.

`MasterKeyProvider` is the seam for a real KMS (HashiCorp Vault transit, a cloud KMS): such a
provider sends the tenant key to the KMS to wrap/unwrap it and never sees the master key at all.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hashlib
import os
import stat
import tempfile
from pathlib import Path
from typing import Protocol, runtime_checkable

from memvault.errors import VaultError
from memvault.keyring._primitives import KEY_BYTES, AeadKey, Unpicklable, new_key_material

DEFAULT_MASTER_KEY_ENV = "MEMVAULT_MASTER_KEY"
_KEY_FILE = "the master key file (MEMVAULT_MASTER_KEY_FILE, default DATA_DIR/master.key)"


@runtime_checkable
class MasterKeyProvider(Protocol):
    """Wraps tenant keys under a master key that stays inside the provider.

    `key_id` is stable for one master key and is stored beside every key it wrapped, so
    rotation knows which master wrapped what. `unwrap` raises `DecryptionError` on any failure.
    """

    @property
    def key_id(self) -> str: ...

    def wrap(self, key: bytes, associated_data: bytes) -> bytes: ...

    def unwrap(self, wrapped: bytes, associated_data: bytes) -> bytes: ...


def master_key_id(material: bytes) -> str:
    """A public, stable id for a local master key: 8 hex chars of a domain-separated SHA-256."""
    return hashlib.sha256(b"memvault.master-key-id\x00" + material).hexdigest()[:8]


class LocalMasterKey(Unpicklable):
    """A master key held in this process (from a file or an environment variable)."""

    __slots__ = ("_key", "_key_id")

    def __init__(self, material: bytes) -> None:
        self._key = AeadKey(material)
        self._key_id = master_key_id(material)

    @property
    def key_id(self) -> str:
        return self._key_id

    def wrap(self, key: bytes, associated_data: bytes) -> bytes:
        return self._key.seal(key, associated_data)

    def unwrap(self, wrapped: bytes, associated_data: bytes) -> bytes:
        return self._key.open(wrapped, 0, associated_data)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(key_id={self._key_id!r})"


class FileMasterKey(LocalMasterKey):
    """A 32-byte master key in a file with mode 0600, created atomically on first use.

    Refuses (with `VaultError`) a file that group or others may read or write, a file of the wrong
    size, or a path that is not a regular file. Loads or creates the key when constructed, so a
    misconfiguration fails at startup rather than at the first write. Messages name the setting
    (MEMVAULT_MASTER_KEY_FILE), never the path.
    """

    __slots__ = ("_path",)

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self._path = Path(path)
        super().__init__(_load_or_create_key_file(self._path))

    @property
    def path(self) -> Path:
        return self._path

    def __repr__(self) -> str:
        return f"FileMasterKey(path={str(self._path)!r}, key_id={self.key_id!r})"


class EnvMasterKey(LocalMasterKey):
    """A master key given base64-encoded (32 bytes decoded) in an environment variable."""

    __slots__ = ("_var",)

    def __init__(self, var: str = DEFAULT_MASTER_KEY_ENV) -> None:
        self._var = var
        value = os.environ.get(var)
        if not value:
            raise VaultError(f"environment variable {var} is not set")
        try:
            material = base64.b64decode(value.strip(), validate=True)
        except (binascii.Error, ValueError):
            raise VaultError(f"environment variable {var} is not valid base64") from None
        if len(material) != KEY_BYTES:
            raise VaultError(f"environment variable {var} must decode to {KEY_BYTES} bytes")
        super().__init__(material)

    def __repr__(self) -> str:
        return f"EnvMasterKey(var={self._var!r}, key_id={self.key_id!r})"


def _load_or_create_key_file(path: Path) -> bytes:
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except FileNotFoundError:
        return _create_key_file(path)
    except OSError as exc:
        raise VaultError(f"cannot open {_KEY_FILE} ({_reason(exc)})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise VaultError(f"{_KEY_FILE} is not a regular file")
        if info.st_mode & 0o077:
            raise VaultError(
                f"{_KEY_FILE} has mode {stat.S_IMODE(info.st_mode):o}; "
                "group/other must have no access (chmod 600)"
            )
        material = os.read(fd, KEY_BYTES + 1)
    finally:
        os.close(fd)
    if len(material) != KEY_BYTES:
        raise VaultError(f"{_KEY_FILE} must hold exactly {KEY_BYTES} bytes")
    return material


def _create_key_file(path: Path) -> bytes:
    """Write a new key to a 0600 temp file, fsync, then hard-link it into place.

    `os.link` fails if the path exists, so two processes starting at once agree on one key, and a
    crash never leaves a half-written key file at `path`.
    """
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd, tmp_name = tempfile.mkstemp(prefix=".master-key-", dir=path.parent)
    except OSError as exc:
        raise VaultError(f"cannot create {_KEY_FILE} ({_reason(exc)})") from None
    material = new_key_material()
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(material)
            handle.flush()
            os.fsync(handle.fileno())
        try:
            os.link(tmp_name, path)
        except FileExistsError:
            return _load_or_create_key_file(path)
        _fsync_dir(path.parent)
        return material
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp_name)


def _reason(exc: OSError) -> str:
    """An OS error's text without its filename."""
    return exc.strerror or type(exc).__name__


def install_master_key_file(pending: Path, current: Path) -> None:
    """Move the `pending` key file over `current` durably (rename, then fsync the directory)."""
    os.replace(pending, current)
    _fsync_dir(current.parent)


def remove_master_key_file(path: Path) -> None:
    """Delete the key file at `path` durably (unlink, then fsync the directory)."""
    path.unlink()
    _fsync_dir(path.parent)


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
