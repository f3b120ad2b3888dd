"""`Keyring`: the key hierarchy (master → tenant key → data keys, index key) behind handles.

Tenant keys are wrapped by the master key provider; data keys (one per scope and version) and the
tenant's index key are wrapped by the tenant key with AAD naming what they are, so a wrapped key
copied to another row does not unwrap. Unwrapped keys live only in this process's memory, inside
handle objects, behind one lock.
"""

from __future__ import annotations

import functools
import logging
import threading
from typing import Literal

from memvault.errors import DecryptionError, InvalidRequest, KeyNotFound, VaultError
from memvault.keyring._aead import (
    MAX_KEY_VERSION,
    ScopeAead,
    ScopeKeyset,
    encode_fields,
)
from memvault.keyring._api_key_peppers import ApiKeyPeppers
from memvault.keyring._checkpoints import AuditCheckpoints
from memvault.keyring._index_key import IndexKey
from memvault.keyring._keyring_versions import KeyVersions
from memvault.keyring._keystore import KeyStore
from memvault.keyring._master import MasterKeyProvider
from memvault.keyring._primitives import AeadKey, HmacKey, Unpicklable, new_key_material
from memvault.keyring._signing import SigningKeys
from memvault.scope import Scope, validate_id

_log = logging.getLogger("memvault.keyring")


def _tenant_key_aad(tenant: str) -> bytes:
    return encode_fields(b"memvault.tenant-key.v1", tenant.encode())


def _data_key_aad(scope: Scope, version: int) -> bytes:
    return encode_fields(
        b"memvault.data-key.v1",
        scope.tenant.encode(),
        scope.user.encode(),
        scope.agent.encode(),
        version.to_bytes(4, "big"),
    )


def _index_key_aad(tenant: str) -> bytes:
    return encode_fields(b"memvault.index-key.v1", tenant.encode())


def _record_aad(tenant: str, purpose: str, record_id: str) -> bytes:
    return encode_fields(
        b"memvault.tenant-record.v1", tenant.encode(), purpose.encode(), record_id.encode()
    )


