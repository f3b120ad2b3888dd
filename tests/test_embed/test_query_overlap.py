"""A search asks for its query vector first and waits for it last: with the model in its own
process, the child embeds while the caller runs the BM25 half (and a full search reads its BM25
candidates' records). The vector, the cache and the results are what `embed_query` gives; a
child that dies meanwhile is replaced."""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from memvault.embed import CachedEmbedder, EmbeddingCache, Vectors
from memvault.embed.base import Embedder
from memvault.embed.process import ProcessEmbedder
from memvault.scope import Scope
from memvault.vault.retrieve import SEARCHES
from tests._helpers import poll_until

ALICE = Scope("acme", "alice", "planner")
QUERY = "When does Alice fly to Lisbon?"


class CountingSubmits:
    """A `ProcessEmbedder` seen through its query calls: what was submitted and awaited."""

    def __init__(self, inner: ProcessEmbedder, events: list[str] | None = None) -> None:
        self.inner = inner
        self.model_id, self.dimension = inner.model_id, inner.dimension
        self.events = events if events is not None else []

    def embed_documents(self, texts: list[str]) -> Vectors:
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> Vectors:
        self.events.append("embed_query")
        return self.inner.embed_query(text)

    def submit_query(self, text: str) -> Callable[[], Vectors]:
        self.events.append("submit")
        wait = self.inner.submit_query(text)

        def awaited() -> Vectors:
            self.events.append("await")
            return wait()

        return awaited


def _answered_within(model: ProcessEmbedder, seconds: float = 30.0) -> bool:
    """Whether the child has answered every call it was sent, within `seconds`."""
    child = model._child
    assert child is not None

    def answered() -> bool:
        with child.lock:
            return not child.calls

    return poll_until(answered, seconds, step=0.01)


def test_a_submitted_query_is_embedded_before_anyone_waits_for_it(
    process_embedder: ProcessEmbedder, embedder: Embedder
) -> None:
    wait = process_embedder.submit_query(QUERY)
    assert _answered_within(process_embedder), "the child did not answer before the wait"
    vector = wait()
    assert vector.dtype == np.float32 and vector.shape == (512,)
    assert np.array_equal(vector, embedder.embed_query(QUERY))
    assert np.array_equal(vector, process_embedder.embed_query(QUERY))


def test_a_child_killed_while_a_query_is_pending_is_replaced_and_the_query_answered(
    process_embedder: ProcessEmbedder, embedder: Embedder
) -> None:
    first = process_embedder.pid
    assert first is not None
    os.kill(first, signal.SIGSTOP)  # it cannot answer before it dies
    try:
        wait = process_embedder.submit_query(QUERY)
    finally:
        os.kill(first, signal.SIGKILL)
    assert np.array_equal(wait(), embedder.embed_query(QUERY))
    assert process_embedder.pid not in (None, first)


def test_begin_query_caches_the_vector_and_a_hit_skips_the_model(
    process_embedder: ProcessEmbedder,
) -> None:
    counting = CountingSubmits(process_embedder)
    cached = CachedEmbedder(counting, EmbeddingCache())  # type: ignore[arg-type]
    first = cached.begin_query(ALICE, QUERY)()
    assert counting.events == ["submit", "await"]
    assert cached.count_scope("acme", "alice") == 1
    again = cached.begin_query(ALICE, QUERY)()
    assert counting.events == ["submit", "await"], "a cached query reached the model"
    assert np.array_equal(first, again)
    assert np.array_equal(first, cached.embed_query(ALICE, QUERY))
    assert counting.events == ["submit", "await"]


def test_a_scope_evicted_while_its_query_is_pending_caches_nothing(
    process_embedder: ProcessEmbedder,
) -> None:
    cached = CachedEmbedder(CountingSubmits(process_embedder), EmbeddingCache())  # type: ignore[arg-type]
    pending = cached.begin_query(ALICE, QUERY)
    assert cached.evict_scope("acme", "alice") == 0  # the erasure's eviction, mid-flight
    assert pending().shape == (512,)
    assert cached.count_scope("acme") == 0, "an erased scope's query vector was cached"


def test_an_in_process_model_runs_only_when_the_vector_is_asked_for(
    use_embedder: Embedder,
) -> None:
    calls: list[str] = []

    class InProcess:
        model_id, dimension = use_embedder.model_id, use_embedder.dimension

        def embed_documents(self, texts: list[str]) -> Vectors:
            return use_embedder.embed_documents(texts)

        def embed_query(self, text: str) -> Vectors:
            calls.append(text)
            return use_embedder.embed_query(text)

    cached = CachedEmbedder(InProcess(), EmbeddingCache())  # type: ignore[arg-type]
    pending = cached.begin_query(ALICE, QUERY)
    assert calls == []
    assert np.array_equal(pending(), use_embedder.embed_query(QUERY))
    assert calls == [QUERY] and cached.count_scope("acme", "alice") == 1


def _log_calls(obj: object, names: tuple[str, ...], events: list[str], label: str = "") -> None:
    """Replace `obj`'s methods `names` (on the instance) with ones that log their name first."""
    for name in names:
        real = getattr(obj, name)

        def logged(
            *args: object, _real: Callable[..., object] = real, _name: str = name, **kw: object
        ):  # type: ignore[no-untyped-def]
            events.append(label or _name)
            return _real(*args, **kw)

        setattr(obj, name, logged)


