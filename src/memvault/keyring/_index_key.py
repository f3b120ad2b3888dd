"""`IndexKey`: a tenant's keyed hash for blind index tokens and tags (no word stored in clear)."""

from __future__ import annotations

from memvault.errors import KeyNotFound
from memvault.keyring._aead import encode_fields
from memvault.keyring._primitives import HmacKey, Unpicklable

_TOKEN_LABEL = b"memvault.index.token-id"
_TAG_LABEL = b"memvault.index.tag"
_API_KEY_LABEL = b"memvault.api-key.digest.v1"
API_KEY_DIGEST_PREFIX = "h1"
"""Marks a stored API key digest as an HMAC under the tenant's pepper (`IndexKey.api_key_digest`);
a plain SHA-256 hex digest never starts with it (hex has no `h`)."""


class IndexKey(Unpicklable):
    """Deterministic within a tenant, unrelated across tenants; dead after the tenant is shredded.

    Token ids, tags and API key digests use separate sub-keys, so a token's id never reveals a
    tag of the same string or the other way round, and no index value is an API key digest.
    """

    __slots__ = ("_api_key", "_tag_key", "_tenant", "_token_key")

    def __init__(self, tenant: str, key: HmacKey) -> None:
        self._tenant = tenant
        self._token_key: HmacKey | None = key.derive(_TOKEN_LABEL)
        self._tag_key: HmacKey | None = key.derive(_TAG_LABEL)
        self._api_key: HmacKey | None = key.derive(_API_KEY_LABEL)

    @property
    def tenant(self) -> str:
        return self._tenant

    def token_id(self, token: str) -> int:
        """HMAC-SHA256 of the normalized token, truncated to an unsigned 32-bit int (sparse ids)."""
        key = self._token_key
        if key is None:
            raise KeyNotFound("the tenant's index key is gone (shredded or closed)")
        return int.from_bytes(key.digest(token.encode())[:4], "big")

    def tag(self, value: str) -> str:
        """A 32-hex-char HMAC tag of `value` (blind payload tags, keyed content hashes)."""
        key = self._tag_key
        if key is None:
            raise KeyNotFound("the tenant's index key is gone (shredded or closed)")
        return key.digest(value.encode())[:16].hex()

    def api_key_digest(self, key_id: str, secret_sha256: bytes) -> str:
        """The stored digest of an API key: `h1` and 62 hex chars of an HMAC-SHA256, under the
        tenant's API key pepper, of the key id and the SHA-256 of the secret.

        The pepper is a sub-key of the index key (wrapped by the tenant key, which the master
        key provider wraps), so it never lives in the data store: SQL that can write `api_keys`
        cannot compute a digest that authenticates. The key id is bound, so a digest copied to
        another key row does not match there.
        """
        key = self._api_key
        if key is None:
            raise KeyNotFound("the tenant's index key is gone (shredded or closed)")
        message = encode_fields(key_id.encode(), secret_sha256)
        return API_KEY_DIGEST_PREFIX + key.digest(message).hex()[:62]

    def destroy(self) -> None:
        """Drop the key (on shred or close); later calls raise `KeyNotFound`."""
        self._token_key = None
        self._tag_key = None
        self._api_key = None

    def __repr__(self) -> str:
        return f"IndexKey(tenant={self._tenant!r})"
