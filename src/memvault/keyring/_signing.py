"""`SigningKeys`: the deployment's Ed25519 signing key (export heads, erasure receipts).

One current key per deployment, created on first use. Its private half is wrapped by the master
key provider with associated data naming what it is and its key id, and kept in the keystore
database (table `keyring_signing_keys`); its public half is stored raw (32 bytes). A rotation
retires the current key (it stays listed, so old signatures still verify) and makes a new one.
The private key never leaves this module: no accessor, no repr, no pickling.
"""

from __future__ import annotations

import base64
import hashlib
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import (
    Encoding,
    NoEncryption,
    PrivateFormat,
    PublicFormat,
)
from sqlalchemy import (
    BigInteger,
    Column,
    Engine,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    select,
    update,
)
from sqlalchemy.exc import IntegrityError

from memvault.canonical import canonical_json, rfc3339
from memvault.errors import DecryptionError, KeyNotFound, VaultError
from memvault.keyring._aead import encode_fields
from memvault.keyring._master import MasterKeyProvider
from memvault.keyring._primitives import Unpicklable

ALG = "Ed25519"
CURRENT = 1
"""The `current` column of the one current key; retired keys hold NULL (unique: one current)."""

metadata = MetaData()

signing_keys = Table(
    "keyring_signing_keys",
    metadata,
    Column("key_id", String(64), primary_key=True),
    Column("public_key", LargeBinary, nullable=False),
    Column("master_key_id", String(256), nullable=False),
    Column("wrapped_private_key", LargeBinary, nullable=False),
    Column("created_at", BigInteger, nullable=False),
    Column("retired_at", BigInteger, nullable=True),
    Column("current", Integer, nullable=True, unique=True),
)


def signing_key_id(public_key: bytes) -> str:
    """The public, stable id of a signing key: `ed25519-` and 16 hex of SHA-256(public key)."""
    return "ed25519-" + hashlib.sha256(public_key).hexdigest()[:16]


def _private_key_aad(key_id: str) -> bytes:
    return encode_fields(b"memvault.signing-key.v1", key_id.encode())


class _PrivateKey(Unpicklable):
    """An Ed25519 private key that signs and never gives its bytes back."""

    __slots__ = ("_key", "key_id")

    def __init__(self, key_id: str, key: Ed25519PrivateKey) -> None:
        self.key_id = key_id
        self._key = key

    def sign(self, message: bytes) -> bytes:
        return self._key.sign(message)

    def __repr__(self) -> str:
        return f"SigningKey(key_id={self.key_id!r}, <secret>)"


