"""Assembles the embedded default (or PostgreSQL + Qdrant) from `Settings`."""

from __future__ import annotations

import contextlib
import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from memvault.audit.checkpoints import Checkpointer
from memvault.audit.log import AuditLog
from memvault.compliance.erase import Eraser
from memvault.config import Settings, is_postgres_url
from memvault.embed import make_embedder
from memvault.embed.base import Embedder
from memvault.embed.cache import CachedEmbedder, EmbeddingCache
from memvault.embed.process import ProcessEmbedder
from memvault.index import open_index
from memvault.index.base import VectorIndex
from memvault.keyring import EnvMasterKey, FileMasterKey, Keyring, MasterKeyProvider
from memvault.runtime.maintenance import DEFAULT_GRACE_SECONDS, Maintenance
from memvault.store.database import Database
from memvault.store.datadir import DataDirLock, needs_lock, private_dir, private_sqlite_file
from memvault.store.idempotency_records import idempotency_sweeper
from memvault.store.retrieval_log import RetrievalLog
from memvault.tenancy.deployment import LocalIndexClaim, bind_keystore
from memvault.tenancy.key_digests import upgrade_legacy_digests
from memvault.tenancy.principals import ApiKeys
from memvault.tenancy.tenants import Tenants
from memvault.vault.guard import ScopeGuard
from memvault.vault.reconcile import Reconciler, ReconcileReport
from memvault.vault.reindex import reindex_sweeper
from memvault.vault.screen_gate import ScreenGate
from memvault.vault.service import Vault, VaultParts
from memvault.vault.shared_guard import SharedScopeGuard
from memvault.webhooks.alerts import ReadAlerts
from memvault.webhooks.delivery import Deliverer
from memvault.webhooks.hub import Webhooks

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from memvault.screening import Screen


@dataclass(repr=False)
class Services:
    """The running service's parts. `close()` releases files, shards, connections and the lock.

    Its repr names the backends only: `settings` holds the operator key, and the parts hold
    connections and key material.
    """

    settings: Settings
    db: Database
    keyring: Keyring
    index: VectorIndex
    vault: Vault
    keys: ApiKeys
    tenants: Tenants
    audit: AuditLog
    checkpointer: Checkpointer
    eraser: Eraser
    reconciler: Reconciler
    gate: ScreenGate
    webhooks: Webhooks
    deliverer: Deliverer
    alerts: ReadAlerts
    closed: bool = field(default=False)
    data_dir_lock: DataDirLock | None = field(default=None)
    maintenance: Maintenance | None = field(default=None)
    sweepers: list[Callable[[], object]] = field(default_factory=list)
    on_close: list[Callable[[], object]] = field(default_factory=list)
    """Stopped first by `close()` (layers above the vault: the A-MEM worker and scheduler)."""
    embedder_process: ProcessEmbedder | None = field(default=None)
    """The embedding model's child process, when `EMBED_PROCESS` is on: stopped last."""

    def start(self) -> ReconcileReport:
        """Reconcile now (before the server reports ready), then start periodic maintenance.

        On the embedded default the data-directory lock proves no other process has writes in
        flight, so the startup pass repairs everything with no grace period.
        """
        if self.maintenance is None:
            startup_grace = 0.0 if self.data_dir_lock is not None else DEFAULT_GRACE_SECONDS
            self.maintenance = Maintenance(self.reconciler, startup_grace=startup_grace)
            for sweeper in self.sweepers:
                self.maintenance.add_sweeper(sweeper)
        report = self.maintenance.start()
        self.deliverer.start()  # posts what an earlier run left pending, then every poll
        from memvault.runtime.upgrades import restore_absorbed, run_once

        run_once(
            self.settings.data_dir,
            "restore-absorbed",
            lambda: restore_absorbed(self.vault, self.tenants.all()),
        )
        return report

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        for stop in reversed(self.on_close):
            try:
                stop()
            except Exception as exc:  # the rest still closes
                log.warning("a service did not stop cleanly: %s", type(exc).__name__)
        if self.maintenance is not None:
            self.maintenance.stop()
        self.deliverer.stop()
        try:
            try:  # open 401/403 burst windows are written, not lost
                self.audit.flush_bursts(force=True)
            except Exception as exc:
                log.warning("audit bursts not written at close: %s", type(exc).__name__)
            self.checkpointer.close()  # and the unsigned chain heads signed
            self.vault.parts.retrievals.close()
            if self.embedder_process is not None:
                self.embedder_process.close()
            self.index.close()
            self.keyring.close()
            self.db.dispose()
        finally:
            if self.data_dir_lock is not None:
                self.data_dir_lock.release()

    def __repr__(self) -> str:
        database = "postgresql" if self.db.is_postgres else "sqlite"
        return (
            f"Services(database={database}, index={type(self.index).__name__}, "
            f"closed={self.closed})"
        )


def master_key_provider(settings: Settings) -> MasterKeyProvider:
    if settings.master_key_env:
        return EnvMasterKey(settings.master_key_env)
    return FileMasterKey(settings.resolved_master_key_file())


def default_screen() -> Screen | None:
    """The write screen (always on in the service)."""
    from memvault.screening import Screen

    return Screen()


