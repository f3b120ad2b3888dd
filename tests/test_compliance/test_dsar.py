"""The DSAR export through the real API: exactly one user's notes (every agent's and the shared
ones) and links, decrypted, streamed as JSON lines; nobody else's, however alike their notes."""

from __future__ import annotations

import json
from typing import Any

import pytest

from memvault.compliance.dsar import DsarExport
from memvault.errors import ScopeViolation
from memvault.store.models import NoteRow
from memvault.vault.guard import ScopeErasing
from tests._helpers import FakeClock
from tests.apiclient import Api

DAY = 86_400.0

# Each user gets these with their own word in place of {w}: near-identical notes across users.
PRIVATE = [
    "The user practises the {w} every evening after dinner",
    "The user wants to buy a new case for the {w} before the concert",
    "The user takes {w} lessons with a teacher on the other side of town",
]
SHARED = ["The whole family enjoys listening to {w} music on Sunday mornings"]
WORDS = {("acme", "alice"): "cello", ("acme", "bob"): "violin", ("globex", "alice"): "harp"}
AGENTS = ("planner", "coach")


def lines(response: Any) -> list[dict[str, Any]]:
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("application/x-ndjson")
    return [json.loads(line) for line in response.text.splitlines()]


def export(api: Api, tenant: str, user: str) -> list[dict[str, Any]]:
    return lines(api.call("GET", "/v1/admin/export", api.tenant(tenant), params={"user_id": user}))


def seed(api: Api, tenant: str, user: str) -> dict[str, Any]:
    """Notes of two agents and shared notes, links among them; returns what the export must hold."""
    word = WORDS[(tenant, user)]
    ids: dict[str, str] = {}
    links: set[tuple[str, str]] = set()
    keys = {agent: api.agent_key(tenant, user, agent) for agent in AGENTS}
    for agent, key in keys.items():
        for template in PRIVATE:
            text = f"{template.format(w=word)} ({agent})"
            ids[api.add(key, text)["id"]] = agent
    for template in SHARED:
        ids[api.add(keys["planner"], template.format(w=word), visibility="shared")["id"]] = "shared"
    by_agent = {agent: [i for i, a in ids.items() if a == agent] for agent in (*AGENTS, "shared")}
    for source, target in [
        (by_agent["planner"][0], by_agent["planner"][1]),
        (by_agent["coach"][0], by_agent["shared"][0]),
        (by_agent["planner"][2], by_agent["shared"][0]),
    ]:
        agent = ids[source]
        r = api.call(
            "POST", f"/v1/memories/{source}/links", keys[agent], json={"target_id": target}
        )
        assert r.status_code == 204, r.text
        links.add((source, target))
    return {"word": word, "ids": ids, "links": links, "keys": keys}


def test_export_holds_every_note_and_link_of_the_user_and_nothing_of_others(api: Api) -> None:
    alice = seed(api, "acme", "alice")
    bob = seed(api, "acme", "bob")
    seed(api, "globex", "alice")  # same user id in another tenant, same texts but one word

    out = export(api, "acme", "alice")
    head, notes, links, end = (
        out[0],
        [x for x in out if x["type"] == "note"],
        [x for x in out if x["type"] == "link"],
        out[-1],
    )
    assert head["type"] == "subject" and head["tenant_id"] == "acme"
    assert head["user_id"] == "alice"
    assert (head["notes"], head["links"]) == (len(alice["ids"]), len(alice["links"]))
    assert end == {"type": "end", "notes": len(notes), "links": len(links)}
    assert len(out) == 2 + len(notes) + len(links)

    assert {n["id"]: n["agent_id"] for n in notes} == alice["ids"]
    assert {(link["source_id"], link["target_id"]) for link in links} == alice["links"]
    texts = [n["text"] for n in notes]
    assert all("cello" in t for t in texts)
    assert not any(word in t for t in texts for word in ("violin", "harp"))
    assert not set(bob["ids"]) & {n["id"] for n in notes}
    for note in notes:  # the note as the API returns it, plus agent_id, active, expires_at
        key = alice["keys"]["coach" if note["agent_id"] == "coach" else "planner"]
        served = api.call("GET", f"/v1/memories/{note['id']}", key).json()
        assert {k: note[k] for k in served} == served
        assert note["active"] is True and note["expires_at"] is None
    shared = [n for n in notes if n["agent_id"] == "shared"]
    assert len(shared) == len(SHARED) and shared[0]["visibility"] == "shared"


def test_export_skips_expired_notes_and_keeps_soft_deleted_ones(api: Api) -> None:
    clock = FakeClock()
    api.services.vault.parts.clock = clock
    key = api.agent_key("acme", "alice", "planner")
    kept = api.add(key, "The user practises the cello every evening after dinner")
    deleted = api.add(key, "The user wants to buy a new case for the cello soon")
    expiring = api.add(key, "The user has a cello lesson booked for next week", ttl_days=1)
    other = api.add(key, "The user sold the old cello stand to a neighbour")
    for source in (kept, expiring):
        r = api.call(
            "POST", f"/v1/memories/{source['id']}/links", key, json={"target_id": other["id"]}
        )
        assert r.status_code == 204
    assert api.call("DELETE", f"/v1/memories/{deleted['id']}", key).status_code == 204

    before = export(api, "acme", "alice")
    by_id = {x["id"]: x for x in before if x["type"] == "note"}
    assert set(by_id) == {kept["id"], deleted["id"], expiring["id"], other["id"]}
    assert by_id[deleted["id"]]["active"] is False
    assert by_id[expiring["id"]]["expires_at"] is not None
    clock.now += DAY
    after = export(api, "acme", "alice")
    assert {x["id"] for x in after if x["type"] == "note"} == {
        kept["id"],
        deleted["id"],
        other["id"],
    }
    assert [(x["source_id"], x["target_id"]) for x in after if x["type"] == "link"] == [
        (kept["id"], other["id"])
    ]
    assert (after[0]["notes"], after[0]["links"]) == (3, 1)


