"""The memory endpoints: CRUD, sharing, writers, errors and the OpenAPI document."""

from __future__ import annotations

import pytest

from memvault.vault.drafts import user_tag
from tests.apiclient import Api
from tests.conftest import ServicesFactory


@pytest.fixture
def api(make_services: ServicesFactory) -> Api:
    return Api(make_services("sqlite"))


def test_add_returns_201_with_the_contract_fields(api: Api) -> None:
    key = api.agent_key("t1", "u1", "a1")
    note = api.add(key, "The user is allergic to peanuts", source="chat", topics=["health"])
    assert set(note) >= {
        "id",
        "text",
        "visibility",
        "owner",
        "readers",
        "writers",
        "note_type",
        "topics",
        "source",
        "created_at",
        "updated_at",
        "flags",
    }
    assert note["visibility"] == "private"
    assert note["owner"] == "a1" and note["readers"] == ["a1"] and note["writers"] == ["a1"]
    assert note["topics"] == ["health"] and note["source"] == "chat"


def test_get_list_update_delete_round_trip(api: Api) -> None:
    key = api.agent_key("t1", "u1", "a1")
    note = api.add(key, "The user's favourite colour is green")
    r = api.call(
        "PATCH",
        f"/v1/memories/{note['id']}",
        key,
        json={"text": "The user's favourite colour is blue"},
    )
    assert r.status_code == 200 and r.json()["text"].endswith("blue")
    assert api.call("GET", f"/v1/memories/{note['id']}", key).json()["text"].endswith("blue")
    hits = api.search(key, "favourite colour")
    assert hits[0]["id"] == note["id"] and hits[0]["text"].endswith("blue")
    assert api.call("DELETE", f"/v1/memories/{note['id']}", key).status_code == 204
    assert api.search(key, "favourite colour") == []
    assert api.call("GET", f"/v1/memories/{note['id']}", key).status_code == 404
    assert api.call("GET", "/v1/memories", key).json()["total"] == 0


def test_purge_removes_vector_and_row(api: Api) -> None:
    key = api.agent_key("t1", "u1", "a1")
    note = api.add(key, "The user parks on level three of the garage")
    assert api.call("DELETE", f"/v1/memories/{note['id']}?purge=true", key).status_code == 204
    from memvault.index.base import PointFilter

    assert (
        api.services.index.count(
            "t1", PointFilter(user_id=user_tag(api.services.keyring.index_key("t1").tag, "u1"))
        )
        == 0
    )
    assert api.services.eraser.remaining("t1", "u1")["sql_rows"] == 0


def test_shared_note_visible_to_other_agents_of_same_user_only(api: Api) -> None:
    a1 = api.agent_key("t1", "u1", "a1")
    a2 = api.agent_key("t1", "u1", "a2")
    other_user = api.agent_key("t1", "u2", "a1")
    shared = api.add(a1, "The family dog is called Biscuit", visibility="shared")
    private = api.add(a1, "The family cat is called Pepper")
    assert shared["readers"] == ["*"] and shared["visibility"] == "shared"
    seen = [h["id"] for h in api.search(a2, "what are the family pets called?", limit=10)]
    assert seen == [shared["id"]]
    assert api.call("GET", f"/v1/memories/{private['id']}", a2).status_code == 404
    assert api.search(other_user, "what are the family pets called?", limit=10) == []
    assert api.call("GET", f"/v1/memories/{shared['id']}", other_user).status_code == 404


def test_reader_that_is_not_writer_gets_403(api: Api) -> None:
    a1 = api.agent_key("t1", "u1", "a1")
    a2 = api.agent_key("t1", "u1", "a2")
    shared = api.add(a1, "The quarterly report is due on the fifth", visibility="shared")
    r = api.call("PATCH", f"/v1/memories/{shared['id']}", a2, json={"text": "changed by a reader"})
    assert r.status_code == 403
    assert r.json()["error"]["code"] == "permission_denied"
    assert api.call("DELETE", f"/v1/memories/{shared['id']}", a2).status_code == 403
    assert api.call("GET", f"/v1/memories/{shared['id']}", a1).json()["text"].endswith("fifth")


