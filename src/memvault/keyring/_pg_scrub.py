"""Crypto-shredding that holds on a PostgreSQL keystore: rewrite the tables, retire the WAL.

PostgreSQL never overwrites a deleted row in place: the tuple stays in its heap page until the
page is rewritten, and every INSERT (and full-page image) of it stays in the WAL segments until
they are removed. So after deleting keys, `scrub` rewrites every keystore table with
`VACUUM FULL` (a new file from the live rows; the old one is truncated at commit and unlinked at
the next checkpoint), switches to a new WAL segment and runs `CHECKPOINT`, after which the
segments holding the deleted keys are older than the redo point and are removed. That removal
is an `unlink` only when `wal_recycle` is off: with it on, PostgreSQL renames old segments for
reuse and their bytes stay readable until overwritten, so `check_erasable` refuses that server.

The keystore's login role must own its tables (it creates them), be a member of
`pg_checkpoint` (PostgreSQL 15+) and may execute `pg_switch_wal()`: see docs/keyring.md.
What no server can reach (WAL archives, base backups, replicas) is reported by `reach_facts`
and signed into erase receipts.
"""

from __future__ import annotations

import time
from typing import Any

from sqlalchemy import Engine, MetaData, text
from sqlalchemy.exc import ProgrammingError

from memvault.errors import VaultError

KEYSTORE_TABLES = (
    "keyring_data_keys",
    "keyring_tenant_keys",
    "keyring_index_keys",
    "keyring_rotations",
)
"""The keystore tables a shred deletes from (all of them rewritten by every PostgreSQL scrub)."""


class KeystoreNotErasable(VaultError):
    """The PostgreSQL keystore cannot make deleted keys unrecoverable (a setting or a grant)."""

    code = "keystore_not_erasable"


_CREATE_LOCK = 0x6D76_6B73  # pg_advisory_xact_lock key: one keystore table creation at a time


def create_tables(engine: Engine, metadata: MetaData) -> None:
    """Create the keystore's missing tables. PostgreSQL: serialised by an advisory lock (two
    workers starting on a fresh keystore raced to CREATE the same table), and a login role that
    may not create them is refused with what it lacks, not a raw driver error."""
    if engine.dialect.name != "postgresql":
        metadata.create_all(engine)
        return
    try:
        with engine.begin() as conn:
            conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _CREATE_LOCK})
            metadata.create_all(conn)
            tables = [_regclass(conn, t) for t in KEYSTORE_TABLES]
            if not conn.execute(_OWNS_ALL, {"tables": tables}).scalar():
                raise KeystoreNotErasable(
                    "the keystore's login role does not own the keystore tables (another role "
                    "created them), so it may neither use nor scrub them: let the keystore's own "
                    "role create them in a database it owns (docs/keyring.md)"
                )
    except ProgrammingError as exc:
        if getattr(exc.orig, "sqlstate", None) != "42501":  # insufficient_privilege
            raise
        raise KeystoreNotErasable(
            "the keystore's login role may not create the keystore tables in its database's "
            "schema: create the keystore database OWNER that role, or GRANT CREATE ON SCHEMA "
            "public to it (docs/keyring.md, Provisioning a PostgreSQL keystore)"
        ) from None


_OWNS_ALL = text(
    "SELECT bool_and(pg_has_role(current_user, c.relowner, 'USAGE')) FROM pg_class c"
    " WHERE c.oid = ANY(:tables)"
)


def check_erasable(engine: Engine) -> None:
    """Refuse a PostgreSQL keystore where a shred could not reach the deleted keys' bytes."""
    with engine.connect() as conn:
        row = conn.execute(
            text(
                "SELECT current_setting('wal_recycle'),"
                " r.rolsuper OR pg_has_role(current_user, 'pg_checkpoint', 'MEMBER'),"
                " has_function_privilege('pg_catalog.pg_switch_wal()', 'EXECUTE'),"
                " (SELECT bool_and(pg_has_role(current_user, c.relowner, 'USAGE'))"
                "    FROM pg_class c WHERE c.oid = ANY(:tables))"
                " FROM pg_roles r WHERE r.rolname = current_user"
            ),
            {"tables": [_regclass(conn, t) for t in KEYSTORE_TABLES]},
        ).one()
    recycle, can_checkpoint, can_switch, owns = row
    if recycle != "off":
        raise KeystoreNotErasable(
            "the keystore's PostgreSQL server has wal_recycle = on, which keeps deleted keys in "
            "recycled WAL segments: set wal_recycle = off on that server (docs/keyring.md)"
        )
    if not can_checkpoint or not can_switch:
        raise KeystoreNotErasable(
            "the keystore's login role may not CHECKPOINT or run pg_switch_wal(): "
            "GRANT pg_checkpoint and EXECUTE ON FUNCTION pg_switch_wal() to it (docs/keyring.md)"
        )
    if not owns:
        raise KeystoreNotErasable(
            "the keystore's login role does not own the keystore tables, so it cannot "
            "VACUUM FULL them after a shred: let that role create them (docs/keyring.md)"
        )


