"""`IndexKey`: a tenant's keyed hash for blind index tokens and tags (no word stored in clear)."""

from __future__ import annotations

from memvault.errors import KeyNotFound
from memvault.keyring._primitives import HmacKey, Unpicklable

_TOKEN_LABEL = b"memvault.index.token-id"
_TAG_LABEL = b"memvault.index.tag"


class IndexKey(Unpicklable):
    """Deterministic within a tenant, unrelated across tenants; dead after the tenant is shredded.

    Token ids and tags use separate sub-keys, so a token's id never reveals a tag of the same
    string or the other way round.
    """

    __slots__ = ("_tag_key", "_tenant", "_token_key")

    def __init__(self, tenant: str, key: HmacKey) -> None:
        self._tenant = tenant
        self._token_key: HmacKey | None = key.derive(_TOKEN_LABEL)
        self._tag_key: HmacKey | None = key.derive(_TAG_LABEL)

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

    def destroy(self) -> None:
        """Drop the key (on shred or close); later calls raise `KeyNotFound`."""
        self._token_key = None
        self._tag_key = None

    def __repr__(self) -> str:
        return f"IndexKey(tenant={self._tenant!r})"
