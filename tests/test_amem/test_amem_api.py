"""A-MEM over REST: the note's A-MEM fields, links, the dialogue gate, consolidation, the quality
scan and review, the tenant's `llm` policy, and no plaintext of A-MEM's fields at rest."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import yaml
from sqlalchemy import update

from memvault.amem.wiring import installed
from memvault.scope import Scope
from memvault.store.models import NoteRow
from tests.apiclient import Api
from tests.conftest import ServicesFactory


@pytest.fixture
def api(make_services: ServicesFactory, backend: str) -> Api:
    services = make_services(backend, amem=True)
    return Api(services)


def test_add_shows_construction_and_evolution(api: Api) -> None:
    key = api.agent_key("t1", "u1", "a1")
    first = api.add(key, "The user wants to buy a Model 3 next spring")
    assert first["enrichment"] == "done" and first["category"] and first["keywords"]
    assert first["context"] and isinstance(first["tags"], list)
    assert first["evolution"]["action"] == "NEW"
    second = api.add(key, "The user decided on the standard RWD Model 3")
    assert second["evolution"]["action"] == "EVOLVE"
    assert second["evolution"]["target_id"] == first["id"]
    # both keep their own text; the older one is superseded by the newer one
    newer = api.call("GET", f"/v1/memories/{second['id']}", key).json()
    older = api.call("GET", f"/v1/memories/{first['id']}", key).json()
    assert newer["text"] == "The user decided on the standard RWD Model 3"
    assert older["text"] == "The user wants to buy a Model 3 next spring"
    assert older["relations"] == {"superseded_by": [second["id"]]}
    assert older["valid_to"] is not None and newer["valid_to"] is None
    assert newer["relations"] == {"supersedes": [first["id"]]}
    found = api.call("POST", "/v1/memories/search", key, json={"query": "Model 3"}).json()
    assert [r["id"] for r in found["results"]] == [second["id"]]


def test_links_endpoint_lists_readable_links_only(api: Api) -> None:
    key = api.agent_key("t1", "u1", "a1")
    other = api.agent_key("t1", "u1", "a2")
    a = api.add(key, "Melanie adopted a rescue greyhound called Pixel last spring")
    b = api.add(key, "Pixel the greyhound loves long walks on the beach with Melanie")
    links = api.call("GET", f"/v1/memories/{b['id']}/links", key).json()["links"]
    assert [link["id"] for link in links] == [a["id"]] and links[0]["kind"] == "link"
    assert 0.0 <= links[0]["strength"] <= 1.0
    assert api.call("GET", f"/v1/memories/{b['id']}/links", other).status_code == 404


def test_dialogue_gate_over_rest(api: Api) -> None:
    key = api.agent_key("t1", "u1", "a1")
    messages = [
        {"role": "user", "content": "I live in Riverstone and I work as a carpenter."},
        {"role": "tool", "content": "api_key=sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCD"},
        {"role": "assistant", "content": "Noted, you are a carpenter in Riverstone."},
    ]
    dry = api.call("POST", "/v1/dialogues", key, json={"messages": messages, "dry_run": True})
    assert dry.status_code == 200, dry.text
    assert dry.json()["dry_run"] is True and dry.json()["decisions"]
    assert api.call("GET", "/v1/memories", key).json()["total"] == 0
    real = api.call("POST", "/v1/dialogues", key, json={"messages": messages}).json()
    actions = [d["action"] for d in real["decisions"]]
    assert "NEW" in actions
    listed = api.call("GET", "/v1/memories", key).json()
    assert listed["total"] >= 1
    assert all("sk-proj" not in n["text"] for n in listed["items"])
    bad = api.call(
        "POST", "/v1/dialogues", key, json={"messages": [{"role": "wizard", "content": "hi"}]}
    )
    assert bad.status_code == 422


def test_consolidate_merges_spares_knowledge_and_is_idempotent(api: Api) -> None:
    key = api.agent_key("t1", "u1", "a1")
    services = api.services
    amem = installed(services)
    assert amem is not None
    services.vault.parts.hooks = None  # store the duplicates without same-day merge
    v = services.vault.scoped(Scope("t1", "u1", "a1"))
    one = v.add("The user's sister works in finance in Northvale")
    two = v.add("The user's sister works in finance, in Northvale")
    k1 = v.add("Python lists are mutable sequences", note_type="knowledge", topics=["python"])
    k2 = v.add("Python lists are mutable sequences.", note_type="knowledge", topics=["python"])
    other = v.add("The quarterly invoice batch is due on the 14th")
    v.link(two.id, other.id)
    shared = [
        v.add("The team offsite is in Lisbon in May", visibility="shared"),
        v.add("The team offsite is in Lisbon in May.", visibility="shared"),
    ]
    neighbour = services.vault.scoped(Scope("t1", "u2", "a1"))  # another user, same texts
    theirs = [neighbour.add(one.text), neighbour.add(two.text)]
    services.vault.parts.hooks = amem
    report = api.call("POST", "/v1/consolidate", key).json()
    assert report == {"groups": 1, "related": 1}
    kept = api.call("GET", f"/v1/memories/{two.id}", key).json()  # kept whole, related
    assert kept["text"] == two.text and kept["relations"] == {"duplicate_of": [one.id]}
    assert api.call("GET", f"/v1/memories/{one.id}", key).json()["text"] == one.text
    assert [i for i, _, _ in v.links(two.id)] == sorted([one.id, other.id])
    assert v.get(k1.id) and v.get(k2.id)  # knowledge is never merged automatically
    assert all(v.get(n.id) for n in shared)  # nor are shared notes
    assert [neighbour.get(n.id).text for n in theirs] == [one.text, two.text]
    assert api.call("POST", "/v1/consolidate", key).json() == {"groups": 0, "related": 0}


def test_quality_scan_and_review(api: Api) -> None:
    key = api.agent_key("t1", "u1", "a1")
    short = api.add(key, "Call mom!!")  # exactly 10 characters: not too short
    stale = api.add(key, "Deploy is pending until the review is confirmed, check back later")
    with api.services.db.session("t1") as sess:
        sess.execute(
            update(NoteRow)
            .where(NoteRow.id == stale["id"])
            .values(ephemeral=1, created_at=time.time() - 8 * 86_400)
        )
    scan = api.call("POST", "/v1/quality/scan", key).json()["flagged"]
    assert scan == [{"id": stale["id"], "reasons": ["expired_ephemeral"]}]
    assert "low_quality" in api.call("GET", f"/v1/memories/{stale['id']}", key).json()["flags"]
    review = api.call("GET", "/v1/quality/review", key)
    assert review.status_code == 200 and review.headers["content-type"].startswith("text/markdown")
    front = review.text.split("---")[1]
    assert yaml.safe_load(front)["count"] == 1
    assert stale["id"] in review.text and short["id"] not in review.text


def test_tenant_llm_policy_round_trips(api: Api) -> None:
    admin = api.tenant("t1")
    policy = {"llm": "off", "timezone": "Europe/Paris"}
    assert api.call("PUT", "/v1/admin/policy", admin, json=policy).status_code == 200
    got = api.call("GET", "/v1/admin/policy", admin).json()
    assert got["llm"] == "off" and got["timezone"] == "Europe/Paris"
    bad = api.call("PUT", "/v1/admin/policy", admin, json={"timezone": "Mars/Olympus"})
    assert bad.status_code == 422


def test_amem_fields_are_never_in_clear_at_rest(
    make_services: ServicesFactory, tmp_path: Path
) -> None:
    root = tmp_path / "vault"
    services = make_services("sqlite", data_dir=root, amem=True)
    from memvault.amem.wiring import install

    install(services, worker=False, scheduler=False)
    v = services.vault.scoped(Scope("t1", "u1", "a1"))
    v.add("Zorblax the engineer repaired the quantumflux capacitor in Vexmoor")
    v.add("Zorblax later moved the quantumflux lab from Vexmoor to Quelport")
    note = v.list_notes()[0][0]
    assert any("zorblax" in k.lower() or "quantumflux" in k.lower() for k in note.keywords)
    services.close()
    for path in (p for p in root.rglob("*") if p.is_file()):
        data = path.read_bytes().lower()
        for needle in (b"zorblax", b"quantumflux", b"vexmoor", b"quelport"):
            assert needle not in data, f"{needle!r} in {path.name}"


def test_dsar_export_carries_the_evolution_history(api: Api) -> None:
    import json

    key = api.agent_key("t1", "u1", "a1")
    first = api.add(key, "The user wants to buy a Model 3 next spring")
    api.add(key, "The user decided on the standard RWD Model 3")
    r = api.call("GET", "/v1/admin/export?user_id=u1", api.tenant("t1"))
    assert r.status_code == 200, r.text
    lines = [json.loads(line) for line in r.text.splitlines() if line.strip()]
    older = next(x for x in lines if x.get("type") == "note" and x.get("id") == first["id"])
    assert older["text"] == "The user wants to buy a Model 3 next spring"
    assert older["valid_from"] and older["keywords"] and older["category"]
    relations = [x for x in lines if x.get("type") == "link" and x["kind"] == "supersedes"]
    assert [r["target_id"] for r in relations] == [first["id"]]
