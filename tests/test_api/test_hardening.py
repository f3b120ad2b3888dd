"""Issue 7 defects reproduced over HTTP: every stored field screened, Unicode and ids validated
before anything is written, numbers bounded, pseudonymous PII placeholders keep facts apart."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.apiclient import OPERATOR_KEY, Api
from tests.conftest import ServicesFactory

AWS_ID = "AKIAIOSFODNN7EXAMPLE"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
GITHUB = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
PLACEHOLDER = re.compile(r"\[([A-Z]+):([0-9a-f]{8})\]")


@pytest.fixture
def api(make_services: ServicesFactory, backend: str) -> Api:
    return Api(make_services(backend))


def _total(api: Api, key: str) -> int:
    r = api.call("GET", "/v1/memories", key)
    assert r.status_code == 200, r.text
    return int(r.json()["total"])


def _files_hold(root: Path, marker: bytes) -> list[str]:
    return [str(p) for p in root.rglob("*") if p.is_file() and marker in p.read_bytes()]


@pytest.mark.parametrize(
    ("extra", "secret"),
    [
        ({"source": f"deploy script {AWS_ID}"}, AWS_ID),
        ({"topics": [f"token {GITHUB}"]}, GITHUB),
        ({"topics": ["password is hunter2"]}, "hunter2"),
        ({"readers": [AWS_ID]}, AWS_ID),
        ({"source": "ｇｈｐ_" + GITHUB[4:]}, GITHUB[4:]),
    ],
)
def test_a_secret_in_any_stored_field_is_refused_and_stored_nowhere(
    api: Api, extra: dict[str, Any], secret: str
) -> None:
    key = api.agent_key("acme", "alice", "planner")
    r = api.call("POST", "/v1/memories", key, json={"text": "Alice likes green tea", **extra})
    assert r.status_code == 422, r.text
    assert r.json()["error"]["code"] == "credential_refused"
    assert secret not in r.text
    assert _total(api, key) == 0

    note = api.add(key, "Alice likes green tea in the morning")
    patched = api.call("PATCH", f"/v1/memories/{note['id']}", key, json=extra)
    assert patched.status_code == 422, patched.text
    assert secret not in patched.text
    assert api.call("GET", f"/v1/memories/{note['id']}", key).json() == note
    root = api.services.settings.data_dir
    assert _files_hold(root, secret.encode()) == []


def test_readers_must_match_the_id_grammar_exactly(api: Api) -> None:
    key = api.agent_key("acme", "alice", "planner")
    for bad in ["coder\n", "co der", "", "x" * 129, "coder\u0000"]:
        r = api.call(
            "POST", "/v1/memories", key, json={"text": "A note for sharing", "readers": [bad]}
        )
        assert r.status_code == 422, (bad, r.text)
    assert _total(api, key) == 0


def test_pii_in_source_and_topics_is_redacted_with_keyed_pseudonyms(api: Api) -> None:
    key = api.agent_key("acme", "alice", "planner")
    note = api.add(
        key,
        "Alice's dentist can be reached at +1 415 555 0132",
        source="email from alice@example.com",
        topics=["call +1 415 555 0132"],
    )
    assert "alice@example.com" not in str(note) and "555 0132" not in str(note)
    assert PLACEHOLDER.search(note["source"]) and PLACEHOLDER.search(note["topics"][0])
    phone_in_text = PLACEHOLDER.search(note["text"])
    phone_in_topic = PLACEHOLDER.search(note["topics"][0])
    assert phone_in_text and phone_in_topic
    assert phone_in_text.group(0) == phone_in_topic.group(0)  # same number, same pseudonym
    assert {"email", "phone"} <= set(note["redacted"])


def test_facts_that_differ_only_in_a_phone_number_stay_two_notes(api: Api) -> None:
    key = api.agent_key("acme", "alice", "planner")
    first = api.add(key, "The plumber's number is +1 415 555 0132")
    second = api.add(key, "The plumber's number is +1 415 555 0199")
    same = api.add(key, "The plumber's number is +1 (415) 555-0132")
    assert first["id"] != second["id"]
    assert first["text"] != second["text"]
    assert same["id"] == first["id"]  # the same number written differently is a duplicate
    assert _total(api, key) == 2
    other = Api(api.services).agent_key("globex", "alice", "planner")
    elsewhere = api.add(other, "The plumber's number is +1 415 555 0132")
    assert elsewhere["text"] != first["text"]  # pseudonyms are keyed per tenant


@pytest.mark.parametrize(
    ("method", "path_kind", "body"),
    [
        ("POST", "memories", {"text": "fine text here", "topics": ["\ud800"]}),
        ("PATCH", "note", {"topics": ["\ud800"]}),
        ("PATCH", "note", {"text": "lone \udc00 surrogate"}),
        ("POST", "search", {"query": "tea", "topics": ["\ud800"]}),
        ("POST", "search", {"query": "\ud800 tea"}),
    ],
)
def test_invalid_unicode_is_a_422_and_the_note_stays_readable(
    api: Api, method: str, path_kind: str, body: dict[str, Any]
) -> None:
    key = api.agent_key("acme", "alice", "planner")
    note = api.add(key, "Alice likes green tea in the morning", topics=["drinks"])
    path = {
        "memories": "/v1/memories",
        "note": f"/v1/memories/{note['id']}",
        "search": "/v1/memories/search",
    }[path_kind]
    raw = json.dumps(body)  # ASCII escapes: the lone surrogate travels as "\ud800"
    r = api.call(method, path, key, content=raw, headers={"Content-Type": "application/json"})
    assert r.status_code == 422, r.text
    assert r.json()["error"]["code"] == "invalid_request"
    assert api.call("GET", f"/v1/memories/{note['id']}", key).json() == note
    assert [h["id"] for h in api.search(key, "green tea")] == [note["id"]]
    assert _total(api, key) == 1


def test_ids_are_matched_whole_and_tenants_are_case_insensitive(api: Api) -> None:
    r = api.call("POST", "/v1/operator/tenants", OPERATOR_KEY, json={"tenant_id": "acme\n"})
    assert r.status_code == 422, r.text
    api.tenant("globex")
    r = api.call("POST", "/v1/operator/tenants", OPERATOR_KEY, json={"tenant_id": "GLOBEX"})
    assert r.status_code == 409, r.text
    admin = api.tenant("acme")
    r = api.call("POST", "/v1/admin/keys", admin, json={"user_id": "alice\n", "agent_id": "p"})
    assert r.status_code == 422, r.text
    key = api.agent_key("acme", "alice", "planner")
    api.add(key, "Alice likes green tea in the morning")
    r = api.call("POST", "/v1/admin/erase", admin, json={"user_id": "alice\n"})
    assert r.status_code == 422, r.text
    assert _total(api, key) == 1
    r = api.call("DELETE", "/v1/operator/tenants/acme%0A", OPERATOR_KEY)
    assert r.status_code in (404, 422), r.text
    assert _total(api, key) == 1


@pytest.mark.parametrize(
    "query",
    ["offset=9223372036854775808", "offset=-1", "limit=0", "limit=100000", "offset=1e3"],
)
def test_integer_parameters_out_of_range_are_422(api: Api, query: str) -> None:
    key = api.agent_key("acme", "alice", "planner")
    r = api.call("GET", f"/v1/memories?{query}", key)
    assert r.status_code == 422, r.text
    assert r.json()["error"]["code"] == "invalid_request"


def test_search_limit_out_of_range_is_422(api: Api) -> None:
    key = api.agent_key("acme", "alice", "planner")
    for limit in (0, 101, 2**63):
        r = api.call("POST", "/v1/memories/search", key, json={"query": "tea", "limit": limit})
        assert r.status_code == 422, r.text