class SigningKeys(Unpicklable):
    """The deployment's signing keys. Thread-safe; other processes see a rotation at their next
    `rotate` or restart (`sign` re-reads the current key id every `refresh_seconds`)."""

    refresh_seconds: float = 30.0

    def __init__(
        self,
        engine: Engine,
        master: Callable[[], MasterKeyProvider],
        check_open: Callable[[], None] = lambda: None,
    ) -> None:
        """`engine` is the keystore's; `master` returns the current master key provider."""
        self._engine = engine
        self._master = master
        self._check_open = check_open
        self._lock = threading.Lock()
        self._current: _PrivateKey | None = None
        self._loaded_at = 0.0
        metadata.create_all(engine, checkfirst=True)

    def sign(self, message: bytes) -> tuple[str, str]:
        """Sign `message` with the current key: `(key_id, base64 signature)`."""
        with self._lock:
            key = self._current_key()
            return key.key_id, base64.b64encode(key.sign(message)).decode("ascii")

    def sign_with_key_id(self, document: Mapping[str, Any]) -> dict[str, Any]:
        """`document` plus `key_id` and `signature`, where the Ed25519 signature covers the
        canonical JSON (`memvault.canonical`) of `document` WITH its `key_id` (the format of
        export heads and audit checkpoints: signed over everything but `signature`)."""
        with self._lock:
            key = self._current_key()
            signed = {**document, "key_id": key.key_id}
            signature = key.sign(canonical_json(signed))
        return {**signed, "signature": base64.b64encode(signature).decode("ascii")}

    def current_key_id(self) -> str:
        """The id of the key `sign` uses now (created on first use)."""
        with self._lock:
            return self._current_key().key_id

    def public_keys(self) -> list[dict[str, Any]]:
        """Every key, current and retired, oldest first, in the `GET /v1/receipt-keys` format:
        `{"key_id", "alg": "Ed25519", "public_key": base64 of 32 raw bytes, "created_at"}`."""
        with self._lock:
            self._current_key()
            with self._engine.connect() as conn:
                rows = conn.execute(
                    select(
                        signing_keys.c.key_id,
                        signing_keys.c.public_key,
                        signing_keys.c.created_at,
                    ).order_by(
                        # oldest first; the current key last (retired keys may share its second)
                        signing_keys.c.current.is_not(None),
                        signing_keys.c.created_at,
                        signing_keys.c.retired_at,
                        signing_keys.c.key_id,
                    )
                ).all()
        return [
            {
                "key_id": str(key_id),
                "alg": ALG,
                "public_key": base64.b64encode(bytes(public)).decode("ascii"),
                "created_at": rfc3339(int(created)),
            }
            for key_id, public, created in rows
        ]

    def rotate(self) -> str:
        """Retire the current key (it stays listed) and make a new one current; return its id."""
        with self._lock:
            self._check_open()
            now = int(time.time())
            for _ in range(5):
                private = Ed25519PrivateKey.generate()
                row, key = self._new_row(private, now)
                try:
                    with self._engine.begin() as conn:
                        conn.execute(
                            update(signing_keys)
                            .where(signing_keys.c.current == CURRENT)
                            .values(current=None, retired_at=now)
                        )
                        conn.execute(signing_keys.insert().values(**row))
                except IntegrityError:
                    continue  # another process rotated at the same moment: try again
                self._current, self._loaded_at = key, time.monotonic()
                return key.key_id
            raise VaultError("could not rotate the signing key: concurrent rotations kept winning")

    def rewrap(self, old: MasterKeyProvider, new: MasterKeyProvider) -> int:
        """Rewrap every signing key wrapped by `old` under `new` (a master key rotation)."""
        with self._lock, self._engine.begin() as conn:
            rows = conn.execute(
                select(signing_keys.c.key_id, signing_keys.c.wrapped_private_key).where(
                    signing_keys.c.master_key_id == old.key_id
                )
            ).all()
            for key_id, wrapped in rows:
                aad = _private_key_aad(str(key_id))
                try:
                    raw = old.unwrap(bytes(wrapped), aad)
                except DecryptionError:
                    raise KeyNotFound(f"signing key {key_id} did not unwrap") from None
                conn.execute(
                    update(signing_keys)
                    .where(signing_keys.c.key_id == key_id)
                    .values(master_key_id=new.key_id, wrapped_private_key=new.wrap(raw, aad))
                )
            return len(rows)

    def __repr__(self) -> str:
        return "SigningKeys(alg='Ed25519')"

    # internals ---------------------------------------------------------------------------------
    def _current_key(self) -> _PrivateKey:
        self._check_open()
        key = self._current
        if key is not None and time.monotonic() - self._loaded_at < self.refresh_seconds:
            return key
        for _ in range(5):
            with self._engine.connect() as conn:
                row = conn.execute(
                    select(
                        signing_keys.c.key_id,
                        signing_keys.c.master_key_id,
                        signing_keys.c.wrapped_private_key,
                    ).where(signing_keys.c.current == CURRENT)
                ).first()
            if row is not None:
                if key is None or key.key_id != row[0]:
                    key = self._unwrap(str(row[0]), str(row[1]), bytes(row[2]))
                self._current, self._loaded_at = key, time.monotonic()
                return key
            values, created = self._new_row(Ed25519PrivateKey.generate(), int(time.time()))
            try:
                with self._engine.begin() as conn:
                    conn.execute(signing_keys.insert().values(**values))
            except IntegrityError:
                continue  # another process created the first key: load it
            self._current, self._loaded_at = created, time.monotonic()
            return created
        raise VaultError("could not create the signing key")

    def _new_row(self, private: Ed25519PrivateKey, now: int) -> tuple[dict[str, Any], _PrivateKey]:
        public = private.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
        key_id = signing_key_id(public)
        raw = private.private_bytes(Encoding.Raw, PrivateFormat.Raw, NoEncryption())
        master = self._master()
        row = {
            "key_id": key_id,
            "public_key": public,
            "master_key_id": master.key_id,
            "wrapped_private_key": master.wrap(raw, _private_key_aad(key_id)),
            "created_at": now,
            "retired_at": None,
            "current": CURRENT,
        }
        return row, _PrivateKey(key_id, private)

    def _unwrap(self, key_id: str, master_key_id: str, wrapped: bytes) -> _PrivateKey:
        master = self._master()
        if master_key_id != master.key_id:
            raise KeyNotFound(
                f"signing key {key_id} is wrapped by master {master_key_id}, "
                f"not by the configured master {master.key_id}"
            )
        try:
            raw = master.unwrap(wrapped, _private_key_aad(key_id))
        except DecryptionError:
            raise KeyNotFound(f"signing key {key_id} did not unwrap") from None
        private = Ed25519PrivateKey.from_private_bytes(raw)
        public = private.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
        if signing_key_id(public) != key_id:
            raise KeyNotFound(f"signing key {key_id} does not match its id")
        return _PrivateKey(key_id, private)
