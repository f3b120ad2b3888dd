"""Issue 33 §1 over HTTP: each disguised credential of the issue's table is refused in every
client-supplied field that `POST` and `PATCH /v1/memories` store (text, topics, source, readers,
session id, occurred_at), through the dialogue gate (offline extraction, and the LLM on the fake
Messages API), and in A-MEM's LLM-written attributes (keywords, tags, context). After each test
the stored data is searched for the values: the list, each note, a search, and every file of the
data directory (the note text is encrypted, so a hit there is a plaintext column or file).

Values are built at run time (`tests.test_screening.disguises`) and never printed: assertion
messages name rows and fields only.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import pytest

from memvault.amem.wiring import install
from memvault.testing.fake_messages import FakeMessagesServer
from memvault.vault.fields import MAX_SOURCE_CHARS, MAX_TOPIC_CHARS
from tests.apiclient import Api
from tests.conftest import ServicesFactory
from tests.disk_scan import files_holding
from tests.test_screening.disguises import (
    dialogue_turn,
    disguise_row_for_topic,
    id_grammar_rows,
    issue_rows,
    row_secrets,
)

ROWS = [
    *issue_rows(),
    ("topic_pw_short_form", disguise_row_for_topic()),
    ("dialogue_turn", dialogue_turn()),
]
ID_ROWS = id_grammar_rows()
ALL_ROWS = ROWS + ID_ROWS
BENIGN = "The team meets on Tuesdays to plan the community garden"
TEXT_FIELDS = {"text": 10**9, "topics": MAX_TOPIC_CHARS, "source": MAX_SOURCE_CHARS}
ID_FIELDS = ("readers", "session_id")


def _needles() -> list[str]:
    """Every secret value, and every row as written."""
    return [*row_secrets(), *(text for _, text in ALL_ROWS)]


def _body(field: str, value: str, *, patch: bool = False) -> dict[str, Any]:
    body: dict[str, Any] = {} if patch else {"text": BENIGN}
    body[field] = [value] if field in ("topics", "readers") else value
    return body


def _expected(field: str, name: str, value: str, code: str) -> bool:
    """Refused by the screen; or by the schema where the value cannot fit the field at all."""
    if code == "credential_refused":
        return True
    if code != "invalid_request":
        return False
    if field in TEXT_FIELDS:
        return len(value) > TEXT_FIELDS[field]
    if field == "occurred_at":
        return True  # not a time: the schema refuses it, nothing is stored
    return name not in dict(ID_ROWS)  # the id grammar refuses it (the id rows fit it)


def _leaks(api: Api, key: str, data_dir: Path, log_text: str, bodies: list[str]) -> list[str]:
    """Where a needle was found: 'list', 'note', 'search', 'response', 'log', or a file name."""
    needles = _needles()
    found: list[str] = []
    listing = api.call("GET", "/v1/memories", key).json()
    seen = {"list": json.dumps(listing, ensure_ascii=False)}
    for item in listing["items"]:
        note = api.call("GET", f"/v1/memories/{item['id']}", key).json()
        seen["note"] = seen.get("note", "") + json.dumps(note, ensure_ascii=False)
    for query in ("password token key", "wifi router login", "passphrase horse"):
        hits = api.search(key, query, limit=20)
        seen["search"] = seen.get("search", "") + json.dumps(hits, ensure_ascii=False)
    seen["response"] = "\n".join(bodies)
    seen["log"] = log_text
    for where, text in seen.items():
        found.extend(where for n in needles if n in text)
    api.services.close()
    encoded = [n.encode() for n in needles]
    found.extend(path.name for path, _ in files_holding(data_dir, encoded))
    return found


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "vault"


@pytest.fixture
def api(make_services: ServicesFactory, data_dir: Path) -> Api:
    return Api(make_services("sqlite", data_dir=data_dir))


@pytest.mark.parametrize("field", [*TEXT_FIELDS, *ID_FIELDS, "occurred_at"])
def test_post_refuses_every_disguise_in_every_field(
    api: Api, data_dir: Path, field: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    key = api.agent_key("t1", "u1", "a1")
    wrong: list[str] = []
    bodies: list[str] = []
    for name, value in ALL_ROWS:
        r = api.call("POST", "/v1/memories", key, json=_body(field, value))
        bodies.append(r.text)
        code = r.json().get("error", {}).get("code", "") if r.status_code >= 400 else ""
        if r.status_code != 422 or not _expected(field, name, value, code):
            wrong.append(f"{name}: {r.status_code} {code}")
    assert not wrong, f"{field}: {wrong}"
    assert api.call("GET", "/v1/memories", key).json()["total"] == 0
    assert _leaks(api, key, data_dir, caplog.text, bodies) == []


@pytest.mark.parametrize("field", [*TEXT_FIELDS, "readers"])
def test_patch_refuses_every_disguise_and_keeps_the_note(
    api: Api, data_dir: Path, field: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    key = api.agent_key("t1", "u1", "a1")
    note = api.add(key, BENIGN, topics=["garden"], source="meeting notes")
    wrong: list[str] = []
    bodies: list[str] = []
    for name, value in ALL_ROWS:
        r = api.call(
            "PATCH", f"/v1/memories/{note['id']}", key, json=_body(field, value, patch=True)
        )
        bodies.append(r.text)
        code = r.json().get("error", {}).get("code", "") if r.status_code >= 400 else ""
        if r.status_code != 422 or not _expected(field, name, value, code):
            wrong.append(f"{name}: {r.status_code} {code}")
    assert not wrong, f"PATCH {field}: {wrong}"
    after = api.call("GET", f"/v1/memories/{note['id']}", key).json()
    assert (after["text"], after["topics"], after["source"], after["readers"]) == (
        note["text"],
        note["topics"],
        note["source"],
        note["readers"],
    )
    assert api.call("GET", "/v1/memories", key).json()["total"] == 1
    assert _leaks(api, key, data_dir, caplog.text, bodies) == []


# -- the dialogue gate ---------------------------------------------------------------------------


def _dialogue(api: Api, key: str, turn: str) -> list[dict[str, Any]]:
    r = api.call(
        "POST", "/v1/dialogues", key, json={"messages": [{"role": "user", "content": turn}]}
    )
    assert r.status_code == 200, r.status_code
    return list(r.json()["decisions"])


def _stored_by_gate(decisions: list[dict[str, Any]]) -> list[str]:
    return [d["action"] for d in decisions if d["action"] != "REFUSED" and d["note_id"]]


def test_dialogue_gate_offline_refuses_the_cyrillic_password_turn(
    make_services: ServicesFactory, data_dir: Path
) -> None:
    api = Api(make_services("sqlite", data_dir=data_dir, amem=True))
    key = api.agent_key("t1", "u1", "a1")
    decisions = _dialogue(api, key, dialogue_turn())
    assert [d["action"] for d in decisions] == ["REFUSED"]
    assert decisions[0]["reason"] and decisions[0]["note_id"] is None
    assert api.call("GET", "/v1/memories", key).json()["total"] == 0
    assert _leaks(api, key, data_dir, "", []) == []


def test_dialogue_gate_offline_stores_no_disguised_row(
    make_services: ServicesFactory, data_dir: Path
) -> None:
    """Every row of the table as a user turn: what the gate stores never holds the value."""
    api = Api(make_services("sqlite", data_dir=data_dir, amem=True))
    key = api.agent_key("t1", "u1", "a1")
    stored = []
    for name, value in ROWS:
        if name in OFFLINE_SPLIT_ROWS:
            continue
        decisions = _dialogue(api, key, value)
        if _stored_by_gate(decisions):
            stored.append(name)
    assert stored == []
    assert _leaks(api, key, data_dir, "", []) == []


OFFLINE_SPLIT_ROWS = ("newline_inside_keyword", "secret_in_next_sentence")
"""Rows the offline extractor cuts into sentences before the screen sees them ("my pass" /
"word is PW"; "…on the whiteboard." / "It is PW"): each fact alone holds no keyword, so the
gate screens each turn whole first."""


@pytest.mark.parametrize("row", OFFLINE_SPLIT_ROWS)
def test_dialogue_gate_offline_split_rows(
    make_services: ServicesFactory, data_dir: Path, row: str
) -> None:
    api = Api(make_services("sqlite", data_dir=data_dir, amem=True))
    key = api.agent_key("t1", "u1", "a1")
    assert _stored_by_gate(_dialogue(api, key, dict(ROWS)[row])) == []


def _llm_copies_the_turn(turn: str) -> Any:
    """A model that states the user's turn as the fact, and answers NEW."""

    def respond(body: Any) -> str:
        prompt = body["messages"][0]["content"]
        if '"facts"' in prompt:
            return json.dumps({"facts": [turn]})
        if "Describe this new memory note" in prompt:
            return json.dumps({"keywords": [], "tags": [], "context": None, "topics": []})
        return json.dumps({"action": "NEW", "number": None, "text": None, "links": []})

    return respond