class Keyring(KeyVersions, ApiKeyPeppers, Unpicklable):
    """Hands out per-scope AEAD handles and per-tenant index keys; shreds and rotates keys.

    Thread-safe. Unwrapped keys are cached in memory; `shred` and `rotate_scope` invalidate the
    cache of this process (other processes keep theirs until they restart: see docs/keyring.md).
    """

    def __init__(self, store: KeyStore, master: MasterKeyProvider) -> None:
        """Use `Keyring.open`; this constructor takes already-built parts."""
        self._store = store
        self._master = master
        self._lock = threading.RLock()
        self._closed = False
        self._handles: dict[Scope, ScopeAead] = {}
        self._keysets: dict[Scope, ScopeKeyset] = {}
        self._tenant_keys: dict[str, AeadKey] = {}
        self._index_keys: dict[str, IndexKey] = {}
        foreign = self._store.master_key_ids() - {master.key_id}
        if foreign:
            raise KeyNotFound(
                f"keystore holds tenant keys wrapped by master key id(s) {sorted(foreign)}, "
                f"not by the given master ({master.key_id}); open it with that master"
            )

    @classmethod
    def open(cls, keystore_url: str, master: MasterKeyProvider) -> Keyring:
        """Open (creating its tables if needed) the keystore at a SQLAlchemy URL.

        Fails at once with `KeyNotFound` if the keystore's tenant keys were wrapped by another
        master key, so a wrong master is caught at startup, not at the first read.
        """
        if not isinstance(master, MasterKeyProvider):
            raise VaultError("master must be a MasterKeyProvider")
        store = KeyStore(keystore_url)
        try:
            return cls(store, master)
        except BaseException:
            store.close()
            raise

    # handles -----------------------------------------------------------------------------------
    def aead_for(self, scope: Scope, *, create: bool = True) -> ScopeAead:
        """The scope's AEAD handle; creates the tenant key and the scope's data key when missing.

        With `create=False` nothing is created: for a scope without keys (never written, or
        shredded) the handle decrypts nothing (`DecryptionError`) and cannot encrypt.
        """
        handle = self._handles.get(scope)
        if handle is not None:
            return handle
        return self._load_handle(scope, create)

    def index_key(self, tenant: str) -> IndexKey:
        """The tenant's index key (created with the tenant key when missing)."""
        key = self._index_keys.get(tenant)
        if key is not None:
            return key
        validate_id(tenant, "tenant_id")
        with self._lock:
            self._check_open()
            key = self._index_keys.get(tenant)
            if key is not None:
                return key
            tenant_key = self._tenant_key(tenant, create=True)
            assert tenant_key is not None
            wrapped = self._store.index_key(tenant)
            if wrapped is None:
                wrapped = tenant_key.seal(new_key_material(), _index_key_aad(tenant))
                if self._store.insert_index_key(tenant, wrapped):
                    _log.debug("index key created tenant=%s", tenant)
                else:
                    wrapped = self._store.index_key(tenant)
                    if wrapped is None:
                        raise KeyNotFound(f"index key of tenant {tenant} vanished while created")
            material = self._unwrap(tenant_key, wrapped, _index_key_aad(tenant), "index key")
            key = IndexKey(tenant, HmacKey(material))
            self._index_keys[tenant] = key
            return key

    # tenant records ----------------------------------------------------------------------------
    def seal_record(self, tenant: str, purpose: str, record_id: str, plaintext: bytes) -> bytes:
        """Seal a tenant-level record (an erasure job's subject, a receipt) under the tenant key.

        The tenant, `purpose` and `record_id` are bound as associated data, so a sealed record
        copied to another row or purpose does not open. The record outlives any user's erase
        (it needs no data key) and dies with the tenant's keys.
        """
        validate_id(tenant, "tenant_id")
        with self._lock:
            self._check_open()
            tenant_key = self._tenant_key(tenant, create=True)
            assert tenant_key is not None
            return tenant_key.seal(plaintext, _record_aad(tenant, purpose, record_id))

    def open_record(self, tenant: str, purpose: str, record_id: str, sealed: bytes) -> bytes:
        """Open a record sealed by `seal_record`; `DecryptionError` if it was altered or moved,
        `KeyNotFound` once the tenant's keys are gone."""
        validate_id(tenant, "tenant_id")
        with self._lock:
            self._check_open()
            tenant_key = self._tenant_key(tenant, create=False)
            if tenant_key is None:
                raise KeyNotFound("the tenant's keys are gone")
            return tenant_key.open(sealed, 0, _record_aad(tenant, purpose, record_id))

    def signing_keys(self) -> SigningKeys:
        """The deployment's Ed25519 signing keys, kept in this keystore and wrapped by the
        master key (the current provider, also after `rotate_master`). Created on first use."""
        with self._lock:
            self._check_open()
            keys: SigningKeys | None = self.__dict__.get("_signing_keys")
            if keys is None:
                keys = SigningKeys(self._store.engine, lambda: self._master, self._check_open)
                self.__dict__["_signing_keys"] = keys
            return keys

    def audit_checkpoints(self) -> AuditCheckpoints:
        """The signed audit checkpoints, kept in this keystore (apart from the data store)."""
        with self._lock:
            self._check_open()
            found: AuditCheckpoints | None = self.__dict__.get("_audit_checkpoints")
            if found is None:
                found = AuditCheckpoints(self._store.engine, self.signing_keys(), self._check_open)
                self.__dict__["_audit_checkpoints"] = found
            return found

    # lifecycle ---------------------------------------------------------------------------------
    def shred(self, tenant: str, user: str | None = None, agent: str | None = None) -> int:
        """Destroy the key material of (tenant[, user[, agent]]); returns how many keys went.

        Data keys matching the selector are deleted; with only `tenant`, the tenant key, the
        index key and the tenant's audit checkpoints go too (its audit log is deleted with it).
        Handles fetched before are invalidated at once. Ciphertext under those keys can never be
        decrypted again, here or in any backup of the data store.
        """
        self._check_selector(tenant, user, agent)
        with self._lock:
            self._check_open()
            try:
                if user is None:
                    self.audit_checkpoints().forget_tenant(tenant)
                removed = self._store.delete_keys(tenant, user, agent)
            finally:
                self._forget(tenant, user, agent)
            self._store.scrub()
        # No user or agent id in a log line: the audit log keeps user ids only as keyed
        # pseudonyms, and an erased user's id must be in no file after the erase.
        _log.info("keys shredded tenant=%s level=%s count=%d", tenant, _level(user, agent), removed)
        return removed

    def rotate_scope(self, scope: Scope) -> int:
        """Make a new data key version current for `scope`; returns it. Old versions still decrypt.

        Existing ciphertext is not re-encrypted; handles fetched before keep encrypting with the
        version they were given (which stays valid), new `aead_for` calls get the new one.
        """
        with self._lock:
            self._check_open()
            self._load_handle(scope, create=True)
            keyset = self._keysets[scope]
            tenant_key = self._tenant_key(scope.tenant, create=False)
            if tenant_key is None:
                raise KeyNotFound(f"tenant {scope.tenant} has no tenant key")
            for _ in range(5):
                existing = self._store.data_keys(scope)
                version = max((v for v, _ in existing), default=0) + 1
                if version > MAX_KEY_VERSION:
                    raise VaultError("data key versions exhausted for this scope")
                material = new_key_material()
                wrapped = tenant_key.seal(material, _data_key_aad(scope, version))
                if self._store.insert_data_key(scope, version, wrapped):
                    keyset.keys[version] = AeadKey(material)
                    self._handles[scope] = ScopeAead(scope, keyset, version)
                    _log.info(
                        "data key rotated tenant=%s version=%d",
                        scope.tenant,
                        version,
                    )
                    return version
            raise VaultError("could not rotate: concurrent rotations kept winning")

    def rotate_master(self, new_master: MasterKeyProvider) -> int:
        """Rewrap every tenant key under `new_master` in one transaction; returns how many.

        Data keys and index keys are wrapped by tenant keys, and note ciphertext by data keys, so
        none of them changes. Afterwards only `new_master` opens this keystore.
        """
        if not isinstance(new_master, MasterKeyProvider):
            raise VaultError("new_master must be a MasterKeyProvider")
        with self._lock:
            self._check_open()
            old = self._master

            def rewrap(tenant: str, key_id: str, wrapped: bytes) -> tuple[str, bytes]:
                if key_id == new_master.key_id:
                    return key_id, wrapped
                if key_id != old.key_id:
                    raise KeyNotFound(f"tenant {tenant} is wrapped by unknown master {key_id}")
                aad = _tenant_key_aad(tenant)
                try:
                    material = old.unwrap(wrapped, aad)
                except DecryptionError:
                    raise KeyNotFound(f"tenant key of {tenant} did not unwrap") from None
                return new_master.key_id, new_master.wrap(material, aad)

            count = self._store.rewrap_tenant_keys(rewrap)
            # The receipt signing keys are wrapped by the master too (a transaction of their own:
            # a crash in between is finished by running the rotation again with both keys).
            self.signing_keys().rewrap(old, new_master)
            self._master = new_master
            # An old master that leaked must not open old wrappings left in the file.
            self._store.scrub()
        _log.info(
            "master key rotated from=%s to=%s tenant_keys=%d", old.key_id, new_master.key_id, count
        )
        return count

    # queries -----------------------------------------------------------------------------------
    def count_keys(self, tenant: str, user: str | None = None, agent: str | None = None) -> int:
        """How many data keys (all versions) exist for (tenant[, user[, agent]])."""
        self._check_selector(tenant, user, agent)
        with self._lock:
            self._check_open()
            return self._store.count_data_keys(tenant, user, agent)

    def has_tenant(self, tenant: str) -> bool:
        """Whether the tenant has a tenant key (False after a tenant-level shred)."""
        with self._lock:
            self._check_open()
            return self._store.has_tenant(tenant)

    @property
    def master_key_id(self) -> str:
        """The id of the master key provider currently wrapping tenant keys."""
        return self._master.key_id

    def close(self) -> None:
        """Drop every cached key (handles stop working) and close the keystore connections."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            for keyset in self._keysets.values():
                keyset.destroy()
            for index_key in self._index_keys.values():
                index_key.destroy()
            self._handles.clear()
            self._keysets.clear()
            self._index_keys.clear()
            self._tenant_keys.clear()
            self._store.close()

    def __enter__(self) -> Keyring:
        return self

    def __exit__(self, *exc: object) -> Literal[False]:
        self.close()
        return False

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        backend, key_id = self._store.backend, self._master.key_id
        return f"Keyring(backend={backend!r}, master_key_id={key_id!r}, {state})"

    # internals ---------------------------------------------------------------------------------
    def _load_handle(self, scope: Scope, create: bool) -> ScopeAead:
        if not isinstance(scope, Scope):
            raise InvalidRequest("scope must be a Scope")
        with self._lock:
            self._check_open()
            handle = self._handles.get(scope)
            if handle is not None:
                return handle
            keyset = self._load_keyset(scope, create)
            if keyset is None:
                # Nothing to decrypt with and nothing created: a detached, empty handle.
                return ScopeAead(scope, ScopeKeyset({}, _fetch_nothing), 0)
            handle = ScopeAead(scope, keyset, max(keyset.keys))
            self._keysets[scope] = keyset
            self._handles[scope] = handle
            return handle

    def _load_keyset(self, scope: Scope, create: bool) -> ScopeKeyset | None:
        tenant_key = self._tenant_key(scope.tenant, create)
        if tenant_key is None:
            return None
        rows = self._store.data_keys(scope)
        if not rows:
            if not create:
                return None
            wrapped = tenant_key.seal(new_key_material(), _data_key_aad(scope, 1))
            if self._store.insert_data_key(scope, 1, wrapped):
                _log.debug(
                    "data key created tenant=%s version=1",
                    scope.tenant,
                )
            rows = self._store.data_keys(scope)
            if not rows:
                raise KeyNotFound("data key vanished while it was created (concurrent shred)")
        keys = {
            version: AeadKey(
                self._unwrap(tenant_key, wrapped, _data_key_aad(scope, version), "data key")
            )
            for version, wrapped in rows
        }
        return ScopeKeyset(keys, functools.partial(self._fetch_version, scope))

    def _fetch_version(self, scope: Scope, keyset: ScopeKeyset, version: int) -> AeadKey | None:
        """Load one data key version rotated in by another process; never creates one."""
        with self._lock:
            if keyset.destroyed or self._closed or self._keysets.get(scope) is not keyset:
                return None
            tenant_key = self._tenant_keys.get(scope.tenant)
            rows = self._store.data_keys(scope, version)
            if tenant_key is None or not rows:
                return None
            try:
                key = AeadKey(tenant_key.open(rows[0][1], 0, _data_key_aad(scope, version)))
            except DecryptionError:
                return None
            keyset.keys[version] = key
            return key

    def _tenant_key(self, tenant: str, create: bool) -> AeadKey | None:
        key = self._tenant_keys.get(tenant)
        if key is not None:
            return key
        row = self._store.tenant_key(tenant)
        if row is None:
            if not create:
                return None
            wrapped = self._master.wrap(new_key_material(), _tenant_key_aad(tenant))
            if self._store.insert_tenant_key(tenant, self._master.key_id, wrapped):
                _log.debug("tenant key created tenant=%s", tenant)
            row = self._store.tenant_key(tenant)
            if row is None:
                raise KeyNotFound(f"tenant key of {tenant} vanished while it was created")
        key_id, wrapped = row
        if key_id != self._master.key_id:
            raise KeyNotFound(
                f"tenant key of {tenant} is wrapped by master {key_id}, "
                f"not by the configured master {self._master.key_id}"
            )
        try:
            material = self._master.unwrap(wrapped, _tenant_key_aad(tenant))
        except DecryptionError:
            raise KeyNotFound(f"tenant key of {tenant} did not unwrap") from None
        key = AeadKey(material)
        self._tenant_keys[tenant] = key
        return key

    @staticmethod
    def _unwrap(tenant_key: AeadKey, wrapped: bytes, aad: bytes, what: str) -> bytes:
        try:
            return tenant_key.open(wrapped, 0, aad)
        except DecryptionError:
            raise KeyNotFound(f"{what} did not unwrap under its tenant key") from None

    def _forget(self, tenant: str, user: str | None, agent: str | None) -> None:
        for scope in [s for s in self._keysets if _matches(s, tenant, user, agent)]:
            self._keysets.pop(scope).destroy()
            self._handles.pop(scope, None)
        for scope in [s for s in self._handles if _matches(s, tenant, user, agent)]:
            self._handles.pop(scope, None)
        if user is None:
            self._tenant_keys.pop(tenant, None)
            index_key = self._index_keys.pop(tenant, None)
            if index_key is not None:
                index_key.destroy()

    def _check_open(self) -> None:
        if self._closed:
            raise VaultError("keyring is closed")

    @staticmethod
    def _check_selector(tenant: str, user: str | None, agent: str | None) -> None:
        validate_id(tenant, "tenant_id")
        if user is not None:
            validate_id(user, "user_id")
        if agent is not None:
            if user is None:
                raise InvalidRequest("agent_id needs user_id")
            validate_id(agent, "agent_id")


def _fetch_nothing(_keyset: ScopeKeyset, _version: int) -> AeadKey | None:
    return None


def _matches(scope: Scope, tenant: str, user: str | None, agent: str | None) -> bool:
    return (
        scope.tenant == tenant
        and (user is None or scope.user == user)
        and (agent is None or scope.agent == agent)
    )


def _level(user: str | None, agent: str | None) -> str:
    """What a shred covered, for the log: `tenant`, `user` or `agent` (never the ids)."""
    return "tenant" if user is None else ("user" if agent is None else "agent")