def open_services(
    settings: Settings,
    *,
    embedder: Embedder | None = None,
    index: VectorIndex | None = None,
    keyring: Keyring | None = None,
    screen: Screen | bool | None = True,
    data_dir_lock: DataDirLock | None = None,
) -> Services:
    """Open every part. Tests pass a shared `embedder` (model loading is slow).

    When anything embedded lives in DATA_DIR (the SQLite data store or keystore, or the Edge
    shards), the data directory is locked first, so a second process fails at once with
    `DataDirInUse` instead of failing later on every request; `close()` releases the lock.
    A caller that already holds the lock on `settings.data_dir` (the CLI takes it before it
    imports this module) passes it as `data_dir_lock`; the services own it from then on, and
    release it if opening fails.
    """
    private_dir(settings.data_dir)
    lock = data_dir_lock
    if lock is None and needs_lock(settings):
        lock = DataDirLock.acquire(settings.data_dir)
    opened: list[Callable[[], object]] = []
    try:
        services = _open_parts(settings, lock, opened, embedder, index, keyring, screen)
    except BaseException:
        for undo in reversed(opened):
            with contextlib.suppress(Exception):
                undo()
        if lock is not None:
            lock.release()
        raise
    return services


def _open_parts(
    settings: Settings,
    lock: DataDirLock | None,
    opened: list[Callable[[], object]],
    embedder: Embedder | None,
    index: VectorIndex | None,
    keyring: Keyring | None,
    screen: Screen | bool | None,
) -> Services:
    """Open the parts in order; `opened` collects how to close each, should a later one fail."""
    database_url = settings.resolved_database_url()
    private_sqlite_file(database_url)
    admin_url = settings.database_admin_url
    db = Database(
        database_url,
        schema=settings.db_schema,
        maintenance_url=admin_url if admin_url and is_postgres_url(admin_url) else None,
    )
    opened.append(db.dispose)
    db.migrate()
    ring = keyring or Keyring.open(settings.resolved_keystore_url(), master_key_provider(settings))
    if keyring is None:
        opened.append(ring.close)
    ring.check_erasable()
    bind_keystore(db, ring)
    upgrade_legacy_digests(db, ring)  # once per deployment: plain SHA-256 digests to HMACs
    guard = ScopeGuard()
    releases: list[Callable[[], object]] = []  # closed last, with the services
    if db.is_postgres:
        if settings.qdrant_url is None and index is None and not settings.local_index_per_worker:
            releases.append(LocalIndexClaim(db).close)
            opened.append(releases[-1])
        shared = SharedScopeGuard(database_url, settings.db_schema, ring)
        releases.append(shared.close)
        opened.append(shared.close)
        guard = shared
    process_model: ProcessEmbedder | None = None
    model: Embedder
    if embedder is not None:
        model = embedder
    elif settings.embed_process:
        model = process_model = ProcessEmbedder(
            settings.embedder, data_dir=settings.data_dir, threads=settings.embed_threads
        )
        opened.append(process_model.close)
    else:
        model = make_embedder(
            settings.embedder, data_dir=settings.data_dir, threads=settings.embed_threads
        )
    vectors = index or open_index(
        settings.data_dir,
        model.dimension,
        settings.qdrant_url,
        max_open=settings.index_max_open,
        memory_budget_mib=settings.index_memory_budget_mb,
        rebuild_share=settings.index_rebuild_replaced_share,
        hnsw_min_points=settings.index_hnsw_min_points,
    )
    if index is None:
        opened.append(vectors.close)
    clock = time.time
    active_screen = default_screen() if screen is True else (screen or None)
    gate = ScreenGate(db, active_screen, clock, tagger=lambda t: ring.index_key(t).tag)
    parts = VaultParts(
        retrievals=RetrievalLog(db, clock),
        db=db,
        keyring=ring,
        index=vectors,
        embedder=CachedEmbedder(model, EmbeddingCache()),
        gate=gate,
        clock=clock,
        guard=guard,
    )
    vault = Vault(
        parts,
        group_commit=settings.group_commit,
        group_commit_window_ms=settings.group_commit_window_ms,
    )
    audit = AuditLog(db, clock, ring)
    checkpointer = Checkpointer(
        audit,
        ring.audit_checkpoints,
        clock,
        every=settings.audit_checkpoint_events,
        seconds=settings.audit_checkpoint_seconds,
    )
    audit.on_appended = checkpointer.appended
    gate.audit = audit
    keys = ApiKeys(db, clock, ring, cache_seconds=settings.resolved_key_cache_seconds())
    webhooks = Webhooks(db, ring, clock)
    audit.on_recorded = webhooks.on_audit
    parts.events = webhooks.publish
    deliverer = Deliverer(
        db,
        webhooks,
        db.tenant_ids,
        clock,
        poll=settings.webhook_poll_seconds,
        retry_base=settings.webhook_retry_seconds,
        max_attempts=settings.webhook_max_attempts,
    )
    alerts = ReadAlerts(
        db, audit, webhooks, lambda t: _read_alerts_policy(gate, t), keys.suspend, clock
    )
    deliverer.on_pass.append(alerts.refresh)
    services = Services(
        settings=settings,
        db=db,
        keyring=ring,
        index=vectors,
        vault=vault,
        keys=keys,
        tenants=Tenants(db, keys, clock),
        audit=audit,
        checkpointer=checkpointer,
        eraser=Eraser(vault, keys),
        reconciler=Reconciler(vault),
        gate=gate,
        webhooks=webhooks,
        deliverer=deliverer,
        alerts=alerts,
        data_dir_lock=lock,
        embedder_process=process_model,
        sweepers=[idempotency_sweeper(db, clock), audit.flush_bursts, reindex_sweeper(vault)],
    )
    services.on_close[:0] = releases  # `close` stops `on_close` in reverse: these go last
    return services


def _read_alerts_policy(gate: ScreenGate, tenant: str) -> dict[str, object] | None:
    """The tenant's stored `read_alerts` object (None: the defaults)."""
    raw = gate.tenant_policy(tenant).read_alerts
    return None if raw is None else dict(json.loads(raw))
