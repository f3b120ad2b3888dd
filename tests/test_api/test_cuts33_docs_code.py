"""Issue 33's "docs and code" cuts: `/docs` may not be framed; docs/dsar.md names every field
the export carries (its evolution history is not future work); the "writable by" rule exists
once (`memvault.scope.may_write`); `models.TENANT_TABLES` is gone."""

from __future__ import annotations

import json
import re
from pathlib import Path

from memvault.store import models
from tests.apiclient import Api
from tests.conftest import ServicesFactory

ROOT = Path(__file__).resolve().parents[2]


def test_docs_page_sends_frame_headers(make_services: ServicesFactory) -> None:
    api = Api(make_services("sqlite"))
    r = api.client.get("/docs")
    assert r.status_code == 200 and "swagger" in r.text.lower()
    assert r.headers["x-frame-options"] == "DENY"
    assert "frame-ancestors 'none'" in r.headers["content-security-policy"]


def test_dsar_doc_names_what_the_export_carries(make_services: ServicesFactory) -> None:
    api = Api(make_services("sqlite"))
    key = api.agent_key("acme", "alice", "bot")
    first = api.add(key, "The user practises the cello every evening")
    second = api.add(key, "The user practises the violin every morning")
    link = api.call(
        "POST", f"/v1/memories/{first['id']}/links", key, json={"target_id": second["id"]}
    )
    assert link.status_code == 204
    r = api.call("GET", "/v1/admin/export", api.tenant("acme"), params={"user_id": "alice"})
    out = [json.loads(line) for line in r.text.splitlines()]
    doc = (ROOT / "docs" / "dsar.md").read_text()
    assert "will join it when it exists" not in doc and "future" not in doc.lower()
    named = set(re.findall(r"`([a-z_]+)`", doc)) | set(re.findall(r'"([a-z_]+)"', doc))
    for line in out:
        if line["type"] in ("note", "link"):
            missing = set(line) - named - set(_note_api_fields())
            assert not missing, (line["type"], missing)
    assert "evolution_history" in named and "kind" in named and "valid_to" in named


def _note_api_fields() -> set[str]:
    """The fields `GET /v1/memories/{id}` returns (docs/dsar.md says "the note exactly as ...")."""
    from memvault.api.schemas import NoteOut

    return set(NoteOut.model_fields)


def test_one_writable_by_rule() -> None:
    from memvault.scope import may_write

    assert may_write("bot", ["bot"]) and may_write("bot", ["*"])
    assert not may_write("bot", ["other"]) and not may_write("bot", [])
    inline = re.compile(r"""in\s+(?:\w+\.)*writers\s+or\s+(?:"\*"|WILDCARD_READER)\s+in""")
    found = [
        str(p.relative_to(ROOT))
        for p in (ROOT / "src" / "memvault").rglob("*.py")
        if inline.search(p.read_text()) or "not in writers and" in p.read_text()
    ]
    assert found == []


def test_tenant_tables_is_gone() -> None:
    assert not hasattr(models, "TENANT_TABLES")
    assert models.OPERATOR_TABLES == (
        "tenants",
        "tenant_deletions",
        "deployment_identity",
        "console_sessions",
    )
