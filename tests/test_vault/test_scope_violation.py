"""The exit check: a store that ignores the scope filter is caught, loudly, never silently."""

from __future__ import annotations

from typing import Any

import pytest

from memvault.errors import ScopeViolation
from memvault.index.base import PointFilter
from memvault.scope import Scope
from tests.apiclient import Api
from tests.conftest import ServicesFactory


class FilterDroppingIndex:
    """A real index whose searches forget the scope filter (a bug or a compromised store).

    Every `search_*` call reaches the real adapter with each `PointFilter` argument replaced by
    the empty one, so the adapter's own scope filter builder is given no condition to enforce.
    """

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._inner, name)
        if not name.startswith("search_"):
            return method

        def unfiltered(*args: Any, **kwargs: Any) -> Any:
            args = tuple(PointFilter() if isinstance(a, PointFilter) else a for a in args)
            kwargs = {
                k: PointFilter() if isinstance(v, PointFilter) else v for k, v in kwargs.items()
            }
            return method(*args, **kwargs)

        return unfiltered


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
