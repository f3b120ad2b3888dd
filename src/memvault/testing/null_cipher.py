"""A no-encryption `ScopeAead`/`Keyring` pair, only for benchmarks that measure encryption cost.

Never use these to store data: the "ciphertext" is the plaintext behind a 5-byte header whose
format byte is 0, so a real `ScopeAead` refuses it.
"""

from __future__ import annotations

import inspect
import struct
from collections.abc import Callable
from typing import Any

from memvault.errors import DecryptionError
from memvault.keyring import (
    AuditCheckpoints,
    IndexKey,
    Keyring,
    MasterKeyProvider,
    ScopeAead,
    SigningKeys,
)
from memvault.keyring._aead import HEADER_BYTES, ScopeKeyset, check_key_version
from memvault.scope import Scope

NULL_FORMAT = 0
_HEADER = struct.Struct(">BI")


class NullAead(ScopeAead):
    """Same interface as `ScopeAead`; envelope = header (format 0, key version) + plaintext."""

    __slots__ = ()

    def __init__(self, scope: Scope, key_version: int) -> None:
        self._scope = scope
        self._keyset = ScopeKeyset({}, lambda _keyset, _version: None)
        self._version = check_key_version(key_version)
        self._header = _HEADER.pack(NULL_FORMAT, key_version)

    def encrypt(self, plaintext: bytes, associated_data: bytes) -> bytes:
        return self._header + plaintext

    def decrypt(self, ciphertext: bytes, associated_data: bytes) -> bytes:
        if len(ciphertext) < HEADER_BYTES or ciphertext[0] != NULL_FORMAT:
            raise DecryptionError()
        return ciphertext[HEADER_BYTES:]

    def __repr__(self) -> str:
        return f"NullAead(tenant={self._scope.tenant!r}, key_version={self._version})"


class NullKeyring(Keyring):
    """Wraps a real `Keyring`: `aead_for` returns `NullAead`, every other method delegates.

    Keys are still created and counted by the real keyring, so the vault behaves the same apart
    from the missing encryption.
    """

    def __init__(self, inner: Keyring) -> None:  # no super().__init__: everything delegates
        self._inner = inner
        self._null_handles: dict[Scope, NullAead] = {}

    @classmethod
    def open(cls, keystore_url: str, master: MasterKeyProvider) -> NullKeyring:
        return cls(Keyring.open(keystore_url, master))

    def aead_for(self, scope: Scope, *, create: bool = True) -> ScopeAead:
        real = self._inner.aead_for(scope, create=create)
        handle = self._null_handles.get(scope)
        if handle is None or handle.key_version != real.key_version:
            handle = NullAead(scope, real.key_version)
            self._null_handles[scope] = handle
        return handle

    def index_key(self, tenant: str) -> IndexKey:
        return self._inner.index_key(tenant)

    def shred(self, tenant: str, user: str | None = None, agent: str | None = None) -> int:
        self._null_handles.clear()
        return self._inner.shred(tenant, user, agent)

    def rotate_scope(self, scope: Scope) -> int:
        return self._inner.rotate_scope(scope)

    def signing_keys(self) -> SigningKeys:
        return self._inner.signing_keys()

    def audit_checkpoints(self) -> AuditCheckpoints:
        return self._inner.audit_checkpoints()

    def rotate_master(self, new_master: MasterKeyProvider) -> int:
        return self._inner.rotate_master(new_master)

    def count_keys(self, tenant: str, user: str | None = None, agent: str | None = None) -> int:
        return self._inner.count_keys(tenant, user, agent)

    def has_tenant(self, tenant: str) -> bool:
        return self._inner.has_tenant(tenant)

    @property
    def master_key_id(self) -> str:
        return self._inner.master_key_id

    def close(self) -> None:
        self._inner.close()

    def __repr__(self) -> str:
        return f"NullKeyring({self._inner!r})"


def _forwarder(name: str) -> Callable[..., Any]:
    def forward(self: NullKeyring, *args: Any, **kwargs: Any) -> Any:
        return getattr(self._inner, name)(*args, **kwargs)

    forward.__name__ = name
    forward.__doc__ = f"Delegates `Keyring.{name}` to the wrapped keyring."
    return forward


def _forward_the_rest() -> None:
    """Every public `Keyring` method `NullKeyring` does not define goes to the wrapped keyring.

    `Keyring`'s own method would run on this wrapper, which has none of its state (the wrapper
    never calls `super().__init__`); a method added to `Keyring` later is covered the same way.
    """
    for name in dir(Keyring):
        static = inspect.getattr_static(Keyring, name)
        if name.startswith("_") or name in vars(NullKeyring) or not callable(static):
            continue
        if isinstance(static, classmethod | staticmethod):
            continue
        setattr(NullKeyring, name, _forwarder(name))


_forward_the_rest()
