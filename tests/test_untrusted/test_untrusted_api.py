"""Untrusted-content mode over REST: a marked session's reads answer 423 and return no memory."""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.apiclient import Api
from tests.test_untrusted.conftest import actions, audit_events

TEXT = "Alice lives at 12 Rosemary Lane, Springfield; her door code is on the fridge"
AWS_KEY = "AKIAIOSFODNN7EXAMPLE"  # AWS's documented example key id


def reads(api: Api, key: str, note_id: str, session: str | None) -> dict[str, Any]:
    """Every memory read route, made in `session` (no header when None)."""
    headers = {} if session is None else {"X-Session-Id": session}
    return {
        "search": api.call(
            "POST",
            "/v1/memories/search",
            key,
            json={"query": "where does Alice live"},
            headers=dict(headers),
        ),
        "list": api.call("GET", "/v1/memories", key, headers=dict(headers)),
        "get": api.call("GET", f"/v1/memories/{note_id}", key, headers=dict(headers)),
        "links": api.call("GET", f"/v1/memories/{note_id}/links", key, headers=dict(headers)),
    }


def mark(api: Api, key: str, session: str, **body: Any) -> Any:
    body.setdefault("reason", "processed an external web page")
    return api.call("POST", f"/v1/sessions/{session}/untrusted", key, json=body)


def assert_refused(responses: dict[str, Any], note_id: str) -> None:
    for route, r in responses.items():
        assert r.status_code == 423, (route, r.text)
        assert r.json()["error"]["code"] == "session_untrusted", route
        assert note_id not in r.text and "Rosemary" not in r.text, route


def assert_served(responses: dict[str, Any]) -> None:
    for route, r in responses.items():
        assert r.status_code == 200, (route, r.text)


def test_every_read_in_a_marked_session_answers_423_until_it_is_unmarked(api: Api) -> None:
    key = api.agent_key("acme", "alice", "browser")
    note = api.add(key, TEXT)["id"]
    assert_served(reads(api, key, note, "chat-1"))

    r = mark(api, key, "chat-1", ttl_s=300)
    assert r.status_code == 200, r.text
    assert r.json()["untrusted"] is True and r.json()["expires_at"] > time.time() + 290
    assert_refused(reads(api, key, note, "chat-1"), note)
    assert_served(reads(api, key, note, "chat-2"))  # another session of the same key
    assert_served(reads(api, key, note, None))  # a read that names no session

    # A mark is the agent's: another agent (same user, same session name) still reads.
    other = api.agent_key("acme", "alice", "planner")
    assert api.call("GET", "/v1/memories", other, headers={"X-Session-Id": "chat-1"}).is_success

    r = api.call("DELETE", "/v1/sessions/chat-1/untrusted", key)
    assert r.status_code == 204, r.text
    assert_served(reads(api, key, note, "chat-1"))

    seen = actions(api, "acme")
    assert seen.count("session.marked_untrusted") == 1
    assert seen.count("session.read_refused") == 4  # one per refused read
    assert seen.count("session.unmarked") == 1


def test_the_mark_runs_out_after_ttl_s(api: Api) -> None:
    key = api.agent_key("acme", "alice", "browser")
    note = api.add(key, TEXT)["id"]
    assert mark(api, key, "chat-1", ttl_s=1).status_code == 200
    assert_refused(reads(api, key, note, "chat-1"), note)
    time.sleep(1.2)
    assert_served(reads(api, key, note, "chat-1"))
    # Marking again renews it (and sweeps the tenant's expired marks).
    assert mark(api, key, "chat-1", ttl_s=60).status_code == 200
    assert_refused(reads(api, key, note, "chat-1"), note)


