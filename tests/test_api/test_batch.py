"""`POST /v1/memories/batch`: per-item results, idempotency, limits, scope and audit."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import delete

from memvault.store.models import IdempotencyRow
from tests.apiclient import Api
from tests.conftest import ServicesFactory

AWS_ID = "AKIAIOSFODNN7EXAMPLE"
GITHUB = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
PATH = "/v1/memories/batch"


@pytest.fixture
def api(make_services: ServicesFactory, backend: str) -> Api:
    return Api(make_services(backend))


def total(api: Api, key: str) -> int:
    return int(api.call("GET", "/v1/memories", key).json()["total"])


def batch(api: Api, key: str, items: list[Any], **kw: Any) -> Any:
    return api.call("POST", PATH, key, json={"items": items}, **kw)


def added_events(api: Api, tenant: str) -> list[dict[str, Any]]:
    return [e for e in api.services.audit.events(tenant) if e["action"] == "note.added"]


def test_a_mixed_batch_stores_the_good_items_and_answers_each_in_place(api: Api) -> None:
    key = api.agent_key("acme", "alice", "planner")
    items: list[Any] = [
        {"text": "Alice likes green tea", "topics": ["drinks"], "source": "chat"},
        {"text": f"my key is {AWS_ID} keep it safe"},
        {"text": "Alice lives in Lisbon", "visibility": "public"},
        {"text": "Alice has a cat named Miso", "visibility": "shared"},
        {"text": "Alice bikes to work", "readers": [AWS_ID]},
        "not an object",
        {"text": "Alice is vegetarian", "tenant_id": "other"},
        {"text": "Alice plays the cello", "source": f"token {GITHUB}"},
    ]
    r = batch(api, key, items)
    assert r.status_code == 200, r.text
    results = r.json()["results"]
    assert len(results) == len(items)
    assert AWS_ID not in r.text and GITHUB not in r.text and "public" not in r.text
    assert results[0]["text"] == "Alice likes green tea" and results[0]["topics"] == ["drinks"]
    assert results[3]["visibility"] == "shared" and results[3]["readers"] == ["*"]
    codes = [res.get("error", {}).get("code") for res in results]
    assert codes == [
        None,
        "credential_refused",
        "invalid_request",
        None,
        "credential_refused",
        "invalid_request",
        "invalid_request",
        "credential_refused",
    ]
    assert "visibility" in results[2]["error"]["message"]
    assert "tenant_id" in results[6]["error"]["message"]
    assert set(results[1]["error"]) == {"code", "message"}
    # The stored ones are readable and equal to what a single add returns.
    for res in (results[0], results[3]):
        got = api.call("GET", f"/v1/memories/{res['id']}", key).json()
        assert got["text"] == res["text"] and got["owner"] == "planner"
    assert total(api, key) == 2
    hits = api.search(key, "green tea")
    assert hits and hits[0]["id"] == results[0]["id"]
    single = api.add(key, "Alice likes oolong tea", topics=["drinks"], source="chat")
    assert set(single) == set(results[0])
    # One audit event per stored note, ids only, as for single adds.
    events = added_events(api, "acme")
    tag = api.services.keyring.index_key("acme").tag
    assert [e["subject"]["note_id"] for e in events] == [
        tag("note:" + results[0]["id"]),
        tag("note:" + results[3]["id"]),
        tag("note:" + single["id"]),
    ]
    assert {k: v for k, v in events[0].items() if k in ("actor", "details")} == {
        "actor": events[2]["actor"],
        "details": {"visibility": "private", "redacted": 0, "flags": 0},
    }
    assert events[0]["subject"]["user_id"] == events[2]["subject"]["user_id"]
    assert api.services.audit.verify("acme")
    for e in events:
        assert "Alice" not in str(e)


def test_more_than_256_items_or_not_a_list_is_a_422_and_stores_nothing(api: Api) -> None:
    key = api.agent_key("acme", "alice", "planner")
    too_many = [{"text": f"fact number {i} about the garden"} for i in range(257)]
    for body in ({"items": too_many}, {"items": {"text": "x"}}, {"items": []}, {"items": "x"}, {}):
        r = api.call("POST", PATH, key, json=body)
        assert r.status_code == 422, r.text
        assert r.json()["error"]["code"] == "invalid_request"
    assert total(api, key) == 0
    assert added_events(api, "acme") == []
    r = batch(api, key, too_many[:256])
    assert r.status_code == 200 and len(r.json()["results"]) == 256
    assert total(api, key) == 256


def test_a_retry_with_the_same_idempotency_key_replays_every_item(api: Api) -> None:
    key = api.agent_key("acme", "alice", "planner")
    items = [
        {"text": "Alice likes green tea"},
        {"text": f"secret {AWS_ID}"},
        {"text": "Alice lives in Lisbon"},
    ]
    headers = {"Idempotency-Key": "import-2026-12-04-chunk-0"}
    first = batch(api, key, items, headers=dict(headers))
    assert first.status_code == 200
    again = batch(api, key, items, headers=dict(headers))
    assert again.status_code == 200
    assert again.headers["Idempotent-Replayed"] == "true"
    assert again.json() == first.json()
    assert total(api, key) == 2
    other = batch(api, key, items[:1], headers=dict(headers))
    assert other.status_code == 409
    assert other.json()["error"]["code"] == "idempotency_key_reused"
    # Had the first answer never been stored (a crash after the commit), the retry runs
    # again and every item answers with the note already stored: nothing twice.
    with api.services.db.session("acme") as sess:
        sess.execute(delete(IdempotencyRow).where(IdempotencyRow.tenant_id == "acme"))
    rerun = batch(api, key, items, headers=dict(headers))
    assert "Idempotent-Replayed" not in rerun.headers
    ids = [res.get("id") for res in rerun.json()["results"]]
    assert ids == [res.get("id") for res in first.json()["results"]]
    assert total(api, key) == 2


def test_a_batch_writes_only_in_its_own_scope(api: Api) -> None:
    alice = api.agent_key("acme", "alice", "planner")
    bob = api.agent_key("acme", "bob", "planner")
    intruder = api.agent_key("evil", "mallory", "planner")
    hostile = [
        {"text": "Alice likes green tea", "user_id": "bob"},
        {"text": "Alice likes green tea", "agent_id": "shared"},
        {"text": "Alice likes green tea", "readers": ["*"]},
        {"text": "Alice likes green tea", "readers": ["coach", "coach"]},
        {"text": "Mallory writes here"},
        {"text": "Mallory shares here", "visibility": "shared"},
    ]
    r = batch(api, intruder, hostile)
    assert r.status_code == 200
    results = r.json()["results"]
    assert [res.get("error", {}).get("code") for res in results[:3]] == ["invalid_request"] * 3
    for res in results[4:]:
        assert res["owner"] == "planner"
    # Nothing reached acme's users.
    assert total(api, alice) == 0 and total(api, bob) == 0
    assert api.search(alice, "Mallory") == [] and api.search(bob, "Mallory") == []
    r = batch(api, alice, [{"text": "Alice keeps a diary"}])
    note = r.json()["results"][0]
    assert api.call("GET", f"/v1/memories/{note['id']}", bob).status_code == 404
    assert api.call("GET", f"/v1/memories/{note['id']}", intruder).status_code == 404
    assert api.call("POST", PATH, None, json={"items": [{"text": "x y z"}]}).status_code == 401
    admin = api.tenant("acme")
    assert batch(api, admin, [{"text": "Admin note here"}]).status_code == 403


def test_the_route_is_in_the_openapi_document(api: Api) -> None:
    spec = api.client.get("/openapi.json").json()
    op = spec["paths"][PATH]["post"]
    body = op["requestBody"]["content"]["application/json"]["schema"]["$ref"].split("/")[-1]
    items = spec["components"]["schemas"][body]["properties"]["items"]
    assert items["items"] == {"$ref": "#/components/schemas/AddMemory"}
    assert items["maxItems"] == 256 and items["minItems"] == 1
    assert "200" in op["responses"]
    assert "BatchItemError" in spec["components"]["schemas"]


def test_a_batch_keeps_a_mem_on_and_answers_duplicates_with_one_note(
    make_services: ServicesFactory,
) -> None:
    api = Api(make_services("sqlite", amem=True))
    key = api.agent_key("acme", "alice", "planner")
    existing = api.add(key, "Alice walks her dog Biscuit every morning")
    items = [
        {"text": "Alice walks her dog Biscuit every morning"},  # a live twin: that note
        {"text": "Alice feeds Biscuit salmon on Sundays"},
        {"text": "Alice feeds Biscuit salmon on Sundays"},  # twice in one batch: one note
    ]
    results = batch(api, key, items).json()["results"]
    assert results[0]["id"] == existing["id"]
    assert results[1]["id"] == results[2]["id"] != existing["id"]
    assert results[1]["enrichment"] in ("pending", "done")  # A-MEM ran or is queued
    assert results[1]["keywords"]  # construction ran while the note was prepared
    assert total(api, key) == 2