def test_export_is_for_tenant_admins_only(api: Api) -> None:
    seed(api, "acme", "alice")
    auditor = api.agent_key("acme", "audit", "a", role="auditor")
    agent = api.agent_key("acme", "alice", "planner")
    for key in (auditor, agent):
        r = api.call("GET", "/v1/admin/export", key, params={"user_id": "alice"})
        assert r.status_code == 403 and r.json()["error"]["code"] == "forbidden"
        assert "cello" not in r.text
    assert api.call("GET", "/v1/admin/export", None, params={"user_id": "alice"}).status_code == 401


@pytest.mark.parametrize(
    "params",
    [{}, {"user_id": ""}, {"user_id": "bad id"}, {"user_id": "alice\n"}, {"user_id": "x" * 129}],
)
def test_export_refuses_an_invalid_user_id(api: Api, params: dict[str, str]) -> None:
    r = api.call("GET", "/v1/admin/export", api.tenant("acme"), params=params)
    assert r.status_code == 422, r.text
    body = r.json()
    assert set(body) == {"error"} and body["error"]["code"] == "invalid_request"


def test_export_refuses_unknown_query_parameters(api: Api) -> None:
    params = {"user_id": "alice", "tenant_id": "globex"}
    r = api.call("GET", "/v1/admin/export", api.tenant("acme"), params=params)
    assert r.status_code == 422 and r.json()["error"]["code"] == "invalid_request"


def test_export_is_audited_with_counts_and_no_text(api: Api) -> None:
    alice = seed(api, "acme", "alice")
    export(api, "acme", "alice")
    assert export(api, "acme", "nobody")[0] | {"exported_at": ""} == {
        "type": "subject",
        "tenant_id": "acme",
        "user_id": "nobody",
        "exported_at": "",
        "notes": 0,
        "links": 0,
    }
    events = [e for e in api.services.audit.events("acme") if e["action"] == "dsar.export"]
    assert [e["details"] for e in events] == [
        {"notes": len(alice["ids"]), "links": len(alice["links"])},
        {"notes": 0, "links": 0},
    ]
    assert events[0]["subject"] != events[1]["subject"]
    assert "cello" not in json.dumps(events)


def test_export_pages_in_batches_and_rechecks_every_row(api: Api) -> None:
    alice = seed(api, "acme", "alice")
    bob = seed(api, "acme", "bob")
    small = DsarExport(api.services.vault, "acme", "alice", batch=2)
    note_batches = list(small.note_batches())
    link_batches = list(small.link_batches())
    assert [len(b) for b in note_batches] == [2, 2, 2, 1]
    assert {e.note.id for b in note_batches for e in b} == set(alice["ids"])
    assert {(x.source_id, x.target_id) for b in link_batches for x in b} == alice["links"]
    assert small.summary().notes == len(alice["ids"])
    later = api.add(alice["keys"]["planner"], "The user tuned the cello strings this morning")
    assert later["id"] not in {e.note.id for b in small.note_batches() for e in b}
    assert small.summary().notes == len(alice["ids"])  # as of the export's instant
    with api.services.db.session("acme") as sess:
        foreign = sess.get(NoteRow, ("acme", next(iter(bob["ids"]))))
        assert foreign is not None
    with pytest.raises(ScopeViolation):
        small._exported(foreign)


def test_export_stops_while_the_user_is_being_erased(api: Api) -> None:
    seed(api, "acme", "alice")
    guard = api.services.vault.parts.guard
    with guard.blocking("acme", "alice"):
        r = api.call("GET", "/v1/admin/export", api.tenant("acme"), params={"user_id": "alice"})
    assert r.status_code == 409 and r.json()["error"]["code"] == "scope_erasing"


def test_an_erase_that_starts_mid_export_cuts_it_off(api: Api) -> None:
    seed(api, "acme", "alice")
    guard = api.services.vault.parts.guard
    batches = DsarExport(api.services.vault, "acme", "alice", batch=2).note_batches()
    assert len(next(batches)) == 2
    with guard.blocking("acme", "alice"), pytest.raises(ScopeErasing):
        next(batches)


def test_openapi_documents_the_export(api: Api) -> None:
    op = api.client.get("/openapi.json").json()["paths"]["/v1/admin/export"]["get"]
    assert list(op["responses"]["200"]["content"]) == ["application/x-ndjson"]
    assert {"401", "403", "409", "422"} <= set(op["responses"])
    (param,) = op["parameters"]
    assert param["name"] == "user_id" and param["required"] is True
