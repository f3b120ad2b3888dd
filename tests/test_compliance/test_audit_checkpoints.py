"""Issue 33 §2: an audit trail that cannot be cut without a trace.

- Cut at the start: a full export whose first events were removed, or reduced to its head line,
  fails `memvault audit verify` by default; a partial export is checked against a previous head.
- Edited inside the database: the server signs the chain head into the keystore (checkpoints),
  exports carry them, and a log re-chained after deleting events fails verification against a
  checkpoint made before the edit — with a real edit of the real database (SQLite, PostgreSQL).
"""

from __future__ import annotations

import base64
import hashlib
import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, create_engine, text

from memvault.runtime.factory import Services
from tests._helpers import poll_until
from tests.apiclient import OPERATOR_KEY, Api
from tests.conftest import ServicesFactory, pg_url_or_skip
from tests.test_compliance._audit import export_lines, verify_export

USER = "usrqzerased"


def _activity(api: Api, notes: int = 3) -> tuple[str, str]:
    admin = api.tenant("acme")
    agent = api.agent_key("acme", USER, "bot")
    for i in range(notes):
        api.add(agent, f"the blue canoe number {i} is tied to the north jetty")
    return admin, agent


# --- cut at the start -----------------------------------------------------------------------


def test_a_full_export_cut_at_the_start_or_to_its_head_fails_by_default(
    api: Api, tmp_path: Path
) -> None:
    admin, _ = _activity(api)
    lines = export_lines(api, admin)
    assert verify_export(tmp_path, api, lines).exit_code == 0
    for cut in (1, 2, len(lines) - 2):  # the last cut keeps one event
        result = verify_export(tmp_path, api, lines[cut:])
        assert result.exit_code == 1, (cut, result.output)
        assert "first events were removed" in result.output
    only_head = verify_export(tmp_path, api, lines[-1:])
    assert only_head.exit_code == 1 and "events are missing" in only_head.output
    head = json.loads(lines[-1])
    assert head["since_seq"] == 0 and head["seq"] == len(lines) - 1
    assert "full export, from the genesis hash" in verify_export(tmp_path, api, lines).output
    # A head whose since_seq was edited to hide the cut no longer verifies.
    moved = {**head, "since_seq": 2}
    moved_head = verify_export(
        tmp_path, api, [*lines[2:-1], json.dumps(moved)], "--previous-hash", "0"
    )
    assert moved_head.exit_code == 1 and "signature" in moved_head.output


def test_a_partial_export_is_checked_against_the_previous_head(api: Api, tmp_path: Path) -> None:
    admin, agent = _activity(api)
    first = export_lines(api, admin)
    (tmp_path / "first.jsonl").write_text("\n".join(first) + "\n", encoding="utf-8")
    previous = json.loads(first[-1])
    api.add(agent, "the red kayak is in the boathouse")
    tail = export_lines(api, admin, since=previous["seq"])
    assert json.loads(tail[-1])["since_seq"] == previous["seq"]

    alone = verify_export(tmp_path, api, tail)
    assert alone.exit_code == 1 and "partial export" in alone.output
    ok = verify_export(tmp_path, api, tail, "--previous", str(tmp_path / "first.jsonl"))
    assert ok.exit_code == 0, ok.output
    assert f"checked against the previous head (seq {previous['seq']})" in ok.output
    (tmp_path / "head.json").write_text(first[-1], encoding="utf-8")  # the head line alone
    assert (
        verify_export(tmp_path, api, tail, "--previous", str(tmp_path / "head.json")).exit_code == 0
    )
    # The partial export cut at its start fails against the same previous head.
    cut = verify_export(tmp_path, api, tail[1:], "--previous", str(tmp_path / "first.jsonl"))
    assert cut.exit_code == 1 and "first events were removed" in cut.output
    # An older head (or a forged one) is not the head this export continues.
    older = export_lines(api, admin, since=previous["seq"] - 2)
    (tmp_path / "older.jsonl").write_text(json.dumps({**previous, "seq": previous["seq"] - 1}))
    forged = verify_export(tmp_path, api, tail, "--previous", str(tmp_path / "older.jsonl"))
    assert forged.exit_code == 1 and "signature" in forged.output
    wrong = verify_export(tmp_path, api, older, "--previous", str(tmp_path / "first.jsonl"))
    assert wrong.exit_code == 1 and "previous head ends at seq" in wrong.output