HORIZON_WAIT_SECONDS = 30.0
"""How long a scrub waits for transactions older than it to end before it gives up (the erase
then goes round again, and its job never ends `done` unverified)."""

# True once nothing that began before `:x` (the next transaction id when the scrub started, so
# after the shred committed) can still see the deleted rows: no transaction id older than it
# runs anywhere in the cluster (ids are cluster-wide, and a running one in *any* database holds
# back what VACUUM may drop), no other session of this database holds an older snapshot, and no
# replication slot pins an older xmin. `VACUUM FULL` copies every row such a transaction might
# still see into the new file, so before this holds it would copy the erased keys.
_HORIZON_PASSED = text(
    "WITH x AS (SELECT (CAST(:x AS text)::bigint % 4294967296)::text::xid AS xid)"
    " SELECT pg_snapshot_xmin(pg_current_snapshot()) >= CAST(:x AS text)::xid8"
    " AND NOT EXISTS (SELECT 1 FROM pg_stat_activity a, x"
    "   WHERE a.datname = current_database() AND a.pid <> pg_backend_pid()"
    "   AND a.backend_xmin IS NOT NULL AND age(a.backend_xmin) > age(x.xid))"
    " AND NOT EXISTS (SELECT 1 FROM pg_replication_slots s, x"
    "   WHERE s.xmin IS NOT NULL AND age(s.xmin) > age(x.xid))"
)


def _wait_for_horizon(conn: Any, wait_seconds: float) -> None:
    """Wait until no transaction that could see the shredded rows is left (`_HORIZON_PASSED`)."""
    x = conn.execute(text("SELECT pg_snapshot_xmax(pg_current_snapshot())::text")).scalar_one()
    deadline = time.monotonic() + wait_seconds
    delay = 0.05
    while not conn.execute(_HORIZON_PASSED, {"x": x}).scalar_one():
        if time.monotonic() >= deadline:
            raise KeystoreNotErasable(
                "a transaction older than the shred is still open on the keystore's PostgreSQL "
                f"server after {wait_seconds:g} s (in any database, or a replication slot): "
                "VACUUM FULL would copy the deleted keys; the scrub will be tried again"
            )
        time.sleep(delay)
        delay = min(delay * 2, 1.0)


def scrub(engine: Engine, *, wait_seconds: float | None = None) -> None:
    """Wait for older transactions to end, rewrite the keystore tables, switch the WAL and
    checkpoint; `ScrubFailed`-worthy errors propagate as `KeystoreNotErasable` naming what failed
    (never a URL)."""
    autocommit = engine.execution_options(isolation_level="AUTOCOMMIT")
    wait = HORIZON_WAIT_SECONDS if wait_seconds is None else wait_seconds
    step = "waiting for older transactions"
    try:
        with autocommit.connect() as conn:
            _wait_for_horizon(conn, wait)
            step = "VACUUM FULL"
            for table in KEYSTORE_TABLES:
                conn.execute(text(f'VACUUM (FULL) "{table}"'))
            step = "pg_switch_wal()"
            conn.execute(text("SELECT pg_switch_wal()"))
            step = "CHECKPOINT"
            conn.execute(text("CHECKPOINT"))
    except KeystoreNotErasable:
        raise
    except Exception as exc:
        raise KeystoreNotErasable(
            f"the keystore scrub failed at {step} ({type(exc).__name__}): the keys are deleted, "
            "but their bytes may remain in the keystore's files until a scrub succeeds"
        ) from None


def reach_facts(engine: Engine, backup_retention_days: int) -> list[dict[str, Any]]:
    """What holds keystore bytes beyond the server's reach, as facts for a signed receipt."""
    with engine.connect() as conn:
        archive, replicas = conn.execute(
            text(
                "SELECT current_setting('archive_mode'), (SELECT count(*) FROM pg_stat_replication)"
            )
        ).one()
    return [
        {
            "store": "keystore_wal_archive",
            "present": archive != "off",
            "ages_out_after_days": backup_retention_days,
        },
        {"store": "keystore_replicas", "present": int(replicas) > 0, "count": int(replicas)},
        {
            "store": "keystore_backups",
            "present": True,
            "ages_out_after_days": backup_retention_days,
        },
    ]


def _regclass(conn: Any, table: str) -> int:
    oid = conn.execute(text("SELECT to_regclass(:t)::oid"), {"t": table}).scalar()
    if oid is None:
        raise KeystoreNotErasable(f"the keystore table {table} is missing")
    return int(oid)
