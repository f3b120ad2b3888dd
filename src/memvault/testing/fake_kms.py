"""`FakeKms`: an in-memory `MasterKeyProvider` double: a KMS whose key never leaves it."""

from __future__ import annotations

import secrets

from memvault.errors import DecryptionError
from memvault.keyring._primitives import AeadKey, Unpicklable, new_key_material


class FakeKms(Unpicklable):
    """Wraps and unwraps with a random in-memory key; counts calls; can be disabled.

    `disable()` simulates a KMS key that was scheduled for deletion: every later `unwrap` (and
    `wrap`) raises `DecryptionError`.
    """

    __slots__ = ("_disabled", "_key", "_key_id", "unwrap_calls", "wrap_calls")

    def __init__(self, key_id: str | None = None) -> None:
        self._key = AeadKey(new_key_material())
        self._key_id = key_id or f"fake-kms-{secrets.token_hex(4)}"
        self._disabled = False
        self.wrap_calls = 0
        self.unwrap_calls = 0

    @property
    def key_id(self) -> str:
        return self._key_id

    def wrap(self, key: bytes, associated_data: bytes) -> bytes:
        self.wrap_calls += 1
        if self._disabled:
            raise DecryptionError()
        return self._key.seal(key, associated_data)

    def unwrap(self, wrapped: bytes, associated_data: bytes) -> bytes:
        self.unwrap_calls += 1
        if self._disabled:
            raise DecryptionError()
        return self._key.open(wrapped, 0, associated_data)

    def disable(self) -> None:
        """Refuse every later wrap/unwrap, like a KMS key pending deletion."""
        self._disabled = True

    def __repr__(self) -> str:
        return f"FakeKms(key_id={self._key_id!r})"
