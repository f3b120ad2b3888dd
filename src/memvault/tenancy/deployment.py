"""Start-up checks of a deployment's shape, run when the services open.

- **The keystore is bound to its database** (`bind_keystore`): each records the other's id on
  first use; a worker whose keystore serves another database, or lacks the tenants this database
  has, refuses to start with one line (`KeystoreMismatch`).
- **A PostgreSQL keystore must be able to erase** (`Keyring.check_erasable`): see
  `keyring/_pg_scrub.py`.
- **One local vector index per database** (`claim_local_index`): a worker whose index is local
  (Qdrant Edge in DATA_DIR) on a PostgreSQL database holds a session advisory lock for its
  lifetime; a second such worker refuses to start, because each would keep its own vectors (an
  erase in one never reaches the other's). Several workers need a shared index
  (`MEMVAULT_QDRANT_URL`). `MEMVAULT_LOCAL_INDEX_PER_WORKER=true` lifts this, for tests only.
"""

from __future__ import annotations

import uuid

from sqlalchemy import create_engine, text
from sqlalchemy.exc import IntegrityError

from memvault.errors import VaultError
from memvault.keyring import Keyring
from memvault.store.database import Database


class LocalIndexInUse(VaultError):
    """Another worker with its own local vector index already serves this database."""

    code = "local_index_in_use"


def _identity(db: Database, name: str) -> str | None:
    with db.session(None) as sess:
        value = sess.execute(
            text("SELECT value FROM deployment_identity WHERE name = :n"), {"n": name}
        ).scalar()
    return None if value is None else str(value)


def _record(db: Database, name: str, value: str) -> str:
    try:
        with db.session(None) as sess:
            sess.execute(
                text("INSERT INTO deployment_identity (name, value) VALUES (:n, :v)"),
                {"n": name, "v": value},
            )
    except IntegrityError:
        pass
    stored = _identity(db, name)
    assert stored is not None
    return stored


def bind_keystore(db: Database, keyring: Keyring) -> None:
    """Bind the keystore and the database to each other, or refuse a mismatched pair."""
    from memvault.keyring._binding import KeystoreMismatch

    database_id = _identity(db, "database_id") or _record(db, "database_id", uuid.uuid4().hex)
    keystore_id = keyring.bind_database(database_id, db.tenant_ids())
    recorded = _record(db, "keystore_id", keystore_id)
    if recorded != keystore_id:
        raise KeystoreMismatch(
            "this database is bound to another keystore: point MEMVAULT_KEYSTORE_URL at "
            "this deployment's keystore"
        )


class LocalIndexClaim:
    """The session advisory lock a worker with a local index holds on its database."""

    def __init__(self, db: Database) -> None:
        self._engine = create_engine(db.url, isolation_level="AUTOCOMMIT")
        self._conn = self._engine.connect()
        got = self._conn.execute(
            text("SELECT pg_try_advisory_lock(hashtextextended('memvault.local-index:' || :s, 0))"),
            {"s": db.schema or "public"},
        ).scalar()
        if not got:
            self.close()
            raise LocalIndexInUse(
                "another worker with its own local vector index (Qdrant Edge) already serves "
                "this database; several workers need a shared index: set MEMVAULT_QDRANT_URL"
            )

    def close(self) -> None:
        """Release the claim (closing the connection ends the session lock)."""
        self._conn.close()
        self._engine.dispose()
