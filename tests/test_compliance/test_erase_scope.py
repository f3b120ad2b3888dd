"""An erase blocks only the scope it erases (issue 33, "Erase scope").

Erasing one agent of a user refuses that agent's operations with 409 `scope_erasing` while it
runs; the user's other agents keep writing (201) and their notes survive. Erasing the user still
blocks every agent of it. Over HTTP against real services, on SQLite and on PostgreSQL; on
PostgreSQL also across two guards (two workers) on one database: the advisory locks and the
durable job rows are per scope too.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from memvault.compliance.erasure import ErasureJobs
from memvault.runtime.factory import Services
from memvault.scope import Scope
from memvault.vault.guard import ScopeErasing
from memvault.vault.shared_guard import SharedScopeGuard
from tests.apiclient import Api
from tests.conftest import ServicesFactory

USER = "usrqzscope"
ERASED, OTHER = "a1", "a2"


@contextmanager
def held_erase(api: Api, body: dict[str, Any], point: str) -> Iterator[str]:
    """Start an erase over HTTP and hold its job at `point` (a step hook) until the block ends."""
    jobs: ErasureJobs = api.client.app.state.compliance.erasures  # type: ignore[attr-defined]
    reached, release = threading.Event(), threading.Event()

    def hold(at: str) -> None:
        if at == point:
            reached.set()
            assert release.wait(60), "the test never released the erase"

    jobs.fault = hold
    api.client.app.state.erase_wait = 0.0  # type: ignore[attr-defined]
    admin = api.tenant("t1")
    try:
        r = api.call("POST", "/v1/admin/erase", admin, json=body)
        assert r.status_code == 202, r.text
        assert reached.wait(60), "the erase never reached " + point
        yield str(r.json()["id"])
    finally:
        release.set()
        jobs.wait()
        jobs.fault = None


def _write(api: Api, key: str, text: str) -> Any:
    return api.call("POST", "/v1/memories", key, json={"text": text})


def _counts(api: Api, user: str, agent: str | None) -> dict[str, int]:
    query = f"/v1/admin/inventory?user_id={user}" + (f"&agent_id={agent}" if agent else "")
    r = api.call("GET", query, api.tenant("t1"))
    assert r.status_code == 200, r.text
    return {s["store"]: s["count"] for s in r.json()["stores"] if s["count"] is not None}


@pytest.mark.parametrize("point", ["before:revoke", "before:shred", "before:rows"])
def test_an_agent_erase_blocks_only_that_agent(
    make_services: ServicesFactory, backend: str, point: str
) -> None:
    api = Api(make_services(backend))
    admin = api.tenant("t1")
    erased, other = api.agent_key("t1", USER, ERASED), api.agent_key("t1", USER, OTHER)
    api.add(erased, "the spare kayak paddle hangs in the boathouse")
    api.add(erased, "the family picnic is on the first Sunday", visibility="shared")
    kept = api.add(other, "the canoe trailer needs new tyres")
    with held_erase(api, {"user_id": USER, "agent_id": ERASED}, point) as job_id:
        # The other agent of the same user writes (private and shared) and reads.
        during = _write(api, other, "the canoe paddles are stored under the stairs")
        assert during.status_code == 201, during.text
        shared = api.call(
            "POST",
            "/v1/memories",
            other,
            json={"text": "the boathouse key is with the neighbour", "visibility": "shared"},
        )
        assert shared.status_code == 201, shared.text
        assert api.call("GET", f"/v1/memories/{kept['id']}", other).status_code == 200
        # The erased agent is refused: 409 while its key still exists, 401 once revoked.
        refused = _write(api, erased, "the kayak needs a new seat")
        if point == "before:revoke":
            assert refused.status_code == 409, refused.text
            assert refused.json()["error"]["code"] == "scope_erasing"
        else:
            assert refused.status_code == 401, refused.text
        with pytest.raises(ScopeErasing):  # below the API keys: the scope itself is blocked
            api.services.vault.scoped(Scope("t1", USER, ERASED)).add("the kayak is yellow")
    done = api.call("GET", f"/v1/admin/erasures/{job_id}", admin).json()
    assert done["state"] == "done" and done["receipt"]["verified"] is True, done
    assert all(n == 0 for n in _counts(api, USER, ERASED).values())
    for note_id in (kept["id"], during.json()["id"], shared.json()["id"]):
        got = api.call("GET", f"/v1/memories/{note_id}", other)
        assert got.status_code == 200, got.text
    texts = {hit["text"] for hit in api.search(other, "canoe paddles stairs")}
    assert "the canoe paddles are stored under the stairs" in texts
    assert _counts(api, USER, OTHER)["notes"] == 2


def test_a_user_erase_still_blocks_every_agent(
    make_services: ServicesFactory, backend: str
) -> None:
    api = Api(make_services(backend))
    admin = api.tenant("t1")
    keys = {agent: api.agent_key("t1", USER, agent) for agent in (ERASED, OTHER)}
    for agent, key in keys.items():
        api.add(key, f"the tent pegs are in the red bag ({agent})")
    bystander = api.agent_key("t1", "usrqzother", ERASED)
    with held_erase(api, {"user_id": USER}, "before:revoke") as job_id:
        for key in keys.values():
            refused = _write(api, key, "the tent needs a new pole")
            assert refused.status_code == 409, refused.text
            assert refused.json()["error"]["code"] == "scope_erasing"
        assert _write(api, bystander, "another user keeps writing").status_code == 201
    done = api.call("GET", f"/v1/admin/erasures/{job_id}", admin).json()
    assert done["state"] == "done" and done["receipt"]["verified"] is True, done
    assert all(n == 0 for n in _counts(api, USER, None).values())


@pytest.fixture
def second_worker(make_services: ServicesFactory) -> Iterator[tuple[Services, SharedScopeGuard]]:
    """PostgreSQL services and a second worker's guard on the same database."""
    services = make_services("postgres")
    services.tenants.create("t1")
    settings = services.settings
    assert settings.database_url is not None
    other = SharedScopeGuard(settings.database_url, settings.db_schema, services.keyring)
    try:
        yield services, other
    finally:
        other.close()


