"""The signed audit export over the API, verified offline by `memvault audit verify`; note,
admin and security activity audited with ids and counts only, never text."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from sqlalchemy import text

from tests.apiclient import Api
from tests.test_compliance._audit import export_lines, verify_export

NOTE = "my sister Margaret grows purple tomatoes behind the lighthouse"
SECRET = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"


def _activity(api: Api) -> tuple[str, str]:
    admin = api.tenant("acme")
    agent = api.agent_key("acme", "alice", "bot")
    note = api.add(agent, NOTE)
    other = api.add(agent, "the lighthouse keeper paints boats every spring")
    assert api.search(agent, "what does my sister grow")
    r = api.call("POST", "/v1/memories", agent, json={"text": f"remember my token {SECRET}"})
    assert r.status_code == 422 and r.json()["error"]["code"] == "credential_refused"
    r = api.call("PATCH", f"/v1/memories/{note['id']}", agent, json={"text": NOTE + " again"})
    assert r.status_code == 200, r.text
    r = api.call("POST", f"/v1/memories/{note['id']}/links", agent, json={"target_id": other["id"]})
    assert r.status_code == 204, r.text
    assert api.call("DELETE", f"/v1/memories/{other['id']}", agent).status_code == 204
    return admin, agent


def test_export_verifies_offline_and_holds_no_text(api: Api, tmp_path: Path) -> None:
    admin, _agent = _activity(api)
    lines = export_lines(api, admin)
    events = [json.loads(line) for line in lines[:-1]]
    head = json.loads(lines[-1])
    actions = [e["action"] for e in events]
    for action in (
        "tenant.created",
        "key.issued",
        "note.added",
        "note.searched",
        "screen.refused",
        "note.updated",
        "note.linked",
        "note.deleted",
    ):
        assert action in actions, action
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert head["type"] == "head" and head["seq"] == events[-1]["seq"]
    assert head["hash"] == events[-1]["hash"]
    searched = next(e for e in events if e["action"] == "note.searched")
    assert searched["details"]["results"] >= 1
    refused = next(e for e in events if e["action"] == "screen.refused")
    assert refused["details"]["code"] == "credential_refused" and refused["details"]["detector"]
    result = verify_export(tmp_path, api, lines)
    assert result.exit_code == 0, result.output
    assert result.output.startswith("OK")

    # No audit row holds the note text, the refused secret or the clear user id.
    with api.services.db.session("acme") as sess:
        rows = sess.execute(text("SELECT * FROM audit_events")).all()
    dump = json.dumps([[str(v) for v in row] for row in rows])
    assert len(rows) == len(events) + 1  # and the export itself, audited after its snapshot
    for word in ("Margaret", "tomatoes", "lighthouse", SECRET, SECRET[4:20], "alice"):
        assert word not in dump, word
    assert "alice" not in "\n".join(lines)


def test_a_removed_or_edited_event_or_a_flipped_signature_byte_fails(
    api: Api, tmp_path: Path
) -> None:
    admin, _agent = _activity(api)
    lines = export_lines(api, admin)
    assert verify_export(tmp_path, api, lines).exit_code == 0
    for index in (1, 3, len(lines) - 2):  # the second, a middle and the last event
        result = verify_export(tmp_path, api, lines[:index] + lines[index + 1 :])
        assert result.exit_code == 1, index
        assert len(result.output.strip().splitlines()) == 1
    # The signed head says the export starts after seq 0: without seq 1 it fails by default.
    result = verify_export(tmp_path, api, lines[1:])
    assert result.exit_code == 1 and "first events were removed" in result.output
    assert verify_export(tmp_path, api, lines[1:], "--previous-hash", "0" * 64).exit_code == 1
    edited = json.loads(lines[4])
    edited["details"] = {**edited["details"], "results": 99}
    result = verify_export(tmp_path, api, [*lines[:4], json.dumps(edited), *lines[5:]])
    assert result.exit_code == 1 and "hash" in result.output
    edited = json.loads(lines[4])
    edited["actor"] = "ffffffffffffffff"
    edited["hash"] = "0" * 64
    assert verify_export(tmp_path, api, [*lines[:4], json.dumps(edited), *lines[5:]]).exit_code == 1
    head = json.loads(lines[-1])
    signature = base64.b64decode(head["signature"])
    for position in range(len(signature)):
        flipped = bytearray(signature)
        flipped[position] ^= 0x80
        bad = {**head, "signature": base64.b64encode(bytes(flipped)).decode()}
        result = verify_export(tmp_path, api, [*lines[:-1], json.dumps(bad)])
        assert result.exit_code == 1, position
        assert "signature" in result.output
    assert verify_export(tmp_path, api, lines[:-1]).exit_code == 1  # the head cut off


def test_since_seq_export_chains_to_the_previous_event(api: Api, tmp_path: Path) -> None:
    admin, agent = _activity(api)
    full = export_lines(api, admin)
    events = [json.loads(line) for line in full[:-1]]
    middle = events[4]
    api.add(agent, "the garden gate squeaks when the wind blows")
    tail = export_lines(api, admin, since=middle["seq"])
    first = json.loads(tail[0])
    assert first["seq"] == middle["seq"] + 1 and first["prev"] == middle["hash"]
    assert json.loads(tail[-1])["seq"] > events[-1]["seq"]  # it includes the later events
    ok = verify_export(tmp_path, api, tail, "--previous-hash", middle["hash"])
    assert ok.exit_code == 0, ok.output
    assert "partial export after seq 5, checked against --previous-hash" in ok.output
    alone = verify_export(tmp_path, api, tail)  # a partial export needs the head it continues
    assert alone.exit_code == 1 and "--previous" in alone.output
    wrong = verify_export(tmp_path, api, tail, "--previous-hash", events[3]["hash"])
    assert wrong.exit_code == 1 and "prev" in wrong.output
    r = api.call("GET", "/v1/admin/audit/export?since_seq=100000", admin)
    assert r.status_code == 422


def test_roles_and_the_public_keys(api: Api) -> None:
    admin = api.tenant("acme")
    auditor = api.agent_key("acme", "ann", "desk", role="auditor")
    agent = api.agent_key("acme", "alice", "bot")
    assert api.call("GET", "/v1/admin/audit/export", auditor).status_code == 200
    assert api.call("GET", "/v1/admin/audit/export", agent).status_code == 403
    assert api.call("GET", "/v1/admin/audit/export", None).status_code == 401
    assert api.call("GET", "/v1/admin/audit/export?user_id=x", admin).status_code == 422
    legacy = api.call("GET", "/v1/admin/audit", admin)
    assert legacy.status_code == 200 and json.loads(legacy.text.splitlines()[-1])["type"] == "head"
    keys = api.client.get("/v1/receipt-keys").json()["keys"]
    assert len(keys) == 1 and keys[0]["alg"] == "Ed25519"
    assert set(keys[0]) == {"key_id", "alg", "public_key", "created_at"}


def test_refused_requests_are_audited_as_bursts(api: Api) -> None:
    admin = api.tenant("acme")
    agent = api.agent_key("acme", "alice", "bot")
    prefix, _, secret = agent.rpartition(".")
    wrong = f"{prefix}.{'x' * len(secret)}"
    unknown = f"mvk_acme.ffffffffffffffff.{secret}"
    for _ in range(5):
        assert api.call("GET", "/v1/memories", wrong).status_code == 401
        assert api.call("GET", "/v1/memories", unknown).status_code == 401
    for _ in range(3):
        assert api.call("GET", "/v1/admin/audit/export", agent).status_code == 403
    audit = api.services.audit
    before = [e["action"] for e in audit.events("acme")]
    assert "security.unauthorized" not in before  # summed, not one event per request
    assert audit.flush_bursts(force=True) == 2
    events = {e["action"]: e for e in audit.events("acme")}
    assert events["security.unauthorized"]["details"]["count"] == 5
    assert events["security.forbidden"]["details"]["count"] == 3
    assert admin


def test_a_scope_violation_is_audited_at_once(api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    from memvault.errors import ScopeViolation
    from memvault.vault.service import ScopedVault

    agent = api.agent_key("acme", "alice", "bot")

    def leak(*_args: object, **_kw: object) -> None:
        raise ScopeViolation("a store returned a row of another scope")

    monkeypatch.setattr(ScopedVault, "list_page", leak)
    r = api.call("GET", "/v1/memories", agent)
    assert r.status_code == 500 and r.json()["error"]["code"] == "scope_violation"
    (event,) = [e for e in api.services.audit.events("acme") if e["action"].startswith("security")]
    assert event["action"] == "security.scope_violation"
    assert event["actor"] == agent.split(".")[1]
    assert event["subject"]["agent_id"] == "bot" and event["subject"]["user_id"] != "alice"
