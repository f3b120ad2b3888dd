"""API key peppers: the per-tenant keyed hash that API key digests are made with.

`Keyring` inherits these methods. The pepper is a sub-key of the tenant's index key
(`IndexKey.api_key_digest`), so it is wrapped by the tenant key, which the master key provider
wraps: it never lives in the data store, and SQL that can write `api_keys` cannot make a row that
authenticates. The keystore also records that the one-time upgrade of plain SHA-256 digests ran
(`keyring_identity`: `api_key_digests`), so a plain digest written later is never upgraded.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from memvault.keyring._binding import _get, _put

if TYPE_CHECKING:
    from memvault.keyring._index_key import IndexKey
    from memvault.keyring._keystore import KeyStore

API_KEY_DIGESTS = "api_key_digests"
"""The `keyring_identity` row recording that plain SHA-256 digests were upgraded to HMACs."""
API_KEY_DIGESTS_SCHEME = "hmac-sha256-v1"


class ApiKeyPeppers:
    """Per-tenant API key peppers and the record of the one-time digest upgrade."""

    _lock: threading.RLock
    _store: KeyStore
    _index_keys: dict[str, IndexKey]

    def _check_open(self) -> None:
        raise NotImplementedError

    def index_key(self, tenant: str) -> IndexKey:
        raise NotImplementedError

    def api_key_pepper(self, tenant: str, *, create: bool = False) -> IndexKey | None:
        """The tenant's index key, whose `api_key_digest` makes and checks API key digests.

        With `create=False` (authentication) nothing is created: a tenant without an index key
        has no key that could authenticate, and None is returned. Issuing a key creates it.
        """
        key = self._index_keys.get(tenant)
        if key is not None:
            return key
        if not create:
            with self._lock:
                self._check_open()
                if self._store.index_key(tenant) is None:
                    return None
        return self.index_key(tenant)

    def api_key_digests_upgraded(self) -> bool:
        """Whether this keystore's deployment already upgraded plain SHA-256 digests."""
        with self._lock:
            self._check_open()
            return _get(self._store.engine, API_KEY_DIGESTS) is not None

    def record_api_key_digests_upgraded(self) -> None:
        """Record (once, for good) that every plain SHA-256 digest was upgraded."""
        with self._lock:
            self._check_open()
            _put(self._store.engine, API_KEY_DIGESTS, API_KEY_DIGESTS_SCHEME)
