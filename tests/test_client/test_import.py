"""`memvault import`: a file made by mem0 itself, imported over REST into a live server; the
secrets in it are refused and reported by record and detector; a rerun adds nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import Result
from typer.testing import CliRunner

from memvault.cli import app
from memvault.client import Client
from memvault.client.importer import Importer, as_id, idempotency_key, load, read_mem0
from tests.test_client.conftest import Tenant

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "mem0_export.json"
SECRETS = ("AKIAQWERTYUIOPASDFGH", "ghp_abcdefghijklmnopqrstuvwxyzABCDEFGHIJ")


def run_import(tenant: Tenant, *args: str, **env: str) -> tuple[dict[str, Any], str]:
    result = CliRunner().invoke(
        app,
        ["import", *args, "--json", "--no-progress"],
        env={"MEMVAULT_URL": tenant.base_url, "MEMVAULT_API_KEY": "", **env},
    )
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout), result.output


def import_mem0(path: Path, *args: str, env: dict[str, str]) -> Result:
    """`memvault import --from mem0 PATH ARGS --no-progress` (human report), with no key in the
    environment."""
    return CliRunner().invoke(
        app,
        ["import", "--from", "mem0", str(path), *args, "--no-progress"],
        env={"MEMVAULT_API_KEY": "", **env},
    )


def expected_scopes() -> dict[str, set[str]]:
    """user id -> texts that must land (mem0's records minus the two secrets)."""
    data = json.loads(FIXTURE.read_text())["results"]
    scopes: dict[str, set[str]] = {}
    for item in data:
        if not any(secret in item["memory"] for secret in SECRETS):
            user, _ = as_id(item["user_id"], "default")
            scopes.setdefault(user, set()).add(item["memory"])
    return scopes


def dsar_texts(tenant: Tenant, user: str) -> dict[str, str]:
    """text -> agent id of every note of the user."""
    with Client(tenant.base_url, tenant.admin_key) as admin:
        return {r["text"]: r["agent_id"] for r in admin.dsar_export(user) if r["type"] == "note"}


def test_fixture_is_mem0_get_all_output() -> None:
    data = json.loads(FIXTURE.read_text())
    assert set(data) == {"results"}
    for item in data["results"]:
        assert {"id", "memory", "hash", "metadata", "created_at", "updated_at", "user_id"} <= set(
            item
        )
    records = read_mem0(data)
    assert len(records) == 9
    assert any(r.topics == ("work", "code") for r in records)


def test_mem0_import_as_admin_every_record_secrets_refused_rerun_adds_nothing(
    tenant: Tenant,
) -> None:
    report, output = run_import(
        tenant, "--from", "mem0", str(FIXTURE), "--admin-key", tenant.admin_key
    )
    assert (report["records"], report["added"], report["refused"]) == (9, 7, 2)
    assert report["ids_rewritten"] == 1  # "team:carol" is not an id: it becomes "team-carol"
    refused = {p["index"]: p["detector"] for p in report["problems"]}
    records = load(FIXTURE, "mem0")
    secret_indexes = {r.index for r in records if any(s in r.text for s in SECRETS)}
    assert set(refused) == secret_indexes
    assert "aws_access_key" in refused.values()
    assert all(secret not in output for secret in SECRETS)

    for user, texts in expected_scopes().items():
        stored = dsar_texts(tenant, user)
        assert set(stored) == texts, user
    assert dsar_texts(tenant, "bob")["Bob walks his dog every evening"] == "mem0"  # no agent_id
    assert dsar_texts(tenant, "alice")["Alice writes her services in Rust"] == "coder"
    with Client(tenant.base_url, tenant.admin_key) as admin:
        notes = [r for r in admin.dsar_export("alice") if r["type"] == "note"]
    topics = {n["text"]: n["topics"] for n in notes}
    assert topics["Alice is allergic to peanuts"] == ["health"]  # mem0 metadata.category
    assert topics["Alice writes her services in Rust"] == ["work", "code"]
    assert {n["source"] for n in notes} == {"mem0"} and not any(n["redacted"] for n in notes)

    again, _ = run_import(tenant, "--from", "mem0", str(FIXTURE), "--admin-key", tenant.admin_key)
    assert (again["added"], again["present"], again["refused"]) == (0, 7, 2)
    for user, texts in expected_scopes().items():
        assert set(dsar_texts(tenant, user)) == texts
    with Client(tenant.base_url, tenant.admin_key) as admin:
        issued = [e for e in admin.audit_export().events if e["action"] == "key.issued"]
        revoked = [e for e in admin.audit_export().events if e["action"] == "key.revoked"]
    assert len(revoked) == len(issued) - 1  # every import key revoked (not the fixture's agent)


def test_jsonl_import_into_one_key_scope_replays_on_rerun(tenant: Tenant, tmp_path: Path) -> None:
    lines = [
        {"id": "a", "text": "The user likes sailing on calm lakes", "topics": ["hobby"]},
        {"text": "The user reads poetry before sleep", "user_id": "ignored-in-key-mode"},
        {"id": "c", "text": f"Upload with {SECRETS[0]} please"},
        {"id": "d", "text": ""},
    ]
    path = tmp_path / "memories.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    first, output = run_import(
        tenant, "--from", "jsonl", str(path), MEMVAULT_API_KEY=tenant.agent_key
    )
    assert (first["added"], first["refused"], first["skipped"]) == (2, 1, 1)
    assert SECRETS[0] not in output
    second, _ = run_import(tenant, "--from", "jsonl", str(path), "--api-key", tenant.agent_key)
    assert (second["added"], second["present"], second["refused"]) == (0, 2, 1)
    with Client(tenant.base_url, tenant.agent_key) as mv:
        notes = list(mv.iter_notes())
    assert sorted(n.text for n in notes) == [
        "The user likes sailing on calm lakes",
        "The user reads poetry before sleep",
    ]
    assert {n.source for n in notes} == {"jsonl"}


