"""The scale path: PostgreSQL + the Qdrant server adapter (qdrant-client local mode here)."""

from __future__ import annotations

from memvault.embed.base import Embedder
from memvault.index import QdrantIndex
from memvault.index.base import PointFilter
from memvault.scope import Scope
from memvault.vault.drafts import user_tag
from tests.conftest import ServicesFactory


def test_vault_on_postgres_and_qdrant_adapter(
    make_services: ServicesFactory, backend: str, embedder: Embedder
) -> None:
    index = QdrantIndex.from_url(":memory:", embedder.dimension)
    services = make_services(backend, index=index)
    alice = services.vault.scoped(Scope("t1", "alice", "a1"))
    bob = services.vault.scoped(Scope("t1", "bob", "a1"))
    note = alice.add("Alice's sourdough starter is called Clint Yeastwood")
    bob.add("Bob's sourdough starter is called Bread Pitt")
    for mode in ("dense", "sparse", "hybrid", "full"):
        hits = alice.search("what is the sourdough starter called?", limit=5, mode=mode)
        assert [h.note.id for h in hits] == [note.id], mode
    report = services.eraser.erase("t1", "alice")
    assert report.verified and report.vectors_deleted == 1
    bob = user_tag(services.keyring.index_key("t1").tag, "bob")
    assert index.count("t1", PointFilter(user_id=bob)) == 1
