"""Erase and tenant deletion are safe against writes in flight (issue 7, item 7).

Four writer threads hammer one user over HTTP while an admin erases that user (or the operator
deletes the tenant). No request may fail with a 5xx; after `verified: true` the user counts zero
notes and zero vectors, and still does after the writers stop.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select

from memvault.api.app import create_app
from memvault.index.base import PointFilter
from memvault.store.models import NoteRow
from memvault.vault.drafts import user_tag
from tests.apiclient import OPERATOR_KEY, Api
from tests.conftest import ServicesFactory

WRITERS = 4


def _writers(
    client: TestClient, keys: list[str], stop: threading.Event, statuses: Counter[int]
) -> list[threading.Thread]:
    lock = threading.Lock()
    counter = itertools.count()

    def work(key: str) -> None:
        ids: list[str] = []
        while not stop.is_set():
            n = next(counter)
            headers = {"Authorization": f"Bearer {key}"}
            if ids and n % 3 == 0:
                r = client.patch(
                    f"/v1/memories/{ids[-1]}",
                    json={"text": f"Updated fact number {n} about the garden shed"},
                    headers=headers,
                )
            else:
                r = client.post(
                    "/v1/memories",
                    json={"text": f"Fact number {n}: the garden shed needs a new roof"},
                    headers=headers,
                )
                if r.status_code == 201:
                    ids.append(r.json()["id"])
            with lock:
                statuses[r.status_code] += 1

    return [
        threading.Thread(target=work, args=(keys[i % len(keys)],), daemon=True)
        for i in range(WRITERS)
    ]


def _user_counts(services: Any, tenant: str, user: str) -> tuple[int, int]:
    with services.db.session(tenant) as sess:
        rows = sess.execute(
            select(func.count())
            .select_from(NoteRow)
            .where(NoteRow.tenant_id == tenant, NoteRow.user_id == user)
        ).scalar_one()
    if not services.keyring.has_tenant(tenant):  # deleted: asking for its tag would recreate keys
        return int(rows), int(services.index.count(tenant, PointFilter()))
    where = PointFilter(user_id=user_tag(services.keyring.index_key(tenant).tag, user))
    return int(rows), int(services.index.count(tenant, where))


def _race(
    make_services: ServicesFactory, backend: str, act: Callable[[Api, TestClient], Any]
) -> tuple[Api, Counter[int], Any]:
    services = make_services(backend)
    api = Api(services)
    keys = [api.agent_key("acme", "alice", "planner"), api.agent_key("acme", "alice", "coder")]
    bob = api.agent_key("acme", "bob", "planner")
    api.add(bob, "Bob keeps his bicycle in the garden shed")
    statuses: Counter[int] = Counter()
    stop = threading.Event()
    with TestClient(create_app(services, operator_key=OPERATOR_KEY)) as client:
        threads = _writers(client, keys, stop, statuses)
        for t in threads:
            t.start()
        deadline = time.monotonic() + 30
        while sum(statuses.values()) < 12 and time.monotonic() < deadline:
            time.sleep(0.05)  # let writes get going before the erase
        result = act(api, client)
        time.sleep(0.5)  # writers keep trying after the erase
        stop.set()
        for t in threads:
            t.join(timeout=60)
    return api, statuses, result


def test_erase_raced_by_four_writers(make_services: ServicesFactory, backend: str) -> None:
    def erase(api: Api, client: TestClient) -> Any:
        r = client.post(
            "/v1/admin/erase",
            json={"user_id": "alice"},
            headers={"Authorization": f"Bearer {api.tenant('acme')}"},
        )
        assert r.status_code == 200, r.text
        body = r.json()
        assert body["receipt"]["verified"] is True
        assert _user_counts(api.services, "acme", "alice") == (0, 0)
        return body

    api, statuses, _ = _race(make_services, backend, erase)
    assert statuses[201] > 0, statuses
    assert not [s for s in statuses if s >= 500], statuses
    assert set(statuses) <= {200, 201, 401, 404, 409}, statuses
    assert _user_counts(api.services, "acme", "alice") == (0, 0)  # again, after the writers
    assert _user_counts(api.services, "acme", "bob") == (1, 1)  # the neighbour is untouched


def test_tenant_deletion_raced_by_writers_leaves_no_folder_or_vector(
    make_services: ServicesFactory,
) -> None:
    def drop(api: Api, client: TestClient) -> Any:
        r = client.delete(
            "/v1/operator/tenants/acme", headers={"Authorization": f"Bearer {OPERATOR_KEY}"}
        )
        assert r.status_code == 200, r.text
        return r.json()

    api, statuses, _ = _race(make_services, "sqlite", drop)
    assert not [s for s in statuses if s >= 500], statuses
    assert "acme" not in api.services.index.namespaces()
    assert api.services.index.count("acme", PointFilter()) == 0
    assert _user_counts(api.services, "acme", "alice") == (0, 0)


@pytest.mark.parametrize("agent", [None, "planner"])
def test_erase_revokes_the_scope_keys(make_services: ServicesFactory, agent: str | None) -> None:
    api = Api(make_services("sqlite"))
    planner = api.agent_key("acme", "alice", "planner")
    coder = api.agent_key("acme", "alice", "coder")
    api.add(planner, "Alice waters the tomatoes every evening")
    body: dict[str, Any] = {"user_id": "alice"}
    if agent:
        body["agent_id"] = agent
    r = api.call("POST", "/v1/admin/erase", api.tenant("acme"), json=body)
    assert r.status_code == 200 and r.json()["receipt"]["verified"] is True
    after = api.call("GET", "/v1/memories", planner)
    assert after.status_code == 401
    coder_after = api.call("GET", "/v1/memories", coder)
    assert coder_after.status_code == (200 if agent else 401)