def test_human_report_names_records_and_detectors_never_text(tenant: Tenant) -> None:
    importer = Importer(tenant.base_url, api_key=tenant.agent_key)
    report = importer.run(load(FIXTURE, "mem0"))
    text = "\n".join(report.lines())
    assert "2 refused" in text and "detector aws_access_key" in text
    assert all(secret not in text for secret in SECRETS)
    assert all(r.text not in text for r in load(FIXTURE, "mem0"))


def test_idempotency_key_depends_on_scope_record_and_text() -> None:
    record = load(FIXTURE, "mem0")[0]
    key = idempotency_key(record, "key:a")
    assert key == idempotency_key(record, "key:a") and len(key) < 255
    assert key != idempotency_key(record, "key:b")
    edited = type(record)(**{**{s: getattr(record, s) for s in record.__slots__}, "text": "x y z"})
    assert key != idempotency_key(edited, "key:a")


def _bad_records_file(tmp_path: Path) -> tuple[Path, dict[int, str]]:
    """A mem0 export whose bad records sit between good ones: index -> what the report says."""
    aws_key_id = "AKIA" + "Q7VZ3K2LMN4PRSTW"  # built from parts: no literal token in the repo
    github_token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    items: list[Any] = [
        {"id": "m1", "memory": "Dana rows on the river every Sunday", "user_id": "dana"},
        {
            "id": "m2",
            "memory": "Dana's team shares the grocery list",
            "user_id": "dana",
            "agent_id": "shared",
        },
        {"id": "m3", "memory": "Dana prefers oat milk in her coffee", "user_id": "dana"},
        {"id": "m4", "memory": "Erin collects vinyl records of jazz", "user_id": aws_key_id},
        {
            "id": "m5",
            "memory": "Erin plays the cello on weekends",
            "user_id": "erin",
            "agent_id": github_token,
        },
        "not a record",
        {"id": "m7", "memory": "Erin's favourite city is Lisbon", "user_id": "erin"},
    ]
    path = tmp_path / "mem0_bad.json"
    path.write_text(json.dumps({"results": items}), encoding="utf-8")
    return path, {
        2: "reserved_id",
        4: "aws_access_key",
        5: "github_token",
        6: "invalid_record",
    }


def test_bad_records_never_stop_an_import_and_a_rerun_is_idempotent(
    tenant: Tenant, tmp_path: Path
) -> None:
    path, bad = _bad_records_file(tmp_path)
    for run in ("first", "rerun"):
        result = import_mem0(
            path, "--admin-key", tenant.admin_key, env={"MEMVAULT_URL": tenant.base_url}
        )
        assert result.exit_code == 0, result.output
        first_line = result.output.splitlines()[0]
        if run == "first":
            assert first_line.startswith(
                "7 records: 3 added, 0 already present, 2 refused, 2 invalid"
            )
        else:
            assert first_line.startswith(
                "7 records: 0 added, 3 already present, 2 refused, 2 invalid"
            )
        for index, reason in bad.items():
            line = next(x for x in result.output.splitlines() if x.startswith(f"record {index}:"))
            assert reason in line, line
        # Neither a record's text nor a credential id reaches the report.
        for item in json.loads(path.read_text())["results"]:
            if isinstance(item, dict):
                assert item["memory"] not in result.output
        assert "AKIA" not in result.output and "ghp_" not in result.output
    assert set(dsar_texts(tenant, "dana")) == {
        "Dana rows on the river every Sunday",
        "Dana prefers oat milk in her coffee",
    }
    assert set(dsar_texts(tenant, "erin")) == {"Erin's favourite city is Lisbon"}


def test_an_import_that_stops_early_still_prints_its_report(tmp_path: Path) -> None:
    path, _ = _bad_records_file(tmp_path)
    result = import_mem0(  # nothing listens on port 9
        path, "--api-key", "mvk_x.0123456789abcdef.s", "--url", "http://127.0.0.1:9", env={}
    )
    assert result.exit_code == 1
    assert result.stdout.startswith("7 records: 0 added")
    assert "stopped early (transport_error" in result.stdout
