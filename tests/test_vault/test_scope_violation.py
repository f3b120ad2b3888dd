"""The exit check: a store that ignores the scope filter is caught, loudly, never silently."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from memvault.errors import ScopeViolation
from memvault.index.base import Hit, PointFilter, SparseVector
from memvault.scope import Scope
from tests.apiclient import Api
from tests.conftest import ServicesFactory


class FilterDroppingIndex:
    """A real index whose searches forget the scope filter (a bug or a compromised store)."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def search_dense(
        self, namespace: str, vector: Sequence[float], where: PointFilter, limit: int
    ) -> list[Hit]:
        return list(self._inner.search_dense(namespace, vector, PointFilter(), limit))

    def search_hybrid(
        self,
        namespace: str,
        dense: Sequence[float],
        sparse: SparseVector,
        where: PointFilter,
        limit: int,
        prefetch: int,
        weights: tuple[float, float] = (1.0, 1.0),
        rrf_k: int = 60,
    ) -> list[Hit]:
        return list(
            self._inner.search_hybrid(
                namespace, dense, sparse, PointFilter(), limit, prefetch, weights, rrf_k
            )
        )


def test_unfiltered_hit_from_another_user_raises_scope_violation(
    make_services: ServicesFactory,
) -> None:
    services = make_services("sqlite")
    services.vault.scoped(Scope("t1", "bob", "a1")).add("Bob's locker code is behind the mirror")
    services.vault.parts.index = FilterDroppingIndex(services.index)  # type: ignore[assignment]
    alice = services.vault.scoped(Scope("t1", "alice", "a1"))
    for mode in ("dense", "hybrid", "full"):
        with pytest.raises(ScopeViolation):
            alice.search("locker code", mode=mode)


def test_scope_violation_is_a_loud_500(make_services: ServicesFactory) -> None:
    api = Api(make_services("sqlite"))
    bob = api.agent_key("t1", "bob", "a1")
    alice = api.agent_key("t1", "alice", "a1")
    api.add(bob, "Bob's locker code is behind the mirror")
    api.services.vault.parts.index = FilterDroppingIndex(api.services.index)  # type: ignore[assignment]
    r = api.call("POST", "/v1/memories/search", alice, json={"query": "locker code"})
    assert r.status_code == 500
    assert r.json()["error"]["code"] == "scope_violation"
    assert "locker" not in r.text
