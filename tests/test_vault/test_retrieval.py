"""Hybrid retrieval in the vault: keyed BM25, modes, topics, heat counts and the graph walk."""

from __future__ import annotations

import pytest

from memvault.index.base import PointFilter
from memvault.runtime.factory import Services
from memvault.scope import Scope
from memvault.vault.retrieve import graph_gate
from tests.conftest import ServicesFactory


@pytest.fixture
def services(make_services: ServicesFactory, backend: str) -> Services:
    return make_services(backend)


def test_sparse_ids_are_keyed_per_tenant(services: Services) -> None:
    a = services.vault.sparse_encoder("t1").encode_query("where is the blue notebook")
    again = services.vault.sparse_encoder("t1").encode_query("where is the blue notebook")
    b = services.vault.sparse_encoder("t2").encode_query("where is the blue notebook")
    assert a.indices and a == again
    assert set(a.indices).isdisjoint(b.indices)


def test_index_payload_holds_no_words(services: Services) -> None:
    v = services.vault.scoped(Scope("t1", "u1", "a1"))
    v.add("The zephyrine notebook lives in the kitchen drawer", topics=["household"])
    hits = services.index.retrieve("t1", services.index.scroll_ids("t1", PointFilter()))
    payload = repr(hits[0].payload)
    for word in ("zephyrine", "notebook", "kitchen", "household"):
        assert word not in payload


@pytest.mark.parametrize("mode", ["dense", "sparse", "hybrid", "full"])
def test_every_mode_finds_the_note(services: Services, mode: str) -> None:
    v = services.vault.scoped(Scope("t1", "u1", "a1"))
    v.add("The user's sister Marguerite lives in Toulouse")
    v.add("The user's favourite pasta is orecchiette")
    hits = v.search("Where does Marguerite live?", limit=1, mode=mode)
    assert [h.note.text for h in hits] == ["The user's sister Marguerite lives in Toulouse"]


def test_sparse_catches_a_rare_code_word_dense_misses(services: Services) -> None:
    v = services.vault.scoped(Scope("t1", "u1", "a1"))
    target = v.add("Ticket QX-7731 is blocked on the vendor")
    for i in range(30):
        v.add(f"Ticket number {i} about the vendor contract was closed last week")
    sparse = v.search("QX-7731", limit=3, mode="sparse")
    assert sparse[0].note.id == target.id
    hybrid = v.search("QX-7731", limit=3, mode="hybrid")
    assert hybrid[0].note.id == target.id


def test_bad_mode_is_rejected(services: Services) -> None:
    from memvault.errors import InvalidRequest

    v = services.vault.scoped(Scope("t1", "u1", "a1"))
    with pytest.raises(InvalidRequest):
        v.search("anything", mode="magic")


def test_topics_filter_is_and_and_case_insensitive(services: Services) -> None:
    v = services.vault.scoped(Scope("t1", "u1", "a1"))
    both = v.add(
        "Rotate the staging database credentials quarterly",
        note_type="knowledge",
        topics=["Security", "Databases"],
    )
    v.add("Security reviews happen every spring", note_type="knowledge", topics=["security"])
    v.add("Databases are backed up nightly", note_type="knowledge", topics=["databases"])
    hits = v.search("what should we do regularly?", limit=10, topics=["security", "DATABASES"])
    assert [h.note.id for h in hits] == [both.id]
    assert len(v.search("what should we do regularly?", limit=10, topics=["security"])) == 2


def test_retrieval_counts_are_flushed_in_batches(services: Services) -> None:
    v = services.vault.scoped(Scope("t1", "u1", "a1"))
    note = v.add("The user's bike lock combination is kept in the notes app")
    v.search("bike lock", limit=1)
    v.search("bike lock", limit=1)
    services.vault.parts.retrievals.flush()
    assert v.get(note.id).retrieval_count == 2


