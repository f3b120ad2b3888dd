"""The keystore: wrapped keys in their own database (SQLAlchemy Core; SQLite WAL or PostgreSQL).

It stores only wrapped key bytes and ids; it never sees a plaintext key. Primary keys begin with
`tenant_id`. On SQLite every connection runs with `secure_delete=ON`, and `scrub()` checkpoints and
truncates the WAL, so a shredded key's wrapped bytes are overwritten in the file. A scrub that
cannot checkpoint raises `ScrubFailed`: it never gives up silently.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable
from typing import Any

from sqlalchemy import (
    BigInteger,
    Column,
    Engine,
    LargeBinary,
    MetaData,
    String,
    Table,
    Text,
    create_engine,
    delete,
    event,
    func,
    select,
    update,
)
from sqlalchemy.engine import make_url
from sqlalchemy.exc import IntegrityError
from sqlalchemy.pool import StaticPool

from memvault.errors import VaultError
from memvault.keyring import _pg_scrub
from memvault.scope import Scope

metadata = MetaData()

tenant_keys = Table(
    "keyring_tenant_keys",
    metadata,
    Column("tenant_id", String(128), primary_key=True),
    Column("master_key_id", String(256), nullable=False),
    Column("wrapped_key", LargeBinary, nullable=False),
    Column("created_at", BigInteger, nullable=False),
)

data_keys = Table(
    "keyring_data_keys",
    metadata,
    Column("tenant_id", String(128), primary_key=True),
    Column("user_id", String(128), primary_key=True),
    Column("agent_id", String(128), primary_key=True),
    Column("version", BigInteger, primary_key=True, autoincrement=False),
    Column("wrapped_key", LargeBinary, nullable=False),
    Column("created_at", BigInteger, nullable=False),
)

index_keys = Table(
    "keyring_index_keys",
    metadata,
    Column("tenant_id", String(128), primary_key=True),
    Column("wrapped_key", LargeBinary, nullable=False),
    Column("created_at", BigInteger, nullable=False),
)

# A data key rotation and its re-encryption job: ids, versions and counts only (never text).
rotations = Table(
    "keyring_rotations",
    metadata,
    Column("tenant_id", String(128), primary_key=True),
    Column("id", String(64), primary_key=True),
    Column("state", String(16), nullable=False),
    Column("record", Text, nullable=False),  # JSON: selector, scopes and target versions, counts
    Column("created_at", BigInteger, nullable=False),
)


# Which database this keystore serves, and its own id (`Keyring.bind_database`).
identity = Table(
    "keyring_identity",
    metadata,
    Column("name", String(64), primary_key=True),
    Column("value", String(256), nullable=False),
)


class ScrubFailed(VaultError):
    """The keystore's WAL could not be checkpointed after a shred or rewrap.

    The keys are deleted, but their wrapped bytes may still sit in the WAL file until a later
    scrub succeeds (every shred scrubs again). Usually another connection held a read snapshot.
    """

    code = "keystore_scrub_failed"


_BUSY_TIMEOUT_MS = 10000


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    try:
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA secure_delete=ON")
        # A lost data key loses every note under it: make key inserts durable at commit.
        cursor.execute("PRAGMA synchronous=FULL")
        cursor.execute(f"PRAGMA busy_timeout={_BUSY_TIMEOUT_MS}")
    finally:
        cursor.close()


class KeyStore:
    """Rows of wrapped keys. Callers serialize access (the `Keyring` holds a lock).

    `scrub_timeout` bounds how long `scrub()` keeps trying to checkpoint, in seconds.
    """

    scrub_timeout: float = 10.0

    def __init__(self, url: str) -> None:
        parsed = make_url(url)
        self.backend = parsed.get_backend_name()
        kwargs: dict[str, Any] = {"hide_parameters": True}
        if self.backend == "sqlite":
            self._sqlite_file = parsed.database not in (None, "", ":memory:")
            if self._sqlite_file and parsed.database:
                _create_private_file(parsed.database)
            else:
                kwargs.update(poolclass=StaticPool, connect_args={"check_same_thread": False})
        else:
            self._sqlite_file = False
            kwargs["pool_pre_ping"] = True
        self.engine: Engine = create_engine(parsed, **kwargs)
        if self.backend == "sqlite":
            event.listen(self.engine, "connect", _sqlite_pragmas)
        _pg_scrub.create_tables(self.engine, metadata)  # locked on PostgreSQL

    # tenant keys -------------------------------------------------------------------------------
    def tenant_key(self, tenant: str) -> tuple[str, bytes] | None:
        """`(master_key_id, wrapped)` of the tenant key, or None."""
        with self.engine.connect() as conn:
            row = conn.execute(
                select(tenant_keys.c.master_key_id, tenant_keys.c.wrapped_key).where(
                    tenant_keys.c.tenant_id == tenant
                )
            ).first()
        return None if row is None else (row[0], bytes(row[1]))

    def insert_tenant_key(self, tenant: str, master_key_id: str, wrapped: bytes) -> bool:
        """Insert; False if another writer created the tenant key first."""
        return self._insert(
            tenant_keys.insert().values(
                tenant_id=tenant,
                master_key_id=master_key_id,
                wrapped_key=wrapped,
                created_at=int(time.time()),
            )
        )

    def has_tenant(self, tenant: str) -> bool:
        return self.tenant_key(tenant) is not None

    def master_key_ids(self) -> set[str]:
        """Every master key id that wraps some tenant key."""
        with self.engine.connect() as conn:
            return set(conn.scalars(select(tenant_keys.c.master_key_id).distinct()))

    def rewrap_tenant_keys(self, rewrap: Callable[[str, str, bytes], tuple[str, bytes]]) -> int:
        """Replace every tenant key's wrapping in ONE transaction: all or nothing."""
        count = 0
        with self.engine.begin() as conn:
            rows = conn.execute(
                select(
                    tenant_keys.c.tenant_id, tenant_keys.c.master_key_id, tenant_keys.c.wrapped_key
                )
            ).all()
            for tenant, key_id, wrapped in rows:
                new_id, new_wrapped = rewrap(tenant, key_id, bytes(wrapped))
                conn.execute(
                    update(tenant_keys)
                    .where(tenant_keys.c.tenant_id == tenant)
                    .values(master_key_id=new_id, wrapped_key=new_wrapped)
                )
                count += 1
        return count

    # data keys ---------------------------------------------------------------------------------
    def data_keys(self, scope: Scope, version: int | None = None) -> list[tuple[int, bytes]]:
        """`(version, wrapped)` of the scope's data keys (one version if given), oldest first."""
        query = select(data_keys.c.version, data_keys.c.wrapped_key).where(
            data_keys.c.tenant_id == scope.tenant,
            data_keys.c.user_id == scope.user,
            data_keys.c.agent_id == scope.agent,
        )
        if version is not None:
            query = query.where(data_keys.c.version == version)
        with self.engine.connect() as conn:
            rows = conn.execute(query.order_by(data_keys.c.version)).all()
        return [(int(v), bytes(w)) for v, w in rows]

    def insert_data_key(self, scope: Scope, version: int, wrapped: bytes) -> bool:
        """Insert; False if that version already exists (another writer won)."""
        return self._insert(
            data_keys.insert().values(
                tenant_id=scope.tenant,
                user_id=scope.user,
                agent_id=scope.agent,
                version=version,
                wrapped_key=wrapped,
                created_at=int(time.time()),
            )
        )

    def count_data_keys(self, tenant: str, user: str | None, agent: str | None) -> int:
        query = select(func.count()).select_from(data_keys).where(_match(tenant, user, agent))
        with self.engine.connect() as conn:
            return int(conn.scalar(query) or 0)

    def key_scopes(self, tenant: str, user: str | None, agent: str | None) -> list[Scope]:
        """Every scope of (tenant[, user[, agent]]) holding at least one data key."""
        query = (
            select(data_keys.c.user_id, data_keys.c.agent_id)
            .where(_match(tenant, user, agent))
            .distinct()
            .order_by(data_keys.c.user_id, data_keys.c.agent_id)
        )
        with self.engine.connect() as conn:
            return [Scope(tenant, u, a) for u, a in conn.execute(query).all()]

    def delete_data_keys_below(self, scope: Scope, version: int) -> int:
        """Delete the scope's data key versions older than `version`; returns how many."""
        with self.engine.begin() as conn:
            result = conn.execute(
                delete(data_keys).where(
                    data_keys.c.tenant_id == scope.tenant,
                    data_keys.c.user_id == scope.user,
                    data_keys.c.agent_id == scope.agent,
                    data_keys.c.version < version,
                )
            )
        return int(result.rowcount)

    # rotation records --------------------------------------------------------------------------
    def save_rotation(self, tenant: str, rotation_id: str, state: str, record: str) -> None:
        """Insert or replace one rotation record (`record` is JSON of ids and counts)."""
        with self.engine.begin() as conn:
            done = conn.execute(
                update(rotations)
                .where(rotations.c.tenant_id == tenant, rotations.c.id == rotation_id)
                .values(state=state, record=record)
            ).rowcount
            if not done:
                conn.execute(
                    rotations.insert().values(
                        tenant_id=tenant,
                        id=rotation_id,
                        state=state,
                        record=record,
                        created_at=int(time.time()),
                    )
                )

    def delete_rotation(self, tenant: str, rotation_id: str) -> int:
        """Delete one rotation record; returns how many rows went (0 or 1)."""
        with self.engine.begin() as conn:
            return int(
                conn.execute(
                    delete(rotations).where(
                        rotations.c.tenant_id == tenant, rotations.c.id == rotation_id
                    )
                ).rowcount
            )

    def rotation(self, tenant: str, rotation_id: str) -> str | None:
        """The JSON record of one rotation, or None."""
        with self.engine.connect() as conn:
            record = conn.scalar(
                select(rotations.c.record).where(
                    rotations.c.tenant_id == tenant, rotations.c.id == rotation_id
                )
            )
        return None if record is None else str(record)

    def rotation_tenants(self, state: str) -> list[str]:
        """Tenants with a rotation in `state`, sorted."""
        query = select(rotations.c.tenant_id).where(rotations.c.state == state).distinct()
        with self.engine.connect() as conn:
            return sorted(str(t) for t in conn.scalars(query))

    def rotation_ids(self, tenant: str, state: str | None = None) -> list[str]:
        """Ids of the tenant's rotations (in one state if given), oldest first."""
        query = select(rotations.c.id).where(rotations.c.tenant_id == tenant)
        if state is not None:
            query = query.where(rotations.c.state == state)
        with self.engine.connect() as conn:
            return list(conn.scalars(query.order_by(rotations.c.created_at, rotations.c.id)))

    # index keys --------------------------------------------------------------------------------
    def index_key(self, tenant: str) -> bytes | None:
        with self.engine.connect() as conn:
            wrapped = conn.scalar(
                select(index_keys.c.wrapped_key).where(index_keys.c.tenant_id == tenant)
            )
        return None if wrapped is None else bytes(wrapped)

    def insert_index_key(self, tenant: str, wrapped: bytes) -> bool:
        return self._insert(
            index_keys.insert().values(
                tenant_id=tenant, wrapped_key=wrapped, created_at=int(time.time())
            )
        )

    # shredding ---------------------------------------------------------------------------------
    def delete_keys(self, tenant: str, user: str | None, agent: str | None) -> int:
        """Delete matching data keys, and the tenant and index keys when only `tenant` is given."""
        with self.engine.begin() as conn:
            removed = conn.execute(delete(data_keys).where(_match(tenant, user, agent))).rowcount
            if user is None:
                for table in (index_keys, tenant_keys):
                    removed += conn.execute(
                        delete(table).where(table.c.tenant_id == tenant)
                    ).rowcount
                conn.execute(delete(rotations).where(rotations.c.tenant_id == tenant))
        return int(removed)

    def scrub(self) -> None:
        """Move deletions from SQLite's WAL into the (secure-deleted) file; truncate the WAL.

        PostgreSQL: rewrite the keystore tables and retire the WAL (`_pg_scrub.scrub`).

        Retries for up to `scrub_timeout` seconds while other connections block the checkpoint,
        then raises `ScrubFailed`.
        """
        if self.backend == "postgresql":
            try:
                _pg_scrub.scrub(self.engine)
            except _pg_scrub.KeystoreNotErasable as exc:
                raise ScrubFailed(str(exc)) from None
            return
        if not self._sqlite_file:
            return
        deadline = time.monotonic() + self.scrub_timeout
        with self.engine.connect() as conn:
            try:
                while True:
                    left = deadline - time.monotonic()
                    # The checkpoint waits on the busy handler: bound it by the time left.
                    wait_ms = max(1, min(1000, int(left * 1000)))
                    conn.exec_driver_sql(f"PRAGMA busy_timeout={wait_ms}")
                    row = conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)").first()
                    if row is not None and row[0] == 0 and row[1] in (0, -1):
                        return
                    if time.monotonic() >= deadline:
                        raise ScrubFailed(
                            "the keystore could not checkpoint its WAL after deleting keys "
                            "(another connection holds it); the deleted keys may remain in the "
                            "WAL file until a later shred or rewrap scrubs it: retry"
                        )
                    time.sleep(0.02)
            finally:
                conn.exec_driver_sql(f"PRAGMA busy_timeout={_BUSY_TIMEOUT_MS}")

    def check_erasable(self) -> None:
        """Refuse (`KeystoreNotErasable`) a PostgreSQL keystore whose scrub could not make
        deleted keys unrecoverable; SQLite keystores always can (secure_delete)."""
        if self.backend == "postgresql":
            _pg_scrub.check_erasable(self.engine)

    def reach_facts(self, backup_retention_days: int) -> list[dict[str, Any]]:
        """Copies of the keystore no scrub reaches (archives, replicas, backups), as facts."""
        if self.backend == "postgresql":
            return _pg_scrub.reach_facts(self.engine, backup_retention_days)
        return [
            {
                "store": "keystore_backups",
                "present": True,
                "ages_out_after_days": backup_retention_days,
            }
        ]

    def close(self) -> None:
        self.engine.dispose()

    def _insert(self, statement: Any) -> bool:
        try:
            with self.engine.begin() as conn:
                conn.execute(statement)
        except IntegrityError:
            return False
        return True


def _create_private_file(path: str) -> None:
    """Create the SQLite file as 0600 (its -wal/-shm inherit that mode); tighten an existing one.

    Errors name the operation, not the path.
    """
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except FileExistsError:
        pass
    except OSError as exc:
        raise VaultError(
            f"cannot create the keystore file ({exc.strerror or type(exc).__name__})"
        ) from None
    for suffix in ("", "-wal", "-shm", "-journal"):
        with contextlib.suppress(OSError):
            if os.stat(path + suffix).st_mode & 0o077:
                os.chmod(path + suffix, 0o600)


def _match(tenant: str, user: str | None, agent: str | None) -> Any:
    clause = data_keys.c.tenant_id == tenant
    if user is not None:
        clause = clause & (data_keys.c.user_id == user)
    if agent is not None:
        clause = clause & (data_keys.c.agent_id == agent)
    return clause
