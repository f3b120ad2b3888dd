"""`EmbeddingCache` / `CachedEmbedder` around a real model: hits skip it, scopes stay apart."""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
import pytest

from memvault.embed import (
    CachedEmbedder,
    E5Embedder,
    EmbeddingCache,
    UseEmbedder,
    Vectors,
    cache_key,
)
from memvault.embed.base import Wrapped
from memvault.scope import Scope
from tests._helpers import run_threads

ALICE = Scope("acme", "alice", "planner")
ALICE_OTHER_AGENT = Scope("acme", "alice", "writer")
BOB = Scope("acme", "bob", "planner")
GLOBEX = Scope("globex", "alice", "planner")
TEXTS = ["Alice is allergic to peanuts.", "She flies to Lisbon on Friday."]


class CountingEmbedder(Wrapped):
    """Passes every call to a real embedder and records what reached it."""

    def __init__(self, inner: UseEmbedder | E5Embedder) -> None:
        super().__init__(inner)
        self.document_batches: list[list[str]] = []
        self.queries: list[str] = []

    @property
    def calls(self) -> int:
        return len(self.document_batches) + len(self.queries)

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        self.document_batches.append(list(texts))
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> Vectors:
        self.queries.append(text)
        return self.inner.embed_query(text)


@pytest.fixture
def counting(use_embedder: UseEmbedder) -> CountingEmbedder:
    return CountingEmbedder(use_embedder)


@pytest.fixture
def cached(counting: CountingEmbedder) -> CachedEmbedder:
    return CachedEmbedder(counting, EmbeddingCache())


def test_cached_embed_documents_repeat_does_not_call_model(
    cached: CachedEmbedder, counting: CountingEmbedder
) -> None:
    first = cached.embed_documents(ALICE, TEXTS)
    second = cached.embed_documents(ALICE, TEXTS)
    assert counting.document_batches == [TEXTS]
    np.testing.assert_array_equal(first, second)
    np.testing.assert_allclose(first, counting.inner.embed_documents(TEXTS), atol=1e-5)


def test_cached_embed_documents_partial_hit_embeds_only_misses_in_one_batch(
    cached: CachedEmbedder, counting: CountingEmbedder
) -> None:
    cached.embed_documents(ALICE, TEXTS[:1])
    new = ["He prefers tea to coffee.", "The lease ends in March."]
    out = cached.embed_documents(ALICE, [TEXTS[0], new[0], new[1], new[0]])
    assert counting.document_batches == [TEXTS[:1], new]
    assert out.shape == (4, counting.dimension)
    np.testing.assert_array_equal(out[1], out[3])


def test_cached_embed_query_repeat_does_not_call_model(
    cached: CachedEmbedder, counting: CountingEmbedder
) -> None:
    first = cached.embed_query(ALICE, "where is she flying?")
    second = cached.embed_query(ALICE, "where is she flying?")
    assert counting.queries == ["where is she flying?"]
    assert first.shape == (counting.dimension,)
    np.testing.assert_array_equal(first, second)


def test_cached_query_and_document_same_text_are_separate_entries(
    cached: CachedEmbedder, counting: CountingEmbedder
) -> None:
    cached.embed_documents(ALICE, TEXTS[:1])
    cached.embed_query(ALICE, TEXTS[0])
    assert counting.calls == 2
    assert len(cached.cache) == 2


def test_cached_same_text_other_scope_misses(
    cached: CachedEmbedder, counting: CountingEmbedder
) -> None:
    for scope in (ALICE, ALICE_OTHER_AGENT, BOB, GLOBEX):
        cached.embed_documents(scope, TEXTS[:1])
    assert counting.calls == 4
    assert len(set(cached.cache.digests())) == 4


def test_cache_key_differs_across_scopes_models_and_kinds() -> None:
    keys = {
        cache_key(ALICE, "use-m3", "doc", TEXTS[0]),
        cache_key(BOB, "use-m3", "doc", TEXTS[0]),
        cache_key(GLOBEX, "use-m3", "doc", TEXTS[0]),
        cache_key(ALICE, "e5-small-q4", "doc", TEXTS[0]),
        cache_key(ALICE, "use-m3", "query", TEXTS[0]),
    }
    assert len(keys) == 5
    assert cache_key(ALICE, "use-m3", "doc", TEXTS[0]) == cache_key(
        Scope("acme", "alice", "planner"), "use-m3", "doc", TEXTS[0]
    )


def test_shared_cache_two_models_keep_separate_vectors(
    use_embedder: UseEmbedder, e5_embedder: E5Embedder
) -> None:
    cache = EmbeddingCache()
    use_vec = CachedEmbedder(use_embedder, cache).embed_documents(ALICE, TEXTS[:1])
    e5_vec = CachedEmbedder(e5_embedder, cache).embed_documents(ALICE, TEXTS[:1])
    assert len(cache) == 2
    assert use_vec.shape == (1, 512)
    assert e5_vec.shape == (1, 384)


