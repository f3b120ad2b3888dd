"""Issue 31 over REST: A-MEM relates notes and never moves text between them.

- the five routes by which a private sentence used to reach a wider note (same-day merge,
  EXPAND, EVOLVE, a dialogue UPDATE, a background job into a shared note): the other agent
  reads nothing new, and the author agent's erase leaves none of its sentences anywhere;
- look-alike notes, then a PATCH of one: every acknowledged id keeps its writer's last text;
- a changed fact: the current value first, the old one marked superseded, `as_of` the old one;
- TTL: an expired note's text is found nowhere, and the note it superseded is current again;
- an LLM that answers DELETE of candidate 1 for every fact changes no unrelated note.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import anthropic
import pytest
from sqlalchemy import update

from memvault.amem.wiring import install, installed
from memvault.scope import Scope
from memvault.store.models import NoteRow
from memvault.testing.fake_messages import FakeMessagesServer
from tests.apiclient import Api
from tests.conftest import ServicesFactory
from tests.test_amem._replies import CONSTRUCT, construct_reply, prompt_of

PRIVATE = ("lawyer", "divorce")
"""Words only the `planner` agent's private notes hold."""


@pytest.fixture
def api(make_services: ServicesFactory, backend: str) -> Api:
    return Api(make_services(backend, amem=True))


def _readable_text(api: Api, key: str) -> str:
    """Everything a key can read: every listed note, every search hit, their relations."""
    listed = api.call("GET", "/v1/memories?limit=100", key).json()["items"]
    found = api.search(key, "Alice trip Kyoto lawyer divorce", limit=20)
    history = api.search(key, "Alice trip Kyoto", limit=20, include_history=True)
    return json.dumps([listed, found, history])


def _erase_planner(api: Api) -> None:
    r = api.call(
        "POST", "/v1/admin/erase", api.tenant("t1"), json={"user_id": "u1", "agent_id": "planner"}
    )
    assert r.status_code in (200, 202), r.text
    if r.status_code == 202:  # finished in the background: wait for the job
        job = r.json()["id"]  # the 202 answer is the job view
        for _ in range(200):
            state = api.call("GET", f"/v1/admin/erasures/{job}", api.tenant("t1")).json()
            if state.get("state") == "done":
                break
            time.sleep(0.05)


def _assert_no_leak(api: Api, writer: str, wide_id: str, wide_text: str) -> None:
    seen = _readable_text(api, writer)
    assert not any(word in seen for word in PRIVATE)
    wide = api.call("GET", f"/v1/memories/{wide_id}", writer).json()
    assert wide["text"] == wide_text and wide["valid_to"] is None
    _erase_planner(api)
    seen = _readable_text(api, writer)
    assert not any(word in seen for word in PRIVATE)
    with api.services.db.session("t1") as sess:
        rows = sess.query(NoteRow).filter(NoteRow.agent_id != "planner").all()
        views = {r.id: api.services.vault.decrypt_row(r).text for r in rows}
    assert not any(word in text for text in views.values() for word in PRIVATE)


@pytest.mark.parametrize(
    ("wide", "private"),
    [
        (  # a same-day restatement with one more sentence
            "Alice is planning a trip to Kyoto in May.",
            "Alice is planning a trip to Kyoto in May. She is travelling with her lawyer about "
            "the divorce.",
        ),
        (  # EXPAND
            "Alice is planning a trip to Kyoto in May",
            "Alice's trip to Kyoto in May is with her lawyer, about the divorce",
        ),
        (  # EVOLVE
            "Alice wants to plan a trip to Kyoto in May",
            "Alice decided on the Kyoto trip in May with her lawyer about the divorce",
        ),
    ],
    ids=["same-day", "expand", "evolve"],
)
@pytest.mark.parametrize("visibility", ["shared", "readers"])
def test_a_private_note_never_reaches_a_wider_one(
    api: Api, wide: str, private: str, visibility: str
) -> None:
    writer = api.agent_key("t1", "u1", "writer")
    planner = api.agent_key("t1", "u1", "planner")
    if visibility == "shared":
        note = api.add(writer, wide, visibility="shared")
    else:
        note = api.add(planner, wide, readers=["writer"])
    mine = api.add(planner, private)
    assert api.call("GET", f"/v1/memories/{mine['id']}", planner).json()["text"] == private
    _assert_no_leak(api, writer, note["id"], wide)


