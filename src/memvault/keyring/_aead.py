"""`ScopeAead`: the per-scope AEAD handle, its envelope format, and the one AAD builder.

Envelope: `FORMAT_VERSION` (1 byte) | key version (4 bytes BE) | nonce (12) | ciphertext+tag.
The 5-byte header is authenticated too (it is prepended to the caller's associated data), so any
changed byte anywhere in the envelope fails to decrypt.
"""

from __future__ import annotations

import struct
from collections.abc import Callable

from memvault.errors import DecryptionError, InvalidRequest, KeyNotFound
from memvault.keyring._primitives import NONCE_BYTES, TAG_BYTES, AeadKey, Unpicklable
from memvault.scope import Scope

FORMAT_VERSION = 1
"""First byte of every envelope and of every note AAD; bump it when either layout changes."""

MAX_KEY_VERSION = 2**32 - 1
HEADER_BYTES = 5
MIN_ENVELOPE_BYTES = HEADER_BYTES + NONCE_BYTES + TAG_BYTES

_HEADER = struct.Struct(">BI")
_U32 = struct.Struct(">I")
_FORMAT_BYTE = bytes((FORMAT_VERSION,))


def check_key_version(key_version: int) -> int:
    """Return `key_version` if it fits the envelope's 4-byte field, else raise `InvalidRequest`."""
    if (
        not isinstance(key_version, int)
        or isinstance(key_version, bool)
        or not 0 <= key_version <= MAX_KEY_VERSION
    ):
        raise InvalidRequest("key_version must be an int in [0, 2**32 - 1]")
    return key_version


def envelope_key_version(envelope: bytes) -> int | None:
    """The data key version an envelope made by `ScopeAead.encrypt` names (its header, read
    without decrypting); None for bytes that are not such an envelope."""
    if len(envelope) < MIN_ENVELOPE_BYTES or envelope[0] != FORMAT_VERSION:
        return None
    return int(_U32.unpack_from(envelope, 1)[0])


def encode_fields(*fields: bytes) -> bytes:
    """Length-prefix (4 bytes BE) each field and join them: distinct tuples never collide."""
    return b"".join(_U32.pack(len(field)) + field for field in fields)


def associated_data(scope: Scope, note_id: str, field: str, key_version: int) -> bytes:
    """The AAD for one encrypted field of one note. The vault builds AAD only through this.

    It binds format version | tenant | user | agent | note id | field | key version, so a
    ciphertext copied to another scope, note, field or key version fails to decrypt. Strings are
    UTF-8 and length-prefixed; the key version is a fixed 4-byte trailer.
    """
    if not isinstance(scope, Scope):
        raise InvalidRequest("scope must be a Scope")
    if not isinstance(note_id, str) or not isinstance(field, str):
        raise InvalidRequest("note_id and field must be str")
    check_key_version(key_version)
    return (
        _FORMAT_BYTE
        + encode_fields(
            scope.tenant.encode(),
            scope.user.encode(),
            scope.agent.encode(),
            note_id.encode(),
            field.encode(),
        )
        + _U32.pack(key_version)
    )


class ScopeKeyset(Unpicklable):
    """The unwrapped data keys of one scope, by version, shared by every handle of that scope.

    `destroy()` (on shred or close) empties it, so handles fetched earlier stop working at once.
    `fetch` loads a version this process has not seen (rotated by another process); it never
    creates a key.
    """

    __slots__ = ("_fetch", "destroyed", "keys")

    def __init__(
        self, keys: dict[int, AeadKey], fetch: Callable[[ScopeKeyset, int], AeadKey | None]
    ) -> None:
        self.keys = keys
        self.destroyed = False
        self._fetch: Callable[[ScopeKeyset, int], AeadKey | None] | None = fetch

    def lookup(self, version: int) -> AeadKey | None:
        key = self.keys.get(version)
        if key is not None:
            return key
        fetch = self._fetch
        if fetch is None or self.destroyed or (self.keys and version < max(self.keys)):
            return None
        return fetch(self, version)

    def destroy(self) -> None:
        self.destroyed = True
        self.keys.clear()
        self._fetch = None

    def __repr__(self) -> str:
        return f"ScopeKeyset(versions={sorted(self.keys)}, destroyed={self.destroyed})"


class ScopeAead(Unpicklable):
    """Encrypts and decrypts one scope's fields. Never exposes a key or a nonce.

    `encrypt` uses the data key version current when the handle was fetched (`key_version`);
    `decrypt` reads the version from the envelope and accepts any version the scope still holds.
    Every decrypt failure raises `DecryptionError` with one message. After `Keyring.shred` the
    handle is dead: `decrypt` raises `DecryptionError`, `encrypt` raises `KeyNotFound`.
    """

    __slots__ = ("_header", "_keyset", "_scope", "_version")

    def __init__(self, scope: Scope, keyset: ScopeKeyset, key_version: int) -> None:
        self._scope = scope
        self._keyset = keyset
        self._version = check_key_version(key_version)
        self._header = _HEADER.pack(FORMAT_VERSION, key_version)

    @property
    def scope(self) -> Scope:
        """The scope whose keys this handle uses."""
        return self._scope

    @property
    def key_version(self) -> int:
        """The data key version `encrypt` uses; put it into `associated_data(...)`."""
        return self._version

    def encrypt(self, plaintext: bytes, associated_data: bytes) -> bytes:
        """Seal `plaintext` under the scope's current data key, bound to `associated_data`."""
        key = self._keyset.keys.get(self._version)
        if key is None:
            raise KeyNotFound("the scope's data key is gone (shredded or closed); call aead_for")
        header = self._header
        return header + key.seal(plaintext, header + associated_data)

    def decrypt(self, ciphertext: bytes, associated_data: bytes) -> bytes:
        """Open an envelope made by `encrypt` with the same `associated_data`."""
        if len(ciphertext) < MIN_ENVELOPE_BYTES or ciphertext[0] != FORMAT_VERSION:
            raise DecryptionError()
        key = self._keyset.lookup(_U32.unpack_from(ciphertext, 1)[0])
        if key is None:
            raise DecryptionError()
        return key.open(ciphertext, HEADER_BYTES, ciphertext[:HEADER_BYTES] + associated_data)

    def __repr__(self) -> str:
        s = self._scope
        return (
            f"ScopeAead(tenant={s.tenant!r}, user={s.user!r}, agent={s.agent!r}, "
            f"key_version={self._version})"
        )