def _log_record_reads(view: object, events: list[str]) -> None:
    """Log the view's `live_records` calls: "rows" for a full or hybrid search's result records
    (read with their links), "records" for the others (a dense search's hits, the re-ranking
    stage's read of the pool's sealed flags)."""
    real = view.live_records  # type: ignore[attr-defined]

    def logged(ids: object, with_links: bool = False):  # type: ignore[no-untyped-def]
        events.append("rows" if with_links else "records")
        return real(ids, with_links=with_links)

    view.live_records = logged  # type: ignore[attr-defined]


@pytest.mark.parametrize("mode", ["hybrid", "full", "dense", "full, another search running"])
def test_a_search_runs_its_bm25_half_while_the_child_embeds(
    tmp_path: Path, process_embedder: ProcessEmbedder, embedder: Embedder, mode: str
) -> None:
    from memvault.config import Settings
    from memvault.runtime.factory import open_services

    events: list[str] = []
    counting = CountingSubmits(process_embedder, events)
    settings = Settings(data_dir=tmp_path / "data", amem=False)
    services = open_services(settings, embedder=counting, screen=None)  # type: ignore[arg-type]
    try:
        services.tenants.create("acme")
        view = services.vault.scoped(ALICE)
        lisbon = view.add("Alice flies to Lisbon on Friday morning")
        view.add("Bob keeps bees on the roof of the depot")
        _log_calls(services.vault.parts.index, ("search_sparse", "search_dense"), events)
        _log_record_reads(view, events)
        events.clear()
        with contextlib.ExitStack() as others:
            if mode.endswith("running"):  # as another request thread's search would count
                others.enter_context(SEARCHES.entered())
            hits = view.search(QUERY, limit=2, mode=mode.split(",")[0])
    finally:
        services.close()
    assert hits and hits[0].note.id == lisbon.id
    if mode.endswith("running"):  # not alone: every record is read after fusion
        assert events[:3] == ["submit", "search_sparse", "await"], events
        assert events.count("rows") == 1 and events.index("rows") > events.index("search_dense")
    elif mode == "dense":
        assert events == ["submit", "await", "search_dense", "records"], events
    elif mode == "hybrid":
        assert events[:3] == ["submit", "search_sparse", "await"], events
        assert "search_dense" in events[3:] and "embed_query" not in events
    else:  # full: the BM25 candidates' records are read before the vector is awaited
        assert events[:4] == ["submit", "search_sparse", "rows", "await"], events
        assert "search_dense" in events[4:] and "embed_query" not in events


def test_rows_read_ahead_give_a_full_search_the_results_of_rows_read_after(
    tmp_path: Path, process_embedder: ProcessEmbedder
) -> None:
    """The same full searches, with the BM25 candidates' records read while the child embeds
    and with every record read after fusion: the same notes, scores and order. At limit 5 a
    note only the dense list found is among them (read by a second statement); at limit 1 the
    top note's links, known from the rows read ahead, lead the walk to it."""
    from memvault.config import Settings
    from memvault.embed import PendingQuery
    from memvault.runtime.factory import open_services

    settings = Settings(data_dir=tmp_path / "data", amem=False)
    services = open_services(settings, embedder=process_embedder, screen=None)
    try:
        services.tenants.create("acme")
        view = services.vault.scoped(ALICE)
        lisbon = view.add("Alice flies to Lisbon on Friday morning")
        plane = view.add("Her plane for Portugal's capital leaves at dawn")  # no word of the query
        view.link(lisbon.id, plane.id)
        for text in ("Bob keeps bees on the roof", "The depot opens at nine", "Rain on Monday"):
            view.add(text)
        view.add("Alice flies to Lisbon, the planner's private note", visibility="private")
        other = services.vault.scoped(Scope("acme", "alice", "mailer"))
        other.add(
            "Alice flies to Lisbon on Friday: the mailer's private copy", visibility="private"
        )
        # Heat stays as it is between the searches: no retrieval is counted.
        services.vault.parts.retrievals.record = lambda tenant, ids: None  # type: ignore[method-assign]
        statements: list[str] = []
        _log_record_reads(view, statements)
        embedder = services.vault.parts.embedder
        begin = embedder.begin_query

        def not_elsewhere(scope: Scope, text: str) -> PendingQuery:
            return PendingQuery(begin(scope, text), elsewhere=False)

        found: dict[tuple[int, bool], list[tuple[str, float, str]]] = {}
        reads: dict[tuple[int, bool], int] = {}
        for limit in (5, 1):
            for read_ahead in (True, False):
                embedder.begin_query = begin if read_ahead else not_elsewhere  # type: ignore[method-assign]
                statements.clear()
                hits = view.search(QUERY, limit=limit, mode="full")
                found[(limit, read_ahead)] = [(h.note.id, h.score, h.via) for h in hits]
                reads[(limit, read_ahead)] = statements.count("rows")
                assert all(h.note.agent == "planner" for h in hits), "another agent's private note"
    finally:
        services.close()
    for limit in (5, 1):
        assert found[(limit, True)] == found[(limit, False)], limit
    assert {(i, via) for i, _, via in found[(5, True)]} >= {
        (lisbon.id, "search"),
        (plane.id, "search"),
    }
    assert reads[(5, True)] == 2 and reads[(5, False)] == 1, reads
    assert [(i, via) for i, _, via in found[(1, True)]] == [
        (lisbon.id, "search"),
        (plane.id, "graph"),
    ]


def test_searches_in_flight_count_nested_and_failed_searches() -> None:
    from memvault.vault.retrieve import InFlight

    searches = InFlight()
    with searches.entered() as first:
        with pytest.raises(RuntimeError), searches.entered() as second:
            assert (first, second) == (1, 2)
            raise RuntimeError("a search that fails still leaves the count")
        with searches.entered() as again:
            assert again == 2
    with searches.entered() as alone:
        assert alone == 1