def test_retrieval_log_writes_nothing_until_flushed(services: Services) -> None:
    from memvault.store.retrieval_log import RetrievalLog

    v = services.vault.scoped(Scope("t1", "u1", "a1"))
    note = v.add("The user's bike lock combination is kept in the notes app")
    log = RetrievalLog(services.db, lambda: 2_000_000_000.0, background=False)
    log.record("t1", [note.id])
    log.record("t1", [note.id])
    assert log.pending() == 2
    assert v.get(note.id).retrieval_count == 0
    assert log.flush() == 1
    fresh = v.get(note.id)
    assert fresh.retrieval_count == 2 and fresh.last_accessed == 2_000_000_000.0
    assert log.pending() == 0


def test_heat_reorders_near_ties_in_full_mode(services: Services) -> None:
    v = services.vault.scoped(Scope("t1", "u1", "a1"))
    a = v.add("The user went to the lake on Saturday")
    b = v.add("The user went to the lake on Sunday")
    for i in range(10):  # the normalised scores need a spread, so the two are near ties
        v.add(f"Filler note {i} about invoices, spreadsheets and the quarterly budget")
    from memvault.store.models import NoteRow
    from memvault.store.scoping import OwnedBy, scoped_update

    cold, hot = sorted([a, b], key=lambda n: n.id)
    first = v.search("when did the user go to the lake?", limit=2, mode="hybrid")[0].note.id
    hot_id = a.id if first == b.id else b.id  # heat the one hybrid ranks second
    with services.db.session("t1") as sess:
        sess.execute(scoped_update(OwnedBy("t1"), NoteRow.id == hot_id, retrieval_count=1000))
    full = v.search("when did the user go to the lake?", limit=2, mode="full")
    assert full[0].note.id == hot_id
    assert cold and hot  # both notes exist


def test_graph_admits_linked_relevant_notes_marked_via_graph(services: Services) -> None:
    v = services.vault.scoped(Scope("t1", "u1", "a1"))
    seed = v.add("Melanie adopted a rescue dog named Pixel last spring")
    hop1 = v.add("Melanie's dog Pixel loves chasing tennis balls")
    hop2 = v.add("Melanie walks her dog Pixel at the park every evening")
    far = v.add("Melanie's dog Pixel sleeps on the sofa all afternoon")
    for i in range(5):
        v.add(f"Unrelated filler memory number {i} about spreadsheets and invoices")
    v.link(seed.id, hop1.id)
    v.link(hop1.id, hop2.id)
    v.link(hop2.id, far.id)  # a third hop: never walked
    hits = v.search("What is the name of Melanie's dog?", limit=1, mode="full")
    assert hits[0].note.id == seed.id and hits[0].via == "search"
    graph = {h.note.id: h for h in hits if h.via == "graph"}
    assert set(graph) == {hop1.id, hop2.id}
    assert [h.via for h in hits] == ["search", "graph", "graph"]


def test_graph_gate_rejects_low_similarity_neighbours(services: Services) -> None:
    v = services.vault.scoped(Scope("t1", "u1", "a1"))
    seed = v.add("Melanie adopted a rescue dog named Pixel last spring")
    noise = v.add("Invoice 4471 for office chairs was paid by wire transfer")
    v.link(seed.id, noise.id)
    hits = v.search("What is the name of Melanie's dog?", limit=1, mode="full")
    assert [h.note.id for h in hits] == [seed.id]
    dense = services.vault.parts.embedder.embed_query(v.scope, "What is the name of Melanie's dog?")
    noise_vec = services.vault.parts.embedder.embed_documents(v.scope, [noise.text])[0]
    assert float(dense @ noise_vec) < graph_gate(services.vault.parts.embedder.model_id)


def test_graph_walk_never_leaves_the_readable_scopes(services: Services) -> None:
    owner = services.vault.scoped(Scope("t1", "u1", "a1"))
    other = services.vault.scoped(Scope("t1", "u1", "a2"))
    shared = owner.add("Melanie adopted a rescue dog named Pixel", visibility="shared")
    private = owner.add("Pixel the dog is Melanie's rescue from the shelter")
    owner.link(shared.id, private.id)
    seen_by_owner = {h.note.id for h in owner.search("Melanie's dog Pixel", limit=1, mode="full")}
    assert {shared.id, private.id} <= seen_by_owner
    seen_by_other = {h.note.id for h in other.search("Melanie's dog Pixel", limit=5, mode="full")}
    assert seen_by_other == {shared.id}
