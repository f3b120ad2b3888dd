"""Isolation: 2 tenants x 2 users x 2 agents with near-identical memories never cross."""

from __future__ import annotations

import itertools

import pytest

from tests.apiclient import OPERATOR_KEY, Api
from tests.conftest import ServicesFactory

TENANTS = ("acme", "globex")
USERS = ("alice", "bob")
AGENTS = ("planner", "coder")


def _memory(tenant: str, user: str, agent: str) -> str:
    # Near-identical across scopes: only the trailing tag differs.
    tag = f"{tenant}-{user}-{agent}"
    return f"The user likes hiking in the Alps on weekends and drinks oat milk [{tag}]"


@pytest.fixture
def world(make_services: ServicesFactory, backend: str) -> tuple[Api, dict, dict]:
    api = Api(make_services(backend))
    keys: dict[tuple[str, str, str], str] = {}
    notes: dict[tuple[str, str, str], str] = {}
    for scope in itertools.product(TENANTS, USERS, AGENTS):
        keys[scope] = api.agent_key(*scope)
        notes[scope] = api.add(keys[scope], _memory(*scope))["id"]
    return api, keys, notes


def test_search_every_scope_sees_only_its_own(world: tuple[Api, dict, dict]) -> None:
    api, keys, notes = world
    for scope, key in keys.items():
        results = api.search(key, "which outdoor hobby and milk does the user like?", limit=20)
        assert [r["id"] for r in results] == [notes[scope]]
        assert results[0]["text"].endswith(f"[{'-'.join(scope)}]")


def test_list_every_scope_sees_only_its_own(world: tuple[Api, dict, dict]) -> None:
    api, keys, notes = world
    for scope, key in keys.items():
        body = api.call("GET", "/v1/memories", key).json()
        assert body["total"] == 1
        assert [n["id"] for n in body["items"]] == [notes[scope]]


def test_get_update_delete_other_scope_is_404_and_untouched(world: tuple[Api, dict, dict]) -> None:
    api, keys, notes = world
    for (scope, key), (other, note_id) in itertools.product(keys.items(), notes.items()):
        if scope == other:
            continue
        assert api.call("GET", f"/v1/memories/{note_id}", key).status_code == 404
        r = api.call(
            "PATCH", f"/v1/memories/{note_id}", key, json={"text": "overwritten by intruder"}
        )
        assert r.status_code == 404
        assert api.call("DELETE", f"/v1/memories/{note_id}", key).status_code == 404
        assert api.call("DELETE", f"/v1/memories/{note_id}?purge=true", key).status_code == 404
    for scope, note_id in notes.items():
        body = api.call("GET", f"/v1/memories/{note_id}", keys[scope]).json()
        assert body["text"] == _memory(*scope)


def test_link_to_other_scope_is_404(world: tuple[Api, dict, dict]) -> None:
    api, keys, notes = world
    mine = ("acme", "alice", "planner")
    theirs = ("globex", "alice", "planner")
    r = api.call(
        "POST", f"/v1/memories/{notes[mine]}/links", keys[mine], json={"target_id": notes[theirs]}
    )
    assert r.status_code == 404


@pytest.mark.parametrize("field", ["tenant_id", "user_id", "agent_id", "owner", "scope"])
def test_scope_in_body_is_422(world: tuple[Api, dict, dict], field: str) -> None:
    api, keys, _ = world
    key = keys[("acme", "alice", "planner")]
    r = api.call(
        "POST", "/v1/memories", key, json={"text": "a perfectly fine memory", field: "globex"}
    )
    assert r.status_code == 422
    assert r.json()["error"]["code"] == "invalid_request"
    r = api.call("POST", "/v1/memories/search", key, json={"query": "memory", field: "globex"})
    assert r.status_code == 422


def test_scope_in_query_string_is_422(world: tuple[Api, dict, dict]) -> None:
    api, keys, _ = world
    r = api.call("GET", "/v1/memories?user_id=bob", keys[("acme", "alice", "planner")])
    assert r.status_code == 422


def test_missing_invalid_revoked_key_is_401(world: tuple[Api, dict, dict]) -> None:
    api, keys, _ = world
    assert api.call("GET", "/v1/memories", None).status_code == 401
    assert api.call("GET", "/v1/memories", "not-a-key").status_code == 401
    good = keys[("acme", "alice", "planner")]
    forged = good[: good.rindex(".") + 1] + "x" * 43
    assert api.call("GET", "/v1/memories", forged).status_code == 401
    other_tenant = good.replace("mvk_acme.", "mvk_globex.", 1)
    assert api.call("GET", "/v1/memories", other_tenant).status_code == 401
    key_id = good.split(".")[1]
    r = api.call("DELETE", f"/v1/admin/keys/{key_id}", api.tenant("acme"))
    assert r.status_code == 204
    r = api.call("GET", "/v1/memories", good)
    assert r.status_code == 401
    assert r.json()["error"]["code"] == "unauthorized"


def test_admin_cannot_revoke_other_tenants_key(world: tuple[Api, dict, dict]) -> None:
    api, keys, _ = world
    key_id = keys[("globex", "alice", "planner")].split(".")[1]
    r = api.call("DELETE", f"/v1/admin/keys/{key_id}", api.tenant("acme"))
    assert r.status_code == 404
    assert api.call("GET", "/v1/memories", keys[("globex", "alice", "planner")]).status_code == 200


def test_roles_are_enforced(world: tuple[Api, dict, dict]) -> None:
    api, keys, _ = world
    agent = keys[("acme", "alice", "planner")]
    admin = api.tenant("acme")
    assert api.call("POST", "/v1/admin/erase", agent, json={"user_id": "bob"}).status_code == 403
    assert api.call("GET", "/v1/memories", admin).status_code == 403
    r = api.call("POST", "/v1/operator/tenants", admin, json={"tenant_id": "evil"})
    assert r.status_code == 403
    r = api.call("GET", "/v1/memories", OPERATOR_KEY)
    assert r.status_code == 403
