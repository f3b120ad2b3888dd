"""Memory reads run on the read lane: at most `read_threads` of them at once, the rest wait on
the event loop; results, validation and errors are those of the plain endpoints."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

import pytest
from fastapi.testclient import TestClient

from memvault.api.app import create_app
from memvault.runtime.factory import Services
from memvault.vault.service import ScopedVault
from tests.apiclient import OPERATOR_KEY, Api

ServicesFactory = Callable[..., Services]
HOLD_S = 0.2


class Overlap:
    """Counts how many calls of a method run at once."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.active = 0
        self.peak = 0

    def wrap(self, method: Callable[..., Any]) -> Callable[..., Any]:
        def held(*args: Any, **kwargs: Any) -> Any:
            with self.lock:
                self.active += 1
                self.peak = max(self.peak, self.active)
            try:
                time.sleep(HOLD_S)
                return method(*args, **kwargs)
            finally:
                with self.lock:
                    self.active -= 1

        return held


@contextmanager
def served(services: Services) -> Iterator[TestClient]:
    """The app with its lifespan run (the lane is sized there), one event loop for every call."""
    with TestClient(create_app(services, operator_key=OPERATOR_KEY)) as client:
        yield client


def at_once(services: Services, key: str, requests: list[tuple[str, str, Any]]) -> list[Any]:
    """Send `(method, path, json body or None)` requests all at once to the served app."""
    auth = {"Authorization": f"Bearer {key}"}
    with served(services) as client, ThreadPoolExecutor(len(requests)) as pool:
        calls = [
            pool.submit(client.request, method, path, headers=auth, json=body)
            for method, path, body in requests
        ]
        return [c.result() for c in calls]


def _world(make_services: ServicesFactory, read_threads: int) -> tuple[Services, str]:
    services = make_services("sqlite")
    services.settings.read_threads = read_threads
    api = Api(services)
    key = api.agent_key("acme", "alice", "planner")
    api.add(key, "Alice keeps her bicycle in the garden shed")
    return services, key


@pytest.mark.parametrize("read_threads", [1, 2])
def test_at_most_read_threads_searches_run_at_once(
    make_services: ServicesFactory, monkeypatch: pytest.MonkeyPatch, read_threads: int
) -> None:
    services, key = _world(make_services, read_threads)
    overlap = Overlap()
    monkeypatch.setattr(ScopedVault, "search", overlap.wrap(ScopedVault.search))
    search = ("POST", "/v1/memories/search", {"query": "where is the bicycle"})
    responses = at_once(services, key, [search] * 6)
    assert [r.status_code for r in responses] == [200] * 6
    assert all(r.json()["results"][0]["text"].startswith("Alice keeps") for r in responses)
    assert overlap.peak == read_threads


def test_a_wider_lane_runs_reads_side_by_side(
    make_services: ServicesFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The instrument above can see overlap: with six threads, gets do run together."""
    services, key = _world(make_services, 6)
    note_id = Api(services).call("GET", "/v1/memories", key).json()["items"][0]["id"]
    overlap = Overlap()
    monkeypatch.setattr(ScopedVault, "get", overlap.wrap(ScopedVault.get))
    responses = at_once(services, key, [("GET", f"/v1/memories/{note_id}", None)] * 6)
    assert [r.status_code for r in responses] == [200] * 6
    assert overlap.peak >= 3


def test_writes_are_not_held_to_the_read_lane(
    make_services: ServicesFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    services, key = _world(make_services, 1)
    overlap = Overlap()
    monkeypatch.setattr(ScopedVault, "add", overlap.wrap(ScopedVault.add))
    adds = [("POST", "/v1/memories", {"text": f"Alice planted {n} beans"}) for n in range(4)]
    assert [r.status_code for r in at_once(services, key, adds)] == [201] * 4
    assert overlap.peak >= 2


def test_lane_endpoints_keep_their_contract(make_services: ServicesFactory) -> None:
    services, key = _world(make_services, 2)
    with served(services) as client:
        auth = {"Authorization": f"Bearer {key}"}
        bad = client.post("/v1/memories/search", headers=auth, json={"query": "x", "limit": 0})
        assert bad.status_code == 422 and bad.json()["error"]["code"] == "invalid_request"
        unknown = client.get("/v1/memories?user_id=bob", headers=auth)
        assert unknown.status_code == 422
        missing = client.get("/v1/memories/00000000-0000-4000-8000-000000000000", headers=auth)
        assert missing.status_code == 404
        forged = client.get("/v1/memories", headers={"Authorization": "Bearer nope"})
        assert forged.status_code == 401
        listed = client.get("/v1/memories?limit=5", headers=auth).json()
        assert listed["total"] == 1 and listed["limit"] == 5
        note_id = listed["items"][0]["id"]
        assert client.get(f"/v1/memories/{note_id}/links", headers=auth).json() == {"links": []}
    spec = create_app(services).openapi()["paths"]["/v1/memories/search"]["post"]
    assert spec["requestBody"]["content"]["application/json"]["schema"]["$ref"].endswith(
        "SearchMemories"
    )
    assert "200" in spec["responses"]


def test_a_write_makes_one_thread_hop(
    make_services: ServicesFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An add or an update runs on a worker thread once; its response model is checked on the
    loop, not on a second thread (FastAPI's way for a plain sync endpoint)."""
    import anyio.to_thread

    services, key = _world(make_services, 2)
    hops: list[str] = []
    run_sync = anyio.to_thread.run_sync

    async def counted(func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        hops.append(getattr(func, "__name__", type(func).__name__))
        return await run_sync(func, *args, **kwargs)

    auth = {"Authorization": f"Bearer {key}"}
    with served(services) as client:
        assert client.get("/v1/memories", headers=auth).status_code == 200  # the key is cached
        monkeypatch.setattr(anyio.to_thread, "run_sync", counted)
        added = client.post("/v1/memories", headers=auth, json={"text": "Alice owns a red kayak"})
        assert added.status_code == 201 and added.json()["text"] == "Alice owns a red kayak"
        assert len(hops) == 1
        note_id = added.json()["id"]
        updated = client.patch(f"/v1/memories/{note_id}", headers=auth, json={"topics": ["boat"]})
        assert updated.status_code == 200 and updated.json()["topics"] == ["boat"]
        assert len(hops) == 2
    spec = create_app(services).openapi()["paths"]["/v1/memories"]["post"]
    assert spec["responses"]["201"]["content"]["application/json"]["schema"]["$ref"].endswith(
        "NoteOut"
    )