def test_a_dialogue_update_never_reaches_a_wider_note(api: Api) -> None:
    writer = api.agent_key("t1", "u1", "writer")
    planner = api.agent_key("t1", "u1", "planner")
    wide = "The user lives in Riverstone."
    note = api.add(planner, wide, readers=["writer"])
    fact = "The user moved to Lisbon with her lawyer about the divorce."
    r = api.call(
        "POST", "/v1/dialogues", planner, json={"messages": [{"role": "user", "content": fact}]}
    )
    assert r.status_code == 200, r.text
    decisions = r.json()["decisions"]
    assert decisions and all(d["action"] in ("NEW", "UPDATE") for d in decisions)
    _assert_no_leak(api, writer, note["id"], wide)


def _llm(server: FakeMessagesServer) -> Any:
    return anthropic.Anthropic(api_key="k", base_url=server.base_url, max_retries=0, timeout=5)


@pytest.fixture
def server() -> Iterator[FakeMessagesServer]:
    with FakeMessagesServer() as running:
        yield running


def _judge(evolve: dict[str, Any], decide: dict[str, Any] | None = None) -> Any:
    def respond(body: Any) -> str:
        prompt = prompt_of(body)
        if CONSTRUCT in prompt:
            return construct_reply(["trip"], ["travel"], "A trip.")
        if "Classify the relation" in prompt:
            return json.dumps(evolve)
        if "List the facts" in prompt:
            return json.dumps({"facts": ["The user likes green tea."]})
        if "A new fact and existing memory notes" in prompt and decide is not None:
            return json.dumps(decide)
        if "genuinely related" in prompt:
            return json.dumps({"links": [{"n": 1, "strength": 0.9}]})
        return json.dumps({"changed": True, "context": "lawyer divorce", "tags": ["divorce"]})

    return respond


def test_a_background_job_never_writes_into_a_shared_note(
    make_services: ServicesFactory, backend: str, server: FakeMessagesServer
) -> None:
    services = make_services(backend, amem=True)
    wide = "Alice is planning a trip to Kyoto in May."
    private = "Alice is planning the Kyoto trip with her lawyer about the divorce."
    server.responder = _judge({"action": "EVOLVE", "merged_text": f"{wide} {private}"})
    amem = install(services, llm_client=_llm(server), worker=False, scheduler=False)
    api = Api(services)
    writer = api.agent_key("t1", "u1", "writer")
    planner = api.agent_key("t1", "u1", "planner")
    note = api.add(writer, wide, visibility="shared")
    assert amem.jobs is not None
    amem.jobs.run_due("t1")
    api.add(planner, private)
    amem.jobs.run_due("t1")  # EVOLVE, a merged text, links, neighbour context: all refused
    assert installed(services) is amem
    _assert_no_leak(api, writer, note["id"], wide)


def test_look_alikes_then_a_patch_keep_every_acknowledged_text(api: Api) -> None:
    key = api.agent_key("t1", "u1", "a1")
    texts = [
        "The user's sister works in finance in Northvale",
        "The user's sister works in finance, in Northvale",
        "The user's sister works in finance in Northvale on weekdays",
    ]
    added = [api.add(key, t) for t in texts]
    patched = "The user's brother flies cargo planes out of Eastholm"
    r = api.call("PATCH", f"/v1/memories/{added[0]['id']}", key, json={"text": patched})
    assert r.status_code == 200, r.text
    expected = [patched, *texts[1:]]
    for note, text in zip(added, expected, strict=True):
        got = api.call("GET", f"/v1/memories/{note['id']}", key)
        assert got.status_code == 200 and got.json()["text"] == text
    # the PATCH ended what A-MEM judged about the old text: the look-alikes are current again
    found = [r["id"] for r in api.search(key, "sister works in finance Northvale", limit=10)]
    assert added[1]["id"] in found or any(
        added[1]["id"] in r.get("relations", {}).get("duplicates", [])
        for r in api.search(key, "sister works in finance Northvale", limit=10)
    )


