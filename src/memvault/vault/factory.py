"""Assembles the embedded default (or PostgreSQL + Qdrant) from `Settings`."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from memvault.config import Settings
from memvault.keyring import EnvMasterKey, FileMasterKey, Keyring, MasterKeyProvider
from memvault.vault.audit import AuditLog
from memvault.vault.embed import make_embedder
from memvault.vault.embed.base import Embedder
from memvault.vault.embed.cache import CachedEmbedder, EmbeddingCache
from memvault.vault.erase import Eraser
from memvault.vault.index import open_index
from memvault.vault.index.base import VectorIndex
from memvault.vault.principals import ApiKeys
from memvault.vault.reconcile import Reconciler
from memvault.vault.retrieval_log import RetrievalLog
from memvault.vault.screen_gate import ScreenGate
from memvault.vault.service import Vault, VaultParts
from memvault.vault.store.database import Database
from memvault.vault.tenants import Tenants

if TYPE_CHECKING:
    from memvault.screening import Screen


@dataclass
class Services:
    """The running service's parts. `close()` releases files, shards and connections."""

    settings: Settings
    db: Database
    keyring: Keyring
    index: VectorIndex
    vault: Vault
    keys: ApiKeys
    tenants: Tenants
    audit: AuditLog
    eraser: Eraser
    reconciler: Reconciler
    gate: ScreenGate
    closed: bool = field(default=False)

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        self.vault.parts.retrievals.close()
        self.index.close()
        self.keyring.close()
        self.db.dispose()


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
) -> Services:
    """Open every part. Tests pass a shared `embedder` (model loading is slow)."""
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    os.chmod(settings.data_dir, 0o700)
    db = Database(settings.resolved_database_url(), schema=settings.db_schema)
    db.migrate()
    ring = keyring or Keyring.open(settings.resolved_keystore_url(), master_key_provider(settings))
    model = embedder or make_embedder(
        settings.embedder, data_dir=settings.data_dir, threads=settings.embed_threads
    )
    vectors = index or open_index(settings.data_dir, model.dimension, settings.qdrant_url)
    clock = time.time
    active_screen = default_screen() if screen is True else (screen or None)
    gate = ScreenGate(db, active_screen, clock)
    parts = VaultParts(
        retrievals=RetrievalLog(db, clock),
        db=db,
        keyring=ring,
        index=vectors,
        embedder=CachedEmbedder(model, EmbeddingCache()),
        gate=gate,
        clock=clock,
    )
    vault = Vault(parts)
    keys = ApiKeys(db, clock)
    return Services(
        settings=settings,
        db=db,
        keyring=ring,
        index=vectors,
        vault=vault,
        keys=keys,
        tenants=Tenants(db, keys, clock),
        audit=AuditLog(db, clock),
        eraser=Eraser(vault),
        reconciler=Reconciler(vault),
        gate=gate,
    )
