"""Concurrent search queries share one model call, and each caller still gets its own vector."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from memvault.embed import Embedder
from memvault.embed._lazy import LazyEmbedder
from memvault.observability._metrics import QUERY_BATCH_SIZE

BACKENDS = ["use_embedder", "e5_embedder", "minilm_embedder"]
QUERIES = [
    "What instrument does the daughter play?",
    "When is the quarterly tax return due?",
    "我女儿在学什么乐器？",
    "Where did Alice keep her bicycle?",
    "Which city did the family move to last spring?",
    "What did the doctor say about the knee?",
]


def _backend(request: pytest.FixtureRequest, name: str) -> LazyEmbedder[object]:
    embedder = request.getfixturevalue(name)
    assert isinstance(embedder, Embedder) and isinstance(embedder, LazyEmbedder)
    return embedder


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> LazyEmbedder[object]:
    """Each session-loaded backend in turn."""
    return _backend(request, request.param)


def _metric_calls() -> float:
    for metric in QUERY_BATCH_SIZE.collect():
        for sample in metric.samples:
            if sample.name.endswith("_count"):
                return sample.value
    raise AssertionError("no batch-size count")


def _concurrently(embedder: LazyEmbedder[object]) -> dict[int, np.ndarray]:
    """Every query from its own thread, all queued behind one held model call."""
    results: dict[int, np.ndarray] = {}
    errors: list[BaseException] = []

    def ask(i: int) -> None:
        try:
            results[i] = embedder.embed_query(QUERIES[i])
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(len(QUERIES))]
    with embedder._model._call_lock:  # the first leader blocks in the model call
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + 10
        while embedder._queries.pending() < len(QUERIES) - 1:
            assert time.monotonic() < deadline, "the queries never queued"
            time.sleep(0.005)
    for thread in threads:
        thread.join()
    assert not errors
    return results


def test_queued_queries_share_one_model_call_and_keep_their_own_vectors(
    backend: LazyEmbedder[object],
) -> None:
    embedder = backend
    alone = [embedder.embed_query(q) for q in QUERIES]
    before, calls_before = embedder._queries.stats(), _metric_calls()
    together = _concurrently(embedder)
    after = embedder._queries.stats()
    # The leader's own query ran first, alone; the other five waited and shared the next call.
    assert (after.batches - before.batches, after.jobs - before.jobs) == (2, len(QUERIES))
    assert after.largest >= len(QUERIES) - 1
    assert _metric_calls() - calls_before == 2
    for i, vector in enumerate(alone):
        assert together[i].shape == vector.shape
        np.testing.assert_allclose(together[i], vector, atol=1e-5)
    assert float(together[0] @ together[1]) < 0.99  # not one vector handed to everyone
    assert all(v.base is None for v in together.values())  # an array each, not a batch's view


def test_batched_e5_queries_keep_the_query_prefix(request: pytest.FixtureRequest) -> None:
    embedder = _backend(request, "e5_embedder")
    together = _concurrently(embedder)
    passages = embedder.embed_documents(QUERIES)
    assert all(float(together[i] @ passages[i]) < 0.999 for i in range(len(QUERIES)))


def test_a_failed_batch_fails_its_callers_and_the_next_query_works(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    embedder = _backend(request, "use_embedder")

    def broken(model: object, batch: list[str]) -> object:
        raise RuntimeError("model failed")

    monkeypatch.setattr(embedder, "_encode_queries", broken)
    with pytest.raises(RuntimeError, match="model failed"):
        embedder.embed_query(QUERIES[0])
    monkeypatch.undo()
    assert embedder.embed_query(QUERIES[0]).shape == (embedder.dimension,)
