"""A keystore and its database record each other's identity, so neither is paired by mistake.

A worker started without `MEMVAULT_KEYSTORE_URL` used to open a fresh keystore beside a shared
database, mint new tenant and index keys for tenants the database already had, and fork the key
hierarchy (its writes unreadable everywhere else, and the reverse). On first use the keystore
stores the database's id (`keyring_identity`: `database_id`) and its own (`keystore_id`); the
database stores the keystore's (`deployment_identity`, see `store/identity.py`).
"""

from __future__ import annotations

import uuid

from sqlalchemy import Engine, select
from sqlalchemy.exc import IntegrityError

from memvault.errors import VaultError
from memvault.keyring._keystore import identity, tenant_keys


class KeystoreMismatch(VaultError):
    """The keystore does not belong to this database (or lacks its tenants' keys)."""

    code = "keystore_mismatch"


def _get(engine: Engine, name: str) -> str | None:
    with engine.connect() as conn:
        value = conn.scalar(select(identity.c.value).where(identity.c.name == name))
    return None if value is None else str(value)


def _put(engine: Engine, name: str, value: str) -> str:
    """Insert unless present; the stored value (another worker may have won the race)."""
    try:
        with engine.begin() as conn:
            conn.execute(identity.insert().values(name=name, value=value))
    except IntegrityError:
        pass
    stored = _get(engine, name)
    assert stored is not None
    return stored


def bind(engine: Engine, database_id: str, tenants: list[str]) -> str:
    """Bind the keystore to `database_id` (first use) or check it; returns the keystore's id."""
    bound = _get(engine, "database_id")
    if bound is None:
        with engine.connect() as conn:
            have = set(conn.scalars(select(tenant_keys.c.tenant_id)))
        missing = [t for t in tenants if t not in have]
        if missing:
            raise KeystoreMismatch(
                f"the keystore (MEMVAULT_KEYSTORE_URL) holds no keys for {len(missing)} tenant(s) "
                "this database has: it is not this deployment's keystore"
            )
        bound = _put(engine, "database_id", database_id)
    if bound != database_id:
        raise KeystoreMismatch(
            "the keystore (MEMVAULT_KEYSTORE_URL) belongs to another database: "
            "point MEMVAULT_KEYSTORE_URL at this deployment's keystore"
        )
    return _put(engine, "keystore_id", uuid.uuid4().hex)
