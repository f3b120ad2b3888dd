"""Backups of the data store and the keystore to separate places, and restore with a re-index.

- `backup` takes a consistent online snapshot of each SQLite file with SQLite's backup API (the
  server may be running) into two destinations that must not be the same place or nested, so a
  data backup never sits with the keys that decrypt it. Files are 0600, single-file (no WAL).
  The vector index is not backed up: it is derived data (and holds raw vectors).
- `restore` installs both snapshots into an empty data directory and rebuilds the index by
  re-embedding every note's decrypted text. A note whose scope key is gone (shredded after the
  backup was taken: the keystore restored is the one as it is now) cannot be decrypted: its row
  goes, with its links, its share of the corpus statistics, its scope's replay records, and the
  scope's API keys the erase had revoked. It never comes back.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import func, select
from sqlalchemy.engine import make_url

from memvault.errors import DecryptionError, KeyNotFound, VaultError
from memvault.scope import SHARED_AGENT
from memvault.store.corpus import CorpusStats
from memvault.store.idempotency_records import delete_idempotency_records
from memvault.store.models import CorpusStatsRow, NoteRow
from memvault.store.scoping import OwnedBy, scoped_delete, scoped_select
from memvault.vault.drafts import namespace_for
from memvault.vault.links import delete_links_of

if TYPE_CHECKING:
    from memvault.config import Settings
    from memvault.embed.base import Embedder
    from memvault.runtime.factory import Services

PG_DUMP_GUIDANCE = (
    "backup supports the embedded SQLite stores only; on PostgreSQL use pg_dump, separately for "
    "the data schema (pg_dump --schema=<MEMVAULT_DB_SCHEMA> <data database>) and for the keystore "
    "database (pg_dump <MEMVAULT_KEYSTORE_URL database>), written to different places with "
    "different retention; the index is derived and not backed up"
)
# Files a data directory may hold before a restore: the master key and the operator key are not
# part of a backup (the master key must never travel with it), so they are installed first.
RESTORE_ALLOWED = {"master.key", "operator.key", "memvault.lock"}
BATCH = 256


class BackupRefused(VaultError):
    """A backup or restore that would break a rule (destinations, backend, a non-empty dir)."""

    code = "backup_refused"


@dataclass(frozen=True, slots=True)
class BackupResult:
    data_file: Path
    keystore_file: Path


@dataclass(frozen=True, slots=True)
class RestoreReport:
    """Counts only: note ids are never reported."""

    tenants: int
    restored: int
    dropped: int
    api_keys_revoked: int


def _sqlite_path(url: str, what: str) -> Path:
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite" or parsed.database in (None, "", ":memory:"):
        raise BackupRefused(f"the {what} is not an embedded SQLite file: {PG_DUMP_GUIDANCE}")
    return Path(str(parsed.database))


def _target(dest: Path, default_name: str) -> Path:
    return dest / default_name if dest.is_dir() else dest


def check_destinations(data_file: Path, keystore_file: Path) -> None:
    """Refuse a data and a keystore backup in the same place (file or directory) or nested."""
    a, b = data_file.resolve(), keystore_file.resolve()
    if a == b:
        raise BackupRefused("the data and keystore backups must go to different places")
    da, db_ = a.parent, b.parent
    if da == db_ or da in db_.parents or db_ in da.parents or a in b.parents or b in a.parents:
        raise BackupRefused(
            "the data and keystore backups must not share a directory or be inside one "
            "another: a data backup must never hold the keys that decrypt it"
        )


def backup(settings: Settings, data_dest: Path, keystore_dest: Path) -> BackupResult:
    """Snapshot the data store to `data_dest` and the keystore to `keystore_dest` (see module)."""
    data_src = _sqlite_path(settings.resolved_database_url(), "data store")
    keystore_src = _sqlite_path(settings.resolved_keystore_url(), "keystore")
    data_file = _target(data_dest, "memvault-data.db")
    keystore_file = _target(keystore_dest, "memvault-keystore.db")
    check_destinations(data_file, keystore_file)
    for source, name in ((data_src, "data store"), (keystore_src, "keystore")):
        if not source.is_file():
            raise BackupRefused(f"the {name} does not exist yet: nothing to back up")
    for dest in (data_file, keystore_file):
        if dest.exists():
            raise BackupRefused("a backup destination file exists already: choose a new name")
        if not dest.parent.is_dir():
            raise BackupRefused("a backup destination's directory does not exist")
    _copy_sqlite(data_src, data_file)
    try:
        _copy_sqlite(keystore_src, keystore_file)
    except BaseException:
        _remove(data_file)
        raise
    return BackupResult(data_file, keystore_file)


def _copy_sqlite(source: Path, dest: Path) -> None:
    """An online, consistent copy (SQLite backup API) into a new 0600 single-file database."""
    os.close(os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    try:
        src = sqlite3.connect(source, timeout=30)
        try:
            dst = sqlite3.connect(dest)
            try:
                src.backup(dst)
                dst.execute("PRAGMA journal_mode=DELETE")  # one self-contained file, no -wal
                dst.commit()
            finally:
                dst.close()
        finally:
            src.close()
        with open(dest, "rb") as handle:
            os.fsync(handle.fileno())
        os.chmod(dest, 0o600)
    except BaseException:
        _remove(dest)
        raise


def _remove(path: Path) -> None:
    for suffix in ("", "-journal", "-wal", "-shm"):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(str(path) + suffix)


def _check_snapshot(path: Path, table: str, what: str) -> None:
    if not path.is_file():
        raise BackupRefused(f"the {what} snapshot does not exist")
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
        finally:
            conn.close()
    except sqlite3.DatabaseError:
        raise BackupRefused(f"the {what} snapshot is not a SQLite database") from None
    if table not in names:
        raise BackupRefused(f"the {what} snapshot is not a memvault {what} (no {table} table)")


def restore(
    settings: Settings,
    data_src: Path,
    keystore_src: Path,
    *,
    embedder: Embedder | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> RestoreReport:
    """Install the snapshots into an empty data directory and rebuild the index (see module)."""
    data_file = _sqlite_path(settings.resolved_database_url(), "data store")
    keystore_file = _sqlite_path(settings.resolved_keystore_url(), "keystore")
    if settings.qdrant_url:
        raise BackupRefused("restore rebuilds the embedded index only (MEMVAULT_QDRANT_URL set)")
    _check_snapshot(data_src, "notes", "data store")
    _check_snapshot(keystore_src, "keyring_tenant_keys", "keystore")
    root = settings.data_dir
    if root.exists() and set(os.listdir(root)) - RESTORE_ALLOWED:
        raise BackupRefused("restore needs an empty data directory (the master key may be there)")
    if not settings.master_key_env and not settings.resolved_master_key_file().is_file():
        raise BackupRefused(
            "restore needs the master key that wraps the keystore: install it at "
            "MEMVAULT_MASTER_KEY_FILE (default DATA_DIR/master.key) or set MEMVAULT_MASTER_KEY_ENV"
        )
    for path in (data_file, keystore_file):
        if path.exists():
            raise BackupRefused("the data store or keystore to restore into exists already")
    root.mkdir(parents=True, exist_ok=True, mode=0o700)
    try:
        _copy_sqlite(data_src, data_file)
        _copy_sqlite(keystore_src, keystore_file)
        from memvault.runtime.factory import open_services

        services = open_services(settings, embedder=embedder)
    except BaseException:
        _remove(data_file)
        _remove(keystore_file)
        raise
    try:
        return rebuild(services, progress)
    finally:
        services.close()


def rebuild(
    services: Services, progress: Callable[[int, int], None] | None = None
) -> RestoreReport:
    """Re-index every decryptable note; delete every note no key decrypts and what derives from it.

    Then finish pending writes with the reconciler (no grace: nothing else runs).
    """
    tenants = services.db.tenant_ids()
    total = 0
    for tenant in tenants:
        with services.db.session(tenant) as sess:
            total += int(
                sess.execute(
                    select(func.count()).select_from(scoped_select(OwnedBy(tenant)).subquery())
                ).scalar_one()
            )
    restored = dropped = revoked = 0
    for tenant in tenants:
        done, gone, keys = rebuild_tenant(services, tenant, restored + dropped, total, progress)
        restored, dropped, revoked = restored + done, dropped + gone, revoked + keys
        services.audit.record(
            tenant, "system", "backup.restored", restored=done, dropped=gone, keys_revoked=keys
        )
    services.reconciler.run_full(grace_seconds=0.0)
    return RestoreReport(len(tenants), restored, dropped, revoked)


def rebuild_tenant(
    services: Services,
    tenant: str,
    seen: int,
    total: int,
    progress: Callable[[int, int], None] | None,
) -> tuple[int, int, int]:
    """Re-index the tenant's decryptable notes (re-embedded); delete those no key decrypts.

    Returns (re-indexed, dropped, API keys revoked). `seen` and `total` feed `progress`.
    """
    vault, target, namespace = services.vault, OwnedBy(tenant), namespace_for(tenant)
    doomed: list[NoteRow] = []
    readable: list[NoteRow] = []
    after = ""
    while True:
        with services.db.session(tenant) as sess:
            rows = list(
                sess.execute(
                    scoped_select(target, NoteRow.id > after).order_by(NoteRow.id).limit(BATCH)
                ).scalars()
            )
        if not rows:
            break
        after = rows[-1].id
        for row in rows:
            try:
                vault.decrypt_row(row)
            except (DecryptionError, KeyNotFound):
                doomed.append(row)
            else:
                readable.append(row)
    revoked = _drop(services, tenant, doomed)
    _recount_corpus(services, tenant, namespace)
    with services.db.session(tenant) as sess:
        avgdl = CorpusStats.avgdl(sess, tenant, namespace)
    for start in range(0, len(readable), BATCH):
        chunk = readable[start : start + BATCH]
        items = []
        for row in chunk:
            note = vault.decrypt_row(row)
            items.append((row, note.text, note.topics))
        services.index.upsert(namespace, vault.index_points(items, avgdl))
        if progress is not None:
            progress(seen + len(doomed) + start + len(chunk), total)
    if progress is not None and not readable:
        progress(seen + len(doomed), total)
    return len(readable), len(doomed), revoked


def _drop(services: Services, tenant: str, doomed: list[NoteRow]) -> int:
    """Delete undecryptable rows, their links, their scopes' replay records and API keys."""
    if not doomed:
        return 0
    ids = [row.id for row in doomed]
    scopes = {(row.user_id, row.agent_id) for row in doomed}
    with services.db.session(tenant) as sess:
        delete_links_of(sess, tenant, ids)
        for start in range(0, len(ids), BATCH):
            sess.execute(scoped_delete(OwnedBy(tenant), NoteRow.id.in_(ids[start : start + BATCH])))
        for user, agent in scopes:
            delete_idempotency_records(sess, tenant, user, None if agent == SHARED_AGENT else agent)
    revoked = 0
    for user, agent in scopes:
        # The user's shared scope goes only with a whole-user erase: revoke every key of the user.
        revoked += services.keys.revoke_scope(
            tenant, user, None if agent == SHARED_AGENT else agent
        )
    services.index.delete(namespace_for(tenant), ids)
    return revoked


def _recount_corpus(services: Services, tenant: str, namespace: str) -> None:
    """Set the namespace's BM25 statistics to what the remaining rows hold."""
    services.vault.parts.corpus.ensure(tenant, namespace)
    with services.db.session(tenant) as sess:
        rows = scoped_select(OwnedBy(tenant)).subquery()
        docs, tokens = sess.execute(
            select(func.count(), func.coalesce(func.sum(rows.c.token_count), 0))
        ).one()
        stats = sess.get(CorpusStatsRow, (tenant, namespace))
        assert stats is not None
        CorpusStats.adjust(
            sess, tenant, namespace, int(docs) - stats.doc_count, int(tokens) - stats.token_total
        )
