"""Hazmat layer: the only module that touches raw key bytes, nonces and `cryptography`'s AESGCM.

Everything above it holds `AeadKey`/`HmacKey` objects, which encrypt, decrypt and MAC but never give
their bytes back, never print them and refuse pickling. Nonces are drawn here and nowhere else.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from typing import NoReturn

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from memvault.errors import DecryptionError

KEY_BYTES = 32
"""AES-256 and HMAC-SHA256 key length."""
NONCE_BYTES = 12
"""AES-GCM's 96-bit nonce, random per message."""
TAG_BYTES = 16
_SHA256_BLOCK = 64
"""SHA-256's block size: an HMAC key shorter than it is padded with zeros (RFC 2104)."""

# Test hooks: a known-answer test monkeypatches these module globals to pin a key and a nonce.
# Production code reads them at call time and never replaces them.
_nonce_source: Callable[[int], bytes] = os.urandom
_key_source: Callable[[int], bytes] = os.urandom


def new_key_material() -> bytes:
    """Fresh random bytes for a new key (tenant key, data key, index key)."""
    material = _key_source(KEY_BYTES)
    if len(material) != KEY_BYTES:
        raise ValueError("key source returned the wrong length")
    return material


class Unpicklable:
    """Mixin for anything holding key material: pickling or copying it raises `TypeError`."""

    __slots__ = ()

    def _refuse(self) -> NoReturn:
        raise TypeError(f"{type(self).__name__} holds key material and cannot be pickled or copied")

    def __reduce__(self) -> NoReturn:
        self._refuse()

    def __reduce_ex__(self, protocol: object) -> NoReturn:
        self._refuse()

    def __getstate__(self) -> NoReturn:
        self._refuse()


class AeadKey(Unpicklable):
    """An AES-256-GCM key: seals with a fresh random nonce; open fails only as `DecryptionError`."""

    __slots__ = ("_cipher",)

    def __init__(self, material: bytes) -> None:
        if len(material) != KEY_BYTES:
            raise ValueError("AES-256-GCM needs a 32-byte key")
        self._cipher = AESGCM(material)

    def seal(self, plaintext: bytes, associated_data: bytes) -> bytes:
        """Return `nonce | ciphertext | tag` for `plaintext` bound to `associated_data`."""
        nonce = _nonce_source(NONCE_BYTES)
        if len(nonce) != NONCE_BYTES:
            raise ValueError("nonce source returned the wrong length")
        return nonce + self._cipher.encrypt(nonce, plaintext, associated_data)

    def open(self, sealed: bytes, offset: int, associated_data: bytes) -> bytes:
        """Open `sealed[offset:]` (`nonce | ciphertext | tag`), or raise `DecryptionError`."""
        body = offset + NONCE_BYTES
        if len(sealed) < body + TAG_BYTES:
            raise DecryptionError()
        try:
            return self._cipher.decrypt(sealed[offset:body], sealed[body:], associated_data)
        except (InvalidTag, ValueError):
            raise DecryptionError() from None

    def __repr__(self) -> str:
        return "AeadKey(<secret>)"


class HmacKey(Unpicklable):
    """An HMAC-SHA256 key for keyed hashes (blind index tokens and tags).

    It keeps SHA-256 states that have already absorbed the key's inner and outer pads (RFC 2104),
    not the key bytes, and finishes each MAC from copies of them. That is half the work of
    `hmac.digest`, and, unlike `hmac.digest`, which lets go of the GIL on every call however
    short the message, it keeps the GIL for messages under hashlib's 2 KiB threshold: a search
    or an add computes one MAC per token, and in a busy server every release can wait a
    switch interval (5 ms) to get the GIL back (docs/performance.md, "Keyed hashes").
    """

    __slots__ = ("_inner", "_outer")

    def __init__(self, material: bytes) -> None:
        if len(material) != KEY_BYTES:
            raise ValueError("HMAC key must be 32 bytes")
        block = material.ljust(_SHA256_BLOCK, b"\0")
        self._inner = hashlib.sha256(bytes(b ^ 0x36 for b in block))
        self._outer = hashlib.sha256(bytes(b ^ 0x5C for b in block))

    def digest(self, message: bytes) -> bytes:
        """HMAC-SHA256 of `message` (32 bytes), equal to `hmac.digest(key, message, "sha256")`."""
        inner = self._inner.copy()
        inner.update(message)
        outer = self._outer.copy()
        outer.update(inner.digest())
        return outer.digest()

    def derive(self, label: bytes) -> HmacKey:
        """A sub-key for one purpose, so two uses of one key never share outputs."""
        return HmacKey(self.digest(label))

    def __repr__(self) -> str:
        return "HmacKey(<secret>)"