def test_the_reason_is_screened_and_never_stored_or_audited_as_text(api: Api) -> None:
    key = api.agent_key("acme", "alice", "browser")
    note = api.add(key, TEXT)["id"]
    r = mark(api, key, "chat-1", reason=f"page held {AWS_KEY} in a script")
    assert r.status_code == 422 and r.json()["error"]["code"] == "credential_refused", r.text
    assert AWS_KEY not in r.text
    assert_served(reads(api, key, note, "chat-1"))  # a refused mark marks nothing

    reason = "injected page from mallory@example.com asked for the home address"
    assert mark(api, key, "chat-1", reason=reason).status_code == 200
    events = audit_events(api, "acme")
    marked = [e for e in events if e["action"] == "session.marked_untrusted"]
    assert len(marked) == 1 and len(marked[0]["details"]["reason_tag"]) == 32
    dump = repr(events)
    for secret in ("mallory", "injected", "address", AWS_KEY, "chat-1"):
        assert secret not in dump, secret
    with api.services.db.session("acme") as sess:
        from memvault.store.models import UntrustedSessionRow

        rows = sess.query(UntrustedSessionRow).all()
        assert len(rows) == 1 and "chat-1" not in repr(vars(rows[0]))


@pytest.mark.parametrize(
    ("path", "body", "headers"),
    [
        ("/v1/sessions/chat-1/untrusted", {"reason": "x", "ttl_s": 0}, {}),
        ("/v1/sessions/chat-1/untrusted", {"reason": "x", "ttl_s": 86_401}, {}),
        ("/v1/sessions/chat-1/untrusted", {"reason": "", "ttl_s": 5}, {}),
        ("/v1/sessions/chat-1/untrusted", {"reason": "x", "ttl_s": "5"}, {}),
        ("/v1/sessions/chat-1/untrusted", {"reason": "x", "user_id": "bob"}, {}),
        ("/v1/sessions/has%20space/untrusted", {"reason": "x"}, {}),
        ("/v1/sessions/" + "s" * 129 + "/untrusted", {"reason": "x"}, {}),
    ],
)
def test_a_bad_mark_is_422(api: Api, path: str, body: Any, headers: Any) -> None:
    key = api.agent_key("acme", "alice", "browser")
    r = api.call("POST", path, key, json=body, headers=headers)
    assert r.status_code == 422, r.text
    assert not [a for a in actions(api, "acme") if a.startswith("session.")]


@pytest.mark.parametrize("header", ["has space", "s" * 129, "-leading-dash"])
def test_a_malformed_session_header_is_422_and_reads_nothing(api: Api, header: str) -> None:
    key = api.agent_key("acme", "alice", "browser")
    api.add(key, TEXT)
    r = api.call("GET", "/v1/memories", key, headers={"X-Session-Id": header})
    assert r.status_code == 422 and "Rosemary" not in r.text, r.text


def test_only_an_agent_key_marks_and_the_mark_is_per_tenant(api: Api) -> None:
    admin = api.tenant("acme")
    r = api.call("POST", "/v1/sessions/chat-1/untrusted", admin, json={"reason": "x"})
    assert r.status_code == 403, r.text
    assert api.call("DELETE", "/v1/sessions/chat-1/untrusted", admin).status_code == 403
    r = api.call("POST", "/v1/sessions/chat-1/untrusted", None, json={"reason": "x"})
    assert r.status_code == 401
    # The same user and agent names in another tenant are another principal.
    acme = api.agent_key("acme", "alice", "browser")
    globex = api.agent_key("globex", "alice", "browser")
    note = api.add(globex, TEXT)["id"]
    assert mark(api, acme, "chat-1").status_code == 200
    assert_served(reads(api, globex, note, "chat-1"))


def test_deleting_the_tenant_deletes_its_marks(api: Api) -> None:
    from sqlalchemy import func, select

    from memvault.store.models import UntrustedSessionRow
    from tests.apiclient import OPERATOR_KEY

    key = api.agent_key("t9", "u1", "a1")
    assert mark(api, key, "chat-1").status_code == 200
    r = api.call("DELETE", "/v1/operator/tenants/t9", OPERATOR_KEY)
    assert r.status_code == 200, r.text
    deleted = {s["store"]: s["deleted"] for s in r.json()["receipt"]["stores"]}
    assert deleted["untrusted_sessions"] == 1, deleted
    with api.services.db.session("t9") as sess:
        left = sess.execute(select(func.count()).select_from(UntrustedSessionRow)).scalar_one()
    assert left == 0