def test_a_changed_fact_shows_the_current_value_and_the_old_one_as_of(api: Api) -> None:
    key = api.agent_key("t1", "u1", "a1")
    green = api.add(
        key, "Bob's favourite colour is green", session_id="s1", occurred_at="2026-01-05T10:00:00Z"
    )
    blue = api.add(
        key, "Bob's favourite colour is blue", session_id="s2", occurred_at="2026-04-05T10:00:00Z"
    )
    top = api.search(key, "What is Bob's favourite colour?")
    assert top[0]["id"] == blue["id"] and top[0]["relations"] == {"supersedes": [green["id"]]}
    assert green["id"] not in [r["id"] for r in top]
    then = api.search(key, "What is Bob's favourite colour?", as_of="2026-02-01T00:00:00Z")
    assert then[0]["id"] == green["id"] and then[0]["valid_to"] == "2026-04-05T10:00:00Z"
    bad = api.call(
        "POST", "/v1/memories/search", key, json={"query": "colour", "as_of": "yesterday"}
    )
    assert bad.status_code == 422 and "as_of" in bad.text and "yesterday" not in bad.text


def test_an_expired_note_is_found_nowhere_and_its_predecessor_is_current_again(api: Api) -> None:
    key = api.agent_key("t1", "u1", "a1")
    green = api.add(key, "Bob's favourite colour is green")
    blue = api.add(key, "Bob's favourite colour is blue", ttl_days=1)
    assert api.search(key, "Bob's favourite colour")[0]["id"] == blue["id"]
    with api.services.db.session("t1") as sess:
        sess.execute(
            update(NoteRow).where(NoteRow.id == blue["id"]).values(expires_at=time.time() - 1)
        )
    seen = json.dumps(
        [
            api.search(key, "Bob's favourite colour blue", limit=10, include_history=True),
            api.call("GET", "/v1/memories?limit=100", key).json(),
        ]
    )
    assert "blue" not in seen and blue["id"] not in seen
    assert api.call("GET", f"/v1/memories/{blue['id']}", key).status_code == 404
    current = api.search(key, "Bob's favourite colour")
    assert current[0]["id"] == green["id"] and current[0]["valid_to"] is None


def test_an_llm_deleting_candidate_one_for_every_fact_changes_no_unrelated_note(
    make_services: ServicesFactory, backend: str, server: FakeMessagesServer
) -> None:
    services = make_services(backend, amem=True)
    server.responder = _judge({"action": "NEW"}, {"action": "DELETE", "n": 1, "text": None})
    install(services, llm_client=_llm(server), worker=False, scheduler=False)
    api = Api(services)
    key = api.agent_key("t1", "u1", "a1")
    passport = api.add(key, "The passport is kept in the top drawer of the oak desk")
    messages = [{"role": "user", "content": "I like green tea."}]
    r = api.call("POST", "/v1/dialogues", key, json={"messages": messages})
    assert r.status_code == 200, r.text
    [decision] = r.json()["decisions"]
    assert decision["action"] == "NEW" and decision["reason"] in ("uncorroborated", "not_related")
    kept = api.call("GET", f"/v1/memories/{passport['id']}", key).json()
    assert kept["text"] == passport["text"] and kept["valid_to"] is None
    events = [e for e in services.audit.events("t1") if e["action"] == "dialogue.processed"]
    assert events[-1]["details"]["downgraded"] == 1
    view = services.vault.scoped(Scope("t1", "u1", "a1"))
    assert [n.text for n in view.list_notes()[0] if n.current] == [
        "The user likes green tea.",
        passport["text"],
    ]