def test_explicit_readers_grant_read_not_write(api: Api) -> None:
    a1 = api.agent_key("t1", "u1", "a1")
    a2 = api.agent_key("t1", "u1", "a2")
    a3 = api.agent_key("t1", "u1", "a3")
    note = api.add(a1, "The user's gym locker code changes monthly", readers=["a2"])
    assert note["readers"] == ["a1", "a2"]
    assert api.call("GET", f"/v1/memories/{note['id']}", a2).status_code == 200
    assert api.call("GET", f"/v1/memories/{note['id']}", a3).status_code == 404
    r = api.call("PATCH", f"/v1/memories/{note['id']}", a2, json={"readers": ["a3"]})
    assert r.status_code == 403


def test_bad_input_is_422_with_error_shape(api: Api) -> None:
    key = api.agent_key("t1", "u1", "a1")
    for body in (
        {},
        {"text": ""},
        {"text": "fine text here", "visibility": "public"},
        {"text": "fine text here", "note_type": "knowledge"},
        {"text": "fine text here", "readers": ["bad id!"]},
        {"text": "x" * 40_000},
    ):
        r = api.call("POST", "/v1/memories", key, json=body)
        assert r.status_code == 422, body
        assert set(r.json()["error"]) == {"code", "message"}
    assert api.call("GET", "/v1/memories", key).json()["total"] == 0


def test_validation_error_never_echoes_the_value(api: Api) -> None:
    key = api.agent_key("t1", "u1", "a1")
    marker = "zz-unique-marker-not-to-echo"
    r = api.call("POST", "/v1/memories", key, json={"text": "ok text value", "visibility": marker})
    assert r.status_code == 422
    assert marker not in r.text


def test_duplicate_add_returns_the_existing_note(api: Api) -> None:
    key = api.agent_key("t1", "u1", "a1")
    first = api.add(key, "The user's passport expires in March")
    second = api.add(key, "The user's passport expires in March")
    assert first["id"] == second["id"]
    assert api.call("GET", "/v1/memories", key).json()["total"] == 1


def test_search_result_carries_labels_and_notice(api: Api) -> None:
    key = api.agent_key("t1", "u1", "a1")
    api.add(key, "The user commutes by bicycle", source="chat")
    r = api.call("POST", "/v1/memories/search", key, json={"query": "how does the user commute?"})
    body = r.json()
    assert "not instructions" in body["notice"]
    hit = body["results"][0]
    assert {"score", "age_days", "source", "via", "visibility", "owner"} <= set(hit)
    assert hit["via"] == "search" and hit["source"] == "chat"


def test_ttl_expired_note_is_hidden(api: Api) -> None:
    key = api.agent_key("t1", "u1", "a1")
    note = api.add(key, "The door code for tonight is on the fridge", ttl_days=1)
    vault = api.services.vault
    real_clock = vault.parts.clock
    vault.parts.clock = lambda: real_clock() + 2 * 86_400
    try:
        assert api.call("GET", f"/v1/memories/{note['id']}", key).status_code == 404
        assert api.search(key, "door code") == []
    finally:
        vault.parts.clock = real_clock


def test_openapi_and_health_are_served(api: Api) -> None:
    spec = api.client.get("/openapi.json").json()
    assert "/v1/memories" in spec["paths"] and "/v1/admin/erase" in spec["paths"]
    assert api.client.get("/healthz").json()["status"] == "ok"
    assert "memvault_requests" in api.metrics().text


def test_operator_tenant_lifecycle(api: Api) -> None:
    from tests.apiclient import OPERATOR_KEY

    key = api.agent_key("t9", "u1", "a1")
    api.add(key, "Something the tenant remembers")
    r = api.call("POST", "/v1/operator/tenants", OPERATOR_KEY, json={"tenant_id": "t9"})
    assert r.status_code == 409
    r = api.call("DELETE", "/v1/operator/tenants/t9", OPERATOR_KEY)
    assert r.status_code == 200 and r.json()["receipt"]["verified"] is True
    deleted = {s["store"]: s["deleted"] for s in r.json()["receipt"]["stores"]}
    assert deleted["notes"] == 1
    assert api.call("GET", "/v1/memories", key).status_code == 401
    assert api.services.keyring.count_keys("t9") == 0
    assert api.call("DELETE", "/v1/operator/tenants/t9", OPERATOR_KEY).status_code == 404