def test_cache_digests_hold_no_text(cached: CachedEmbedder) -> None:
    cached.embed_documents(ALICE, TEXTS)
    cached.embed_query(ALICE, "peanuts")
    digests = cached.cache.digests()
    assert len(digests) == 3
    for digest in digests:
        assert re.fullmatch(r"[0-9a-f]{64}", digest)
        for text in [*TEXTS, "peanuts", "alice", "acme"]:
            assert text.lower() not in digest


def test_evict_scope_agent_removes_only_that_agent(
    cached: CachedEmbedder, counting: CountingEmbedder
) -> None:
    for scope in (ALICE, ALICE_OTHER_AGENT, BOB, GLOBEX):
        cached.embed_documents(scope, TEXTS)
    assert cached.evict_scope("acme", "alice", "planner") == 2
    assert len(cached.cache) == 6
    calls = counting.calls
    for scope in (ALICE_OTHER_AGENT, BOB, GLOBEX):
        cached.embed_documents(scope, TEXTS)
    assert counting.calls == calls  # the others are still cached
    cached.embed_documents(ALICE, TEXTS)
    assert counting.calls == calls + 1  # the evicted one is not


def test_evict_scope_user_removes_every_agent_of_user(cached: CachedEmbedder) -> None:
    for scope in (ALICE, ALICE_OTHER_AGENT, BOB, GLOBEX):
        cached.embed_documents(scope, TEXTS[:1])
    assert cached.evict_scope("acme", "alice") == 2
    remaining = set(cached.cache.digests())
    assert remaining == {
        cache_key(BOB, cached.model_id, "doc", TEXTS[0]),
        cache_key(GLOBEX, cached.model_id, "doc", TEXTS[0]),
    }


def test_evict_scope_tenant_removes_whole_tenant_only(cached: CachedEmbedder) -> None:
    for scope in (ALICE, ALICE_OTHER_AGENT, BOB, GLOBEX):
        cached.embed_documents(scope, TEXTS[:1])
    assert cached.evict_scope("acme") == 3
    assert cached.cache.digests() == [cache_key(GLOBEX, cached.model_id, "doc", TEXTS[0])]
    assert cached.evict_scope("acme") == 0


def test_cache_lru_full_drops_least_recent_and_forgets_scope(use_embedder: UseEmbedder) -> None:
    cache = EmbeddingCache(max_entries=2)
    cached = CachedEmbedder(use_embedder, cache)
    cached.embed_documents(ALICE, ["one"])
    cached.embed_documents(BOB, ["two"])
    cached.embed_documents(ALICE, ["one"])  # touch: "two" becomes least recent
    cached.embed_documents(GLOBEX, ["three"])
    assert len(cache) == 2
    assert cache_key(BOB, "use-m3", "doc", "two") not in cache.digests()
    assert cache.evict_scope("acme", "bob") == 0
    assert cache.evict_scope("acme", "alice") == 1


def test_cache_put_after_eviction_is_discarded(use_embedder: UseEmbedder) -> None:
    cache = EmbeddingCache()
    digest = cache_key(ALICE, "use-m3", "doc", TEXTS[0])
    found, generation = cache.get_many([digest])
    assert found == [None]
    cache.evict_scope("acme")  # erasure lands while the model is still computing
    vector = use_embedder.embed_documents(TEXTS[:1])[0]
    assert cache.put_many(ALICE, [(digest, vector)], generation) is False
    assert len(cache) == 0


def test_cached_result_mutation_does_not_change_cache(cached: CachedEmbedder) -> None:
    first = cached.embed_documents(ALICE, TEXTS[:1])
    original = first.copy()
    first[:] = 0.0
    np.testing.assert_array_equal(cached.embed_documents(ALICE, TEXTS[:1]), original)


def test_cached_concurrent_callers_get_consistent_vectors(cached: CachedEmbedder) -> None:
    texts = [f"fact {i} about the garden" for i in range(6)]
    expected = cached.embed_documents(ALICE, texts)

    def work(_: int) -> None:
        for _ in range(20):
            got = cached.embed_documents(ALICE, texts)
            np.testing.assert_array_equal(got, expected)
            cached.embed_documents(BOB, texts[:2])
            cached.evict_scope("acme", "bob")

    assert not run_threads(work, 4)
    assert cached.cache.evict_scope("acme", "alice") == 6


def test_embedding_cache_max_entries_zero_raises() -> None:
    with pytest.raises(ValueError):
        EmbeddingCache(max_entries=0)


def test_count_scope_counts_then_zero_after_evict() -> None:
    import numpy as np

    from memvault.embed.cache import EmbeddingCache, cache_key
    from memvault.scope import Scope

    cache = EmbeddingCache()
    a, b = Scope("t", "u1", "a"), Scope("t", "u2", "a")
    vec = np.ones(4, dtype=np.float32)
    generation = cache.generation
    cache.put_many(a, [(cache_key(a, "m", "doc", "x"), vec)], generation)
    cache.put_many(b, [(cache_key(b, "m", "doc", "y"), vec)], generation)
    assert cache.count_scope("t", "u1") == 1 and cache.count_scope("t") == 2
    cache.evict_scope("t", "u1")
    assert cache.count_scope("t", "u1") == 0 and cache.count_scope("t") == 1