@pytest.fixture
def fake_llm() -> Iterator[FakeMessagesServer]:
    with FakeMessagesServer() as server:
        yield server


def _llm_api(make_services: ServicesFactory, data_dir: Path, server: FakeMessagesServer) -> Api:
    services = make_services("sqlite", data_dir=data_dir)
    client = anthropic.Anthropic(api_key="test", base_url=server.base_url, max_retries=0)
    install(services, llm_client=client, worker=False, scheduler=False)
    return Api(services)


def test_dialogue_gate_with_the_llm_refuses_every_disguised_fact(
    make_services: ServicesFactory, data_dir: Path, fake_llm: FakeMessagesServer
) -> None:
    api = _llm_api(make_services, data_dir, fake_llm)
    key = api.agent_key("t1", "u1", "a1")
    for name, value in ROWS:
        fake_llm.responder = _llm_copies_the_turn(value)
        decisions = _dialogue(api, key, value)
        assert [d["action"] for d in decisions] == ["REFUSED"], name
        assert decisions[0]["reason"] not in (None, "extraction_fallback"), name
    assert api.call("GET", "/v1/memories", key).json()["total"] == 0
    assert _leaks(api, key, data_dir, "", []) == []


def test_llm_written_keywords_tags_and_context_never_store_a_disguise(
    make_services: ServicesFactory, data_dir: Path, fake_llm: FakeMessagesServer
) -> None:
    """A-MEM's attributes come from the model: a disguised credential there is refused too."""
    api = _llm_api(make_services, data_dir, fake_llm)
    key = api.agent_key("t1", "u1", "a1")
    amem = install(api.services)
    assert amem.jobs is not None
    for name, value in [("control", "greyhound"), *ROWS]:
        answer = json.dumps(
            {
                "keywords": [value],
                "tags": [value],
                "context": value,
                "category": "Personal",
                "note_type": "memory",
                "topics": [],
            }
        )
        fake_llm.responder = lambda body, answer=answer: (
            answer
            if "Describe this new memory note" in body["messages"][0]["content"]
            else json.dumps({"links": []})
        )
        note = api.add(key, BENIGN)
        amem.jobs.run_due("t1")
        after = api.call("GET", f"/v1/memories/{note['id']}", key).json()
        if name == "control":  # the model's attributes are applied when they hold no secret
            assert after["keywords"] == ["greyhound"] and after["context"] == "greyhound"
    assert _leaks(api, key, data_dir, "", []) == []
