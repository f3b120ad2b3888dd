"""What a vault is built from (`VaultParts`) and the narrow face its helpers use (`VaultCore`).

Beneath `service.py`: the write, read, search and indexing helpers take these instead of importing
the service back, so `Vault` and `ScopedVault` sit at the top of the vault package and nothing
below imports them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, Protocol

from memvault.batcher import Batcher
from memvault.embed.cache import CachedEmbedder
from memvault.index.base import IndexPoint, VectorIndex
from memvault.keyring import Keyring
from memvault.scope import Scope
from memvault.store.codec import NoteCodec
from memvault.store.corpus import CorpusStats
from memvault.store.database import Database
from memvault.store.index_marks import IndexMarks
from memvault.store.models import NoteRow
from memvault.store.records import NoteFields
from memvault.store.retrieval_log import RetrievalLog
from memvault.text import SparseEncoder
from memvault.vault.guard import ScopeGuard
from memvault.vault.hooks import NoteHooks
from memvault.vault.notes import Note
from memvault.vault.screen_gate import ScreenGate
from memvault.vault.sessions import IndexContext

__all__ = ["FaultHook", "VaultCore", "VaultParts"]

FaultHook = Callable[[str], None]


EventSink = Callable[[str, str, Mapping[str, Any], Mapping[str, Any]], None]
"""`(tenant, event type, subject ids, details)`: a memory event for the tenant's webhooks.
Must not raise."""


@dataclass
class VaultParts:
    """Everything a vault is built from (constructor injection; fakes only in tests)."""

    db: Database
    keyring: Keyring
    index: VectorIndex
    embedder: CachedEmbedder
    gate: ScreenGate
    retrievals: RetrievalLog
    clock: Callable[[], float] = time.time
    guard: ScopeGuard = field(default_factory=ScopeGuard)
    hooks: NoteHooks | None = None
    """What a layer above the vault (A-MEM) adds to writes; None: plain notes."""
    events: EventSink | None = None
    """Where a layer above reports memory events (the webhook outbox's `publish`); None: off."""
    corpus: CorpusStats = field(init=False)
    marks: IndexMarks = field(init=False)
    """The reconciler's durable dirty set: written before a write touches the index."""

    def __post_init__(self) -> None:
        self.corpus = CorpusStats(self.db)
        self.marks = IndexMarks(self.db, self.clock)


class VaultCore(Protocol):
    """What the vault's helpers use of a `Vault` (`memvault.vault.service.Vault` is one)."""

    parts: VaultParts
    codec: NoteCodec
    fault: FaultHook

    @property
    def group_commit(self) -> Batcher: ...

    def note_lock(self, *note_ids: str) -> AbstractContextManager[None]: ...

    def row_scope(self, row: NoteFields) -> Scope: ...

    def decrypt_row(self, row: NoteFields) -> Note: ...

    @staticmethod
    def note_of_plain(row: NoteFields, text: str, attrs: Mapping[str, Any]) -> Note: ...

    def sparse_encoder(self, tenant: str) -> SparseEncoder: ...

    def index_points(
        self,
        items: Sequence[tuple[NoteRow, str, Sequence[str]]],
        avgdl: float,
        tokens: Sequence[Sequence[str]] | None = None,
        contexts: Sequence[IndexContext] | None = None,
    ) -> list[IndexPoint]: ...
