"""Ed25519 signatures over canonical JSON, and their offline verification.

`sign_document` signs with the deployment key (`Keyring.signing_keys()`); `verify_document` is
pure: it needs only the published public keys (`GET /v1/receipt-keys`), so an auditor's machine,
or `memvault receipt verify`, checks a receipt or an export head with no server and no keystore.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from memvault.canonical import canonical_json
from memvault.errors import VaultError

if TYPE_CHECKING:  # the keyring needs the server's packages; verifying needs only cryptography
    from memvault.keyring import SigningKeys

ALG = "Ed25519"


def sign_document(keys: SigningKeys, obj: Any) -> tuple[str, str]:
    """Sign the canonical JSON of `obj`: `(key_id, base64 signature)`."""
    return keys.sign(canonical_json(obj))


def sign_with_key_id(keys: SigningKeys, obj: Mapping[str, Any]) -> dict[str, Any]:
    """`obj` plus `key_id` and `signature`, where the signature covers `obj` WITH its `key_id`
    (the export head's format: signed over the head without `signature`)."""
    return keys.sign_with_key_id(obj)


def public_key_for(key_id: str, public_keys: Sequence[Mapping[str, Any]]) -> bytes | None:
    """The raw 32-byte Ed25519 public key listed under `key_id`, or None."""
    for entry in public_keys:
        if entry.get("key_id") == key_id and entry.get("alg") == ALG:
            try:
                raw = base64.b64decode(str(entry.get("public_key", "")), validate=True)
            except (binascii.Error, ValueError):
                return None
            return raw if len(raw) == 32 else None
    return None


def verify_bytes(
    message: bytes, key_id: str, signature_b64: str, public_keys: Sequence[Mapping[str, Any]]
) -> bool:
    """True when `signature_b64` is `key_id`'s Ed25519 signature of `message`."""
    raw = public_key_for(key_id, public_keys)
    if raw is None or not isinstance(signature_b64, str):
        return False
    try:
        signature = base64.b64decode(signature_b64, validate=True)
        Ed25519PublicKey.from_public_bytes(raw).verify(signature, message)
    except (binascii.Error, ValueError, InvalidSignature):
        return False
    return True


def verify_document(
    obj: Any, key_id: str, signature_b64: str, public_keys: Sequence[Mapping[str, Any]]
) -> bool:
    """True when `signature_b64` is `key_id`'s signature of the canonical JSON of `obj`.

    `public_keys` is the `keys` list of `GET /v1/receipt-keys`. Pure: no keystore, no network.
    A document with no canonical form (a float in it) does not verify.
    """
    try:
        message = canonical_json(obj)
    except VaultError:
        return False
    return verify_bytes(message, key_id, signature_b64, public_keys)
