"""Seals note fields into AES-GCM envelopes bound to their scope, row and field, and opens them."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from memvault.errors import DecryptionError, KeyNotFound, ScopeErasing
from memvault.keyring import Keyring, associated_data
from memvault.scope import Scope

TEXT_FIELD = "text"
ATTRS_FIELD = "attrs"


class NoteCodec:
    """Encrypts a note's text and its derived attributes under the storage scope's data key.

    The associated data names the scope, the note id, the field and the key version, so a
    ciphertext copied to another row, scope or field fails to decrypt. `erasing(tenant, user,
    agent)` (the scope guard's) tells a note whose scope an erase is shredding: another agent's
    read that meets one mid-erase gets `ScopeErasing` (409), not a `DecryptionError` (500).
    """

    def __init__(
        self, keyring: Keyring, erasing: Callable[[str, str, str], bool] | None = None
    ) -> None:
        self._keyring = keyring
        self._erasing = erasing

    @contextmanager
    def _opening(self, scope: Scope) -> Iterator[None]:
        try:
            yield
        except (DecryptionError, KeyNotFound):
            if self._erasing is not None and self._erasing(scope.tenant, scope.user, scope.agent):
                raise ScopeErasing("this note's scope is being erased") from None
            raise

    def seal(
        self, scope: Scope, note_id: str, text: str, attrs: dict[str, Any]
    ) -> tuple[int, bytes, bytes]:
        """Return (key version, text envelope, attrs envelope)."""
        aead = self._keyring.aead_for(scope)
        version = aead.key_version
        text_ct = aead.encrypt(
            text.encode("utf-8"), associated_data(scope, note_id, TEXT_FIELD, version)
        )
        attrs_ct = aead.encrypt(
            json.dumps(attrs, separators=(",", ":"), sort_keys=True).encode("utf-8"),
            associated_data(scope, note_id, ATTRS_FIELD, version),
        )
        return version, text_ct, attrs_ct

    def open(
        self, scope: Scope, note_id: str, key_version: int, text_ct: bytes, attrs_ct: bytes
    ) -> tuple[str, dict[str, Any]]:
        """Decrypt (text, attrs); any failure raises `DecryptionError`. Never mints a key."""
        with self._opening(scope):
            aead = self._keyring.aead_for(scope, create=False)
            text = aead.decrypt(text_ct, associated_data(scope, note_id, TEXT_FIELD, key_version))
            attrs = aead.decrypt(
                attrs_ct, associated_data(scope, note_id, ATTRS_FIELD, key_version)
            )
        return text.decode("utf-8"), json.loads(attrs)

    def open_attrs(
        self, scope: Scope, note_id: str, key_version: int, attrs_ct: bytes
    ) -> dict[str, Any]:
        """Decrypt the attributes alone (search's re-ranking stage reads no text)."""
        with self._opening(scope):
            aead = self._keyring.aead_for(scope, create=False)
            attrs = aead.decrypt(
                attrs_ct, associated_data(scope, note_id, ATTRS_FIELD, key_version)
            )
        return dict(json.loads(attrs))