# --- checkpoints ----------------------------------------------------------------------------


def _canonical(obj: Any) -> bytes:
    """The attacker's own canonical JSON: the chain hash needs no key."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


@contextmanager
def _owner_engine(services: Services) -> Iterator[Engine]:
    """A connection to the data store with write access to `audit_events`, as an attacker with
    database access has: the SQLite file itself, or PostgreSQL's owner (which bypasses RLS)."""
    if services.db.is_postgres:
        schema = services.settings.db_schema
        engine = create_engine(
            pg_url_or_skip(), connect_args={"options": f"-csearch_path={schema}"}
        )
    else:
        engine = create_engine(services.settings.resolved_database_url())
    try:
        yield engine
    finally:
        engine.dispose()


def _rechain_without(services: Services, tenant: str, drop: set[str]) -> int:
    """Delete the tenant's events whose action is in `drop` inside the database and recompute
    the rest of the chain (seq 1, 2, …, prev, SHA-256), as an attacker would. Returns how many
    events went."""
    with _owner_engine(services) as engine, engine.begin() as conn:
        if services.db.is_postgres:
            conn.execute(text("SELECT set_config('app.tenant_id', :t, true)"), {"t": tenant})
        rows = conn.execute(
            text(
                "SELECT seq, tenant_id, at, actor, action, subject, details FROM audit_events "
                "WHERE tenant_id = :t ORDER BY seq"
            ),
            {"t": tenant},
        ).all()
        kept = [row for row in rows if row.action not in drop]
        conn.execute(text("DELETE FROM audit_events WHERE tenant_id = :t"), {"t": tenant})
        prev = "0" * 64
        for seq, row in enumerate(kept, start=1):
            event = {
                "seq": seq,
                "tenant_id": tenant,
                "at": row.at,
                "actor": row.actor,
                "action": row.action,
                "subject": json.loads(row.subject),
                "details": json.loads(row.details),
                "prev": prev,
            }
            digest = hashlib.sha256(_canonical(event)).hexdigest()
            conn.execute(
                text(
                    "INSERT INTO audit_events (tenant_id, seq, at, actor, action, subject, "
                    "details, prev, hash) VALUES (:t, :seq, :at, :actor, :action, :subject, "
                    ":details, :prev, :hash)"
                ),
                {
                    "t": tenant,
                    "seq": seq,
                    "at": row.at,
                    "actor": row.actor,
                    "action": row.action,
                    "subject": row.subject,
                    "details": row.details,
                    "prev": prev,
                    "hash": digest,
                },
            )
            prev = digest
    return len(rows) - len(kept)


def test_a_log_rechained_inside_the_database_fails_against_an_earlier_checkpoint(
    api: Api, tmp_path: Path
) -> None:
    services = api.services
    admin, _ = _activity(api)
    r = api.call("POST", "/v1/admin/erase", admin, json={"user_id": USER})
    assert r.status_code == 200, r.text
    checkpoint = services.checkpointer.checkpoint("acme")
    assert checkpoint is not None
    api.add(api.agent_key("acme", "usrqzstays", "bot"), "the green canoe stays at the jetty")
    before = export_lines(api, admin)
    carried = [json.loads(line) for line in before if '"type":"checkpoint"' in line]
    assert [c["seq"] for c in carried] == [checkpoint["seq"]]
    ok = verify_export(tmp_path, api, before)
    assert ok.exit_code == 0 and "1 checkpoints" in ok.output, ok.output
    assert services.audit.verify("acme")

    # The attacker deletes the erase events in the database and re-chains the rest.
    assert _rechain_without(services, "acme", {"erase.requested", "erase.completed"}) == 2
    services.audit._heads.clear()  # this process forgets its cached head, as a restart would
    assert services.audit.verify("acme")  # the bare chain is consistent again
    after = export_lines(api, admin)
    assert not any('"erase.' in line for line in after)
    result = verify_export(tmp_path, api, after)
    assert result.exit_code == 1, result.output
    assert "does not match the checkpoint" in result.output
    # The server will not vouch for the edited chain either.
    from memvault.audit.checkpoints import AuditChainBroken

    with pytest.raises(AuditChainBroken):
        services.checkpointer.checkpoint("acme")
    # Dropping the checkpoint line from the file is caught by the signed count.
    stripped = [line for line in after if '"type":"checkpoint"' not in line]
    dropped = verify_export(tmp_path, api, stripped)
    assert dropped.exit_code == 1 and "checkpoints were removed" in dropped.output


