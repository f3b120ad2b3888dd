"""Key versions and rotation records: the part of `Keyring` that key rotation uses.

`Keyring` inherits these methods; they share its lock, keystore and caches. Kept apart so the
key hierarchy (`_keyring.py`) stays readable.
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING, Any

from memvault.errors import InvalidRequest
from memvault.keyring._aead import ScopeAead, ScopeKeyset
from memvault.keyring._binding import bind
from memvault.scope import Scope

if TYPE_CHECKING:
    from memvault.keyring._keystore import KeyStore

_log = logging.getLogger("memvault.keyring")


class KeyVersions:
    """Destroying old data key versions, listing scopes and versions, rotation job records."""

    _lock: threading.RLock
    _store: KeyStore
    _handles: dict[Scope, ScopeAead]
    _keysets: dict[Scope, ScopeKeyset]

    def _check_open(self) -> None:
        raise NotImplementedError

    @staticmethod
    def _check_selector(tenant: str, user: str | None, agent: str | None) -> None:
        raise NotImplementedError

    def forget(self, tenant: str, user: str | None = None, agent: str | None = None) -> None:
        """Drop this process's unwrapped keys of (tenant[, user[, agent]]); the keystore keeps
        them. Called when another worker may have shredded them (docs/keyring.md)."""
        with self._lock:
            self._forget(tenant, user, agent)

    def _forget(self, tenant: str, user: str | None, agent: str | None) -> None:
        raise NotImplementedError

    def check_erasable(self) -> None:
        """Refuse (`KeystoreNotErasable`) a keystore whose shred cannot reach deleted keys."""
        self._store.check_erasable()

    def reach_facts(self, backup_retention_days: int) -> list[dict[str, Any]]:
        """Copies of the keystore a shred cannot reach (archives, replicas, backups)."""
        return self._store.reach_facts(backup_retention_days)

    def bind_database(self, database_id: str, tenants: list[str]) -> str:
        """Bind this keystore to the database `database_id` on first use; return its own id.

        `KeystoreMismatch` (one line) when it serves another database, or, never bound before,
        lacks tenant keys of `tenants` (the database's tenants): a fresh keystore beside a
        database that already has tenants would fork the key hierarchy.
        """
        return bind(self._store.engine, database_id, tenants)

    def destroy_versions_below(self, scope: Scope, version: int) -> int:
        """Delete the scope's data key versions older than `version`, then scrub the keystore.

        For retiring versions after every ciphertext under them was re-encrypted: whatever is
        still sealed under a destroyed version can never be decrypted again. Returns how many
        versions went; the cached copies in this process go at once. Nothing is deleted unless
        `version` itself exists (a scope shredded and re-created since restarts at version 1,
        and its new keys must not go).
        """
        if not isinstance(scope, Scope):
            raise InvalidRequest("scope must be a Scope")
        with self._lock:
            self._check_open()
            if not self._store.data_keys(scope, version):
                return 0
            removed = self._store.delete_data_keys_below(scope, version)
            keyset = self._keysets.get(scope)
            if keyset is not None:
                for old in [v for v in keyset.keys if v < version]:
                    keyset.keys.pop(old)
            handle = self._handles.get(scope)
            if handle is not None and handle.key_version < version:
                # Rotated by another process: reload from the keystore at the next aead_for.
                self._handles.pop(scope, None)
                self._keysets.pop(scope, None)
            self._store.scrub()
        _log.info(
            "data key versions destroyed tenant=%s below=%d count=%d",
            scope.tenant,
            version,
            removed,
        )
        return removed

    def key_scopes(
        self, tenant: str, user: str | None = None, agent: str | None = None
    ) -> list[Scope]:
        """Every scope of (tenant[, user[, agent]]) that holds data keys."""
        self._check_selector(tenant, user, agent)
        with self._lock:
            self._check_open()
            return self._store.key_scopes(tenant, user, agent)

    def key_versions(self, scope: Scope) -> list[int]:
        """The data key versions the keystore holds for `scope`, oldest first."""
        with self._lock:
            self._check_open()
            return [v for v, _ in self._store.data_keys(scope)]

    # rotation records (ids and counts, kept beside the keys they describe) ---------------------
    def save_rotation(self, tenant: str, rotation_id: str, state: str, record: str) -> None:
        """Store a rotation job's record (JSON of ids, versions and counts; never text)."""
        with self._lock:
            self._check_open()
            self._store.save_rotation(tenant, rotation_id, state, record)

    def forget_rotations(self, tenant: str, records: dict[str, tuple[str, str] | None]) -> None:
        """Replace (`(state, JSON)`) or delete (None) rotation records, then scrub the keystore.

        For an erase: records naming the erased user must leave every file of the keystore.
        """
        with self._lock:
            self._check_open()
            for rotation_id, record in records.items():
                if record is None:
                    self._store.delete_rotation(tenant, rotation_id)
                else:
                    self._store.save_rotation(tenant, rotation_id, *record)
            if records:
                self._store.scrub()

    def load_rotation(self, tenant: str, rotation_id: str) -> str | None:
        """A rotation job's record, or None."""
        with self._lock:
            self._check_open()
            return self._store.rotation(tenant, rotation_id)

    def rotation_tenants(self, state: str) -> list[str]:
        """Tenants with a rotation job in `state` (one query, for maintenance sweeps)."""
        with self._lock:
            self._check_open()
            return self._store.rotation_tenants(state)

    def rotation_ids(self, tenant: str, state: str | None = None) -> list[str]:
        """The tenant's rotation job ids (in `state` if given), oldest first."""
        with self._lock:
            self._check_open()
            return self._store.rotation_ids(tenant, state)
