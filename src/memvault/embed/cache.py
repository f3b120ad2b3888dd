"""`EmbeddingCache` and `CachedEmbedder`: skip the model for text already embedded in a scope.

Keys are sha256 digests of (scope, model id, kind, text), never the text: the cache holds no
plaintext. Because a digest cannot be traced back to its scope, the cache keeps a side map
scope → digests so erasure (`evict_scope`) can clear exactly one tenant, user or agent.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from memvault.embed.base import Embedder, Vectors, Wrapped
from memvault.observability import record, timed_call
from memvault.scope import Scope

DOCUMENT = "doc"
QUERY = "query"


def cache_key(scope: Scope, model_id: str, kind: str, text: str) -> str:
    """The hex sha256 of one cache entry's identity.

    `kind` separates documents from queries because some models (e5) encode them differently.
    Scope ids cannot contain `|` (see `memvault.scope`) and the text comes last, so the joined
    string is unambiguous.
    """
    material = f"{scope.tenant}|{scope.user}|{scope.agent}|{model_id}|{kind}|{text}"
    return hashlib.sha256(material.encode("utf-8")).hexdigest()


class PendingQuery:
    """A query's vector on its way (`CachedEmbedder.begin_query`): call it for the vector.

    `elsewhere` is true when another process is computing it now (the embedding process), so
    the caller has time for work that does not need it; false when it was cached, or when an
    in-process model computes it only once it is called.
    """

    __slots__ = ("_vector", "elsewhere")

    def __init__(self, vector: Callable[[], Vectors], *, elsewhere: bool) -> None:
        self._vector = vector
        self.elsewhere = elsewhere

    def __call__(self) -> Vectors:
        return self._vector()


@dataclass(frozen=True, slots=True)
class _Entry:
    scope: Scope
    vector: Vectors


class EmbeddingCache:
    """A thread-safe, in-memory LRU of vectors keyed by `cache_key` digests.

    Stored vectors are read-only. `generation` advances on every eviction by scope; a caller
    that looked entries up before an eviction passes the generation it saw to `put`, and its
    results are then dropped instead of re-filling a scope that was just erased.
    """

    def __init__(self, max_entries: int = 10_000) -> None:
        if max_entries < 1:
            raise ValueError("max_entries must be at least 1")
        self._max_entries = max_entries
        self._entries: OrderedDict[str, _Entry] = OrderedDict()
        self._by_scope: dict[Scope, set[str]] = {}
        self._generation = 0
        self._lock = threading.Lock()

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    @property
    def generation(self) -> int:
        """Advances whenever entries are evicted by scope or cleared."""
        with self._lock:
            return self._generation

    def digests(self) -> list[str]:
        """Every key currently held, least recently used first (for inspection and tests)."""
        with self._lock:
            return list(self._entries)

    def get_many(self, digests: Sequence[str]) -> tuple[list[Vectors | None], int]:
        """Look up digests (marking hits as recently used); return them and the generation."""
        found: list[Vectors | None] = []
        with self._lock:
            for digest in digests:
                entry = self._entries.get(digest)
                if entry is None:
                    found.append(None)
                else:
                    self._entries.move_to_end(digest)
                    found.append(entry.vector)
            return found, self._generation

    def put_many(self, scope: Scope, items: Sequence[tuple[str, Vectors]], generation: int) -> bool:
        """Store vectors under their digests for `scope`, evicting least recently used entries.

        Returns False, storing nothing, when an eviction happened since `generation` was read.
        """
        with self._lock:
            if generation != self._generation:
                return False
            owned = self._by_scope.setdefault(scope, set())
            for digest, vector in items:
                frozen = np.array(vector, dtype=np.float32, copy=True)
                frozen.setflags(write=False)
                self._entries[digest] = _Entry(scope, frozen)
                self._entries.move_to_end(digest)
                owned.add(digest)
            while len(self._entries) > self._max_entries:
                digest, entry = self._entries.popitem(last=False)
                self._forget(entry.scope, digest)
            return True

    def evict_scope(self, tenant: str, user: str | None = None, agent: str | None = None) -> int:
        """Drop every entry of a tenant, or of one of its users, or of one (user, agent).

        `agent` without `user` matches that agent under every user of the tenant. Returns the
        number of entries removed. Part of erasure: no vector of an erased scope stays cached.
        """
        with self._lock:
            self._generation += 1
            doomed = self._matching(tenant, user, agent)
            removed = 0
            for scope in doomed:
                for digest in self._by_scope.pop(scope):
                    if self._entries.pop(digest, None) is not None:
                        removed += 1
            return removed

    def count_scope(self, tenant: str, user: str | None = None, agent: str | None = None) -> int:
        """How many entries a tenant, user or (user, agent) holds (0 after `evict_scope`)."""
        with self._lock:
            return sum(
                1
                for scope in self._matching(tenant, user, agent)
                for digest in self._by_scope[scope]
                if digest in self._entries
            )

    def _matching(self, tenant: str, user: str | None, agent: str | None) -> list[Scope]:
        return [
            scope
            for scope in self._by_scope
            if scope.tenant == tenant
            and (user is None or scope.user == user)
            and (agent is None or scope.agent == agent)
        ]

    def clear(self) -> None:
        """Drop everything (e.g. after a model change)."""
        with self._lock:
            self._generation += 1
            self._entries.clear()
            self._by_scope.clear()

    def _forget(self, scope: Scope, digest: str) -> None:
        owned = self._by_scope.get(scope)
        if owned is not None:
            owned.discard(digest)
            if not owned:
                del self._by_scope[scope]


class CachedEmbedder(Wrapped):
    """An `Embedder` seen through an `EmbeddingCache`, per scope.

    Only misses reach the model, in one batch per call (duplicates within a batch are embedded
    once). The model runs outside the cache lock, so cache hits never wait for it.
    """

    def __init__(self, embedder: Embedder, cache: EmbeddingCache) -> None:
        super().__init__(embedder)
        self._cache = cache

    @property
    def cache(self) -> EmbeddingCache:
        """The cache in use (shared by every `CachedEmbedder` built on it)."""
        return self._cache

    @timed_call("embed", "document")
    def embed_documents(self, scope: Scope, texts: Sequence[str]) -> Vectors:
        """Embed documents for `scope`: shape (len(texts), dimension), cached per text."""
        return self._embed(scope, DOCUMENT, list(texts))

    @timed_call("embed", "document")
    def embed_scoped_documents(self, items: Sequence[tuple[Scope, str]]) -> Vectors:
        """Embed `(scope, text)` documents of any scopes with ONE model call for the misses.

        Shape (len(items), dimension). Each vector is cached under its own scope's key, exactly
        as `embed_documents(scope, [text])` would cache it, so a group commit of several
        writers' adds (`memvault.vault.group_commit`) pays one model call for all of them.
        """
        return self._embed_pairs(DOCUMENT, list(items))

    @timed_call("embed", "query")
    def embed_query(self, scope: Scope, text: str) -> Vectors:
        """Embed a query for `scope`: shape (dimension,), cached."""
        return self._embed(scope, QUERY, [text])[0]

    def begin_query(self, scope: Scope, text: str) -> PendingQuery:
        """Start embedding a query for `scope`; the returned function gives its vector.

        When the model runs in another process (`ProcessEmbedder.submit_query`), a miss is sent
        to it now, so the caller's work until it asks for the vector (a search's BM25 half)
        overlaps the model's. Otherwise nothing runs until the function is called, which then
        does what `embed_query` does. Either way the vector is cached as `embed_query` caches
        it, and the `embed`/`query` time runs from this call until the vector is in hand.
        """
        submit = getattr(self.inner, "submit_query", None)
        if submit is None:
            return PendingQuery(lambda: self.embed_query(scope, text), elsewhere=False)
        start = time.perf_counter()
        digest = cache_key(scope, self.model_id, QUERY, text)
        (found,), generation = self._cache.get_many([digest])
        wait = None if found is not None else submit(text)

        def vector() -> Vectors:
            if wait is None:
                out = np.array(found, dtype=np.float32)
            else:
                out = wait()
                self._cache.put_many(scope, [(digest, out)], generation)
            record("embed", "query", time.perf_counter() - start)
            return out

        return PendingQuery(vector, elsewhere=wait is not None)

    def evict_scope(self, tenant: str, user: str | None = None, agent: str | None = None) -> int:
        """Shortcut for `cache.evict_scope` (see there)."""
        return self._cache.evict_scope(tenant, user, agent)

    def count_scope(self, tenant: str, user: str | None = None, agent: str | None = None) -> int:
        """Shortcut for `cache.count_scope` (see there)."""
        return self._cache.count_scope(tenant, user, agent)

    def _embed(self, scope: Scope, kind: str, texts: list[str]) -> Vectors:
        return self._embed_pairs(kind, [(scope, text) for text in texts])

    def _embed_pairs(self, kind: str, pairs: list[tuple[Scope, str]]) -> Vectors:
        out = np.empty((len(pairs), self.dimension), dtype=np.float32)
        if not pairs:
            return out
        model_id = self.model_id
        digests = [cache_key(scope, model_id, kind, text) for scope, text in pairs]
        found, generation = self._cache.get_many(digests)
        missing: dict[str, list[int]] = {}
        for row, (digest, vector) in enumerate(zip(digests, found, strict=True)):
            if vector is None:
                missing.setdefault(digest, []).append(row)
            else:
                out[row] = vector
        if missing:
            first_rows = [rows[0] for rows in missing.values()]
            if kind == QUERY:
                fresh = self.inner.embed_query(pairs[first_rows[0]][1]).reshape(1, -1)
            else:
                fresh = self.inner.embed_documents([pairs[row][1] for row in first_rows])
            by_scope: dict[Scope, list[tuple[str, Vectors]]] = {}
            for (digest, rows), vector in zip(missing.items(), fresh, strict=True):
                out[rows] = vector
                by_scope.setdefault(pairs[rows[0]][0], []).append((digest, vector))
            for scope, entries in by_scope.items():
                self._cache.put_many(scope, entries, generation)
        return out