def _refused(guard: SharedScopeGuard, user: str | None, agent: str | None = None) -> bool:
    try:
        with guard.using("t1", user, agent):
            return False
    except ScopeErasing:
        return True


def test_advisory_locks_block_only_the_erased_scope_across_workers(
    second_worker: tuple[Services, SharedScopeGuard],
) -> None:
    services, other = second_worker
    guard = services.vault.parts.guard
    assert isinstance(guard, SharedScopeGuard)
    with guard.blocking("t1", USER, ERASED):
        assert _refused(other, USER, ERASED)
        assert not _refused(other, USER, OTHER)
        assert _refused(other, USER)  # a user-wide operation (an export) reads the agent too
        assert not _refused(other, "usrqzother", ERASED)
        assert not _refused(other, None)
    with guard.blocking("t1", USER):
        assert _refused(other, USER, ERASED) and _refused(other, USER, OTHER)
        assert _refused(other, USER)
    assert not _refused(other, USER, ERASED) and not _refused(other, USER)


def test_a_running_agent_erase_job_row_blocks_only_its_agent_across_workers(
    second_worker: tuple[Services, SharedScopeGuard],
) -> None:
    services, other = second_worker
    services.vault.scoped(Scope("t1", USER, OTHER)).add("the life jackets are in the van")
    jobs = ErasureJobs(services)
    jobs.start("t1", USER, ERASED, "k-admin")  # recorded, not run: the durable block alone
    assert _refused(other, USER, ERASED)
    assert not _refused(other, USER, OTHER)
    assert _refused(other, USER)
    # The other worker still opens the other agent's notes (its keys were not dropped).
    view = services.vault.scoped(Scope("t1", USER, OTHER))
    with other.using("t1", USER, OTHER):
        assert len(view.list_notes()[0]) == 1
    user_job = jobs.start("t1", USER, None, "k-admin")
    assert _refused(other, USER, OTHER)
    jobs.run("t1", user_job)
    assert services.eraser.remaining("t1", USER)["sql_rows"] == 0


def test_another_agent_meeting_a_note_of_the_erased_agent_mid_erase_gets_no_500(
    make_services: ServicesFactory, backend: str
) -> None:
    api = Api(make_services(backend))
    erased, other = api.agent_key("t1", USER, ERASED), api.agent_key("t1", USER, OTHER)
    lent = api.add(erased, "the kayak roof rack is lent to the other agent", readers=[OTHER])
    own = api.add(other, "the kayak roof rack straps are in the boot")
    assert api.call("GET", f"/v1/memories/{lent['id']}", other).status_code == 200
    with held_erase(api, {"user_id": USER, "agent_id": ERASED}, "before:vectors"):
        got = api.call("GET", f"/v1/memories/{lent['id']}", other)  # its key is shredded
        assert got.status_code in (404, 409), got.text
        found = api.call("POST", "/v1/memories/search", other, json={"query": "kayak roof rack"})
        assert found.status_code in (200, 409), found.text
        listed = api.call("GET", "/v1/memories", other)
        assert listed.status_code in (200, 409), listed.text
        assert _write(api, other, "the kayak roof rack needs new bolts").status_code == 201
    assert api.call("GET", f"/v1/memories/{lent['id']}", other).status_code == 404
    assert [h["id"] for h in api.search(other, "kayak roof rack straps boot")][:1] == [own["id"]]