def test_events_removed_from_the_end_leave_a_checkpoint_beyond_the_head(
    api: Api, tmp_path: Path
) -> None:
    services = api.services
    admin, _ = _activity(api)
    made = services.checkpointer.checkpoint("acme")
    assert made is not None
    with _owner_engine(services) as engine, engine.begin() as conn:
        if services.db.is_postgres:
            conn.execute(text("SELECT set_config('app.tenant_id', 'acme', true)"))
        conn.execute(
            text("DELETE FROM audit_events WHERE tenant_id = 'acme' AND seq > :s"),
            {"s": made["seq"] - 2},
        )
    services.audit._heads.clear()
    result = verify_export(tmp_path, api, export_lines(api, admin))
    assert result.exit_code == 1 and "beyond the head" in result.output


def test_a_tampered_checkpoint_line_fails(api: Api, tmp_path: Path) -> None:
    admin, _ = _activity(api)
    api.services.checkpointer.checkpoint("acme")
    lines = export_lines(api, admin)
    index = next(i for i, line in enumerate(lines) if '"type":"checkpoint"' in line)
    checkpoint = json.loads(lines[index])
    signature = bytearray(base64.b64decode(checkpoint["signature"]))
    signature[0] ^= 1
    for bad in (
        {**checkpoint, "signature": base64.b64encode(bytes(signature)).decode()},
        {**checkpoint, "hash": "0" * 64},
    ):
        result = verify_export(
            tmp_path, api, [*lines[:index], json.dumps(bad), *lines[index + 1 :]]
        )
        assert result.exit_code == 1, result.output
        assert "signature" in result.output


def _wait_for(predicate: Any, seconds: float = 10.0) -> bool:
    return poll_until(predicate, seconds, step=0.02)


def test_checkpoints_are_made_every_n_events_and_after_a_while(
    make_services: ServicesFactory,
) -> None:
    from memvault.audit.checkpoints import Checkpointer

    services = make_services("sqlite")
    store = services.keyring.audit_checkpoints()
    by_count = Checkpointer(
        services.audit, services.keyring.audit_checkpoints, time.time, every=5, seconds=3600
    )
    services.audit.on_appended = by_count.appended
    for i in range(12):
        services.audit.record("t1", "system", "test.event", count=i)
    assert _wait_for(lambda: (store.latest("t1") or {}).get("seq", 0) >= 10)
    by_count.close(final=False)

    by_time = Checkpointer(
        services.audit, services.keyring.audit_checkpoints, time.time, every=1000, seconds=0.2
    )
    services.audit.on_appended = by_time.appended
    services.audit.record("t2", "system", "test.event", count=1)
    assert _wait_for(lambda: store.latest("t2") is not None, 5.0)
    assert store.latest("t2")["seq"] == 1  # type: ignore[index]
    by_time.close(final=False)


def test_an_erase_keeps_the_checkpoints_and_a_tenant_deletion_removes_them(
    make_services: ServicesFactory, backend: str
) -> None:
    api = Api(make_services(backend))
    services = api.services
    admin, _ = _activity(api)
    services.checkpointer.checkpoint("acme")
    store = services.keyring.audit_checkpoints()
    assert len(store.listed("acme")) == 1
    r = api.call("POST", "/v1/admin/erase", admin, json={"user_id": USER})
    assert r.status_code == 200, r.text  # the erase shreds keys and scrubs the keystore
    assert len(store.listed("acme")) == 1
    assert services.checkpointer.checkpoint("acme")["seq"] > 1  # type: ignore[index]
    r = api.call("DELETE", "/v1/operator/tenants/acme", OPERATOR_KEY)
    assert r.status_code == 200, r.text
    assert store.listed("acme") == []


def test_the_sdk_keeps_checkpoints_apart_from_events(api: Api) -> None:
    from memvault.client import _verify

    admin, _ = _activity(api)
    api.services.checkpointer.checkpoint("acme")
    lines = export_lines(api, admin)
    keys = api.client.get("/v1/receipt-keys").json()["keys"]
    export = _verify.audit_from_lines(lines, keys)
    assert export.verdict is not None and "1 checkpoints" in export.verdict
    assert all("type" not in event for event in export.events)
    assert [c["seq"] for c in export.checkpoints] == [export.events[-1]["seq"]]
