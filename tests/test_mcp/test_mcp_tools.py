"""The MCP tools in-process (the SDK's in-memory client) over the embedded backend, on SQLite
and PostgreSQL: envelopes, refusals that name codes and fields but never values, shared versus
private scope labels, the argument gate, and the A-MEM tools with A-MEM on and off (and over
the remote backend, on a mocked server)."""

from __future__ import annotations

import json
import time
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client
from mcp.types import CallToolResult, TextContent
from sqlalchemy import update

from memvault.amem.wiring import installed
from memvault.api.schemas import MEMORY_NOTICE
from memvault.client import Client as SdkClient
from memvault.errors import Forbidden
from memvault.mcp import AmemOff, BackendError, EmbeddedBackend, RemoteBackend, build_server
from memvault.mcp.envelope import recalled
from memvault.mcp.gate import argument_problems
from memvault.runtime.factory import Services
from memvault.scope import Scope
from memvault.store.models import NoteRow
from tests.conftest import ServicesFactory

SECRET = "AKIA" + "QWERTYUIOPASDFGH"


def _text(result: CallToolResult) -> str:
    return " ".join(c.text for c in result.content if isinstance(c, TextContent))


def _call(services: Services, key: str, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    """Run tool calls through an in-memory MCP client; structured results, or error texts."""
    backend = EmbeddedBackend.authenticate(services, key)

    async def run() -> list[Any]:
        out: list[Any] = []
        async with Client(build_server(backend)) as client:
            for tool, arguments in calls:
                result = await client.call_tool(tool, arguments)
                if result.is_error:
                    prefix = f"Error executing tool {tool}: "
                    assert _text(result).startswith(prefix)
                    out.append("ERROR " + _text(result).removeprefix(prefix))
                else:
                    assert json.loads(_text(result)) == result.structured_content
                    out.append(result.structured_content)
        return out

    return anyio.run(run)


@pytest.fixture
def keys(make_services: ServicesFactory, backend: str) -> tuple[Services, dict[str, str]]:
    services = make_services(backend)
    services.tenants.create("acme")
    issue = services.keys.issue
    return services, {
        "main": issue("acme", "alice", "main", "agent").api_key,
        "helper": issue("acme", "alice", "helper", "agent").api_key,
        "admin": issue("acme", "alice", "boss", "tenant_admin").api_key,
    }


def test_mcp_tools_label_scope_and_refuse_without_echo(
    keys: tuple[Services, dict[str, str]],
) -> None:
    services, key = keys
    added = _call(
        services,
        key["main"],
        [
            ("memory_add", {"text": "Alice mailed the invoice to ada@example.com on Friday"}),
            ("memory_add", {"text": "The whole team prefers oat milk", "visibility": "shared"}),
            ("memory_add", {"text": f"deploy with aws key {SECRET}"}),
            ("memory_add", {"text": "Kafka partitions notes", "note_type": "knowledge"}),
            ("memory_get", {"id": "not-a-uuid"}),
            ("memory_search", {"query": "milk", "limit": 500}),
        ],
    )
    private, shared, secret, knowledge, bad_id, bad_limit = added
    (note,) = private["memories"]
    assert private["notice"] == MEMORY_NOTICE and note["scope"] == "private"
    assert "ada@example.com" not in note["text"] and note["redacted"] == ["email"]
    assert shared["memories"][0]["scope"] == "shared"
    assert secret.startswith("ERROR credential_refused:") and SECRET not in secret
    assert knowledge.startswith("ERROR invalid_request") and "topics" in knowledge
    assert bad_id.startswith("ERROR not_found")
    assert bad_limit == "ERROR invalid_request: limit: maximum" and "500" not in bad_limit

    # Another agent of the same user sees the shared note only, labelled shared.
    (found, listed, forbidden) = _call(
        services,
        key["helper"],
        [
            ("memory_search", {"query": "invoice milk", "limit": 10}),
            ("memory_list", {}),
            ("memory_delete", {"id": shared["memories"][0]["id"]}),
        ],
    )
    assert [m["scope"] for m in found["memories"]] == ["shared"]
    assert found["memories"][0]["owner"] == "main"
    assert listed["total"] == 1
    assert forbidden.startswith("ERROR permission_denied")


def test_mcp_embedded_backend_refuses_a_non_agent_key(
    keys: tuple[Services, dict[str, str]],
) -> None:
    services, key = keys
    with pytest.raises(Forbidden):
        EmbeddedBackend.authenticate(services, key["admin"])


def test_argument_problems_name_fields_and_rules_never_values() -> None:
    schema = {
        "type": "object",
        "properties": {"text": {"type": "string", "maxLength": 5}, "limit": {"type": "integer"}},
        "required": ["text"],
    }
    assert argument_problems(schema, {"text": "short"}) == []
    problems = argument_problems(schema, {"text": "far too long", "limit": "x", "agent_id": "b"})
    assert problems == ["agent_id: unknown argument", "limit: type", "text: maxLength"]
    assert argument_problems(schema, {}) == ["arguments: required"]
    optional = {
        "type": "object",
        "properties": {"note": {"anyOf": [{"type": "string", "maxLength": 3}, {"type": "null"}]}},
    }
    assert argument_problems(optional, {"note": None}) == []
    assert argument_problems(optional, {"note": "far too long"}) == ["note: maxLength"]
    assert argument_problems(optional, {"note": 7}) == ["note: anyOf"]


def test_recalled_computes_age_from_created_at_when_absent() -> None:
    class Model:
        id = "n"
        text = "t"
        source = None
        created_at = "2026-01-01T00:00:00Z"
        visibility = "shared"
        owner = "main"
        note_type = "memory"
        topics = ("a",)

    memory = recalled(Model(), now=1767225600.0 + 2 * 86_400)
    assert memory.age_days == 2.0 and memory.scope == "shared" and memory.score is None


def _amem_keys(make_services: ServicesFactory, backend: str, *, amem: bool) -> tuple[Services, str]:
    services = make_services(backend, amem=amem)
    services.tenants.create("acme")
    return services, services.keys.issue("acme", "alice", "main", "agent").api_key


def test_mcp_amem_tools_run_on_the_bound_scope(
    make_services: ServicesFactory, backend: str
) -> None:
    services, key = _amem_keys(make_services, backend, amem=True)
    EmbeddedBackend.authenticate(services, key)  # installs A-MEM (no worker, no scheduler)
    amem = installed(services)
    assert amem is not None and amem.worker is None
    # Two near-duplicates stored without the same-day merge, and one stale ephemeral note.
    services.vault.parts.hooks = None
    view = services.vault.scoped(Scope("acme", "alice", "main"))
    one = view.add("The user's sister works in finance in Northvale")
    two = view.add("The user's sister works in finance, in Northvale")
    stale = view.add("Deploy is pending until the review is confirmed, check back later")
    services.vault.parts.hooks = amem
    with services.db.session("acme") as sess:
        sess.execute(
            update(NoteRow)
            .where(NoteRow.id == stale.id)
            .values(ephemeral=1, created_at=time.time() - 8 * 86_400)
        )

    added, bad_session, merged, again, scan, gone = _call(
        services,
        key,
        [
            (
                "memory_add",
                {
                    "text": "Melanie adopted a rescue greyhound called Pixel last spring",
                    "session_id": "chat-7",
                    "occurred_at": "2026-03-14T09:30:00+01:00",
                },
            ),
            ("memory_add", {"text": "Some fact worth keeping", "session_id": "no spaces!"}),
            ("memory_consolidate", {}),
            ("memory_consolidate", {}),
            ("memory_quality_scan", {}),
            ("memory_get", {"id": two.id}),
        ],
    )
    (note,) = added["memories"]
    assert added["notice"] == MEMORY_NOTICE
    assert (note["session_id"], note["occurred_at"]) == ("chat-7", "2026-03-14T08:30:00Z")
    assert note["evolution"]["action"] == "NEW"
    assert bad_session == "ERROR invalid_request: session_id: pattern"
    assert merged == {
        "status": "done",
        "tool": "memory_consolidate",
        "reason": None,
        "message": "Found 1 groups of near-duplicates; wrote 1 relations.",
        "groups": 1,
        "related": 1,
    }
    assert (again["groups"], again["related"]) == (0, 0)
    assert scan["status"] == "done" and scan["tool"] == "memory_quality_scan"
    assert scan["flagged"] == [{"id": stale.id, "reasons": ["expired_ephemeral"]}]
    assert "review" not in json.dumps(scan)  # ids and reasons only: no memory text
    (kept,) = gone["memories"]  # a restatement keeps its text, related to the first
    assert kept["id"] == two.id and kept["relations"] == {"duplicate_of": [one.id]}
    assert view.get(one.id) and "low_quality" in view.get(stale.id).flags


def test_mcp_amem_tools_are_unavailable_when_amem_is_off(
    make_services: ServicesFactory, backend: str
) -> None:
    services, key = _amem_keys(make_services, backend, amem=False)
    added, merged, scan = _call(
        services,
        key,
        [
            ("memory_add", {"text": "The user keeps bees in the garden", "session_id": "s1"}),
            ("memory_consolidate", {}),
            ("memory_quality_scan", {}),
        ],
    )
    assert installed(services) is None
    assert added["memories"][0]["session_id"] == "s1"
    assert added["memories"][0]["evolution"] is None
    for result, tool in ((merged, "memory_consolidate"), (scan, "memory_quality_scan")):
        assert result["status"] == "unavailable" and result["tool"] == tool
        assert result["reason"] == "amem_off" and "MEMVAULT_AMEM=off" in result["message"]
    assert (merged["groups"], merged["related"], scan["flagged"]) == (0, 0, [])


def _remote_tools(handle: Any, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    """Tool calls through `RemoteBackend` on an SDK client whose server is `handle`."""
    sdk = SdkClient("http://mv.test", "mvk_x", transport=httpx.MockTransport(handle), retries=0)
    backend = RemoteBackend(sdk)

    async def run() -> list[Any]:
        async with Client(build_server(backend)) as client:
            return [(await client.call_tool(tool, args)).structured_content for tool, args in calls]

    try:
        return anyio.run(run)
    finally:
        backend.close()


def test_mcp_remote_amem_tools_map_the_server_answers() -> None:
    seen: list[httpx.Request] = []

    def amem_on(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        if request.url.path == "/v1/consolidate":
            return httpx.Response(200, json={"groups": 2, "related": 3})
        return httpx.Response(200, json={"flagged": [{"id": "n1", "reasons": ["too_short"]}]})

    merged, scan = _remote_tools(amem_on, [("memory_consolidate", {}), ("memory_quality_scan", {})])
    assert (merged["status"], merged["groups"], merged["related"]) == ("done", 2, 3)
    assert scan["flagged"] == [{"id": "n1", "reasons": ["too_short"]}]
    assert all(r.method == "POST" and r.headers["idempotency-key"] for r in seen)

    def amem_off(request: httpx.Request) -> httpx.Response:
        body = {"error": {"code": "conflict", "message": "A-MEM is off on this server"}}
        return httpx.Response(409, json=body)

    def too_old(request: httpx.Request) -> httpx.Response:
        return httpx.Response(404, json={"error": {"code": "not_found", "message": "Not Found"}})

    for handle in (amem_off, too_old):
        results = _remote_tools(handle, [("memory_consolidate", {}), ("memory_quality_scan", {})])
        assert [(r["status"], r["reason"]) for r in results] == [("unavailable", "amem_off")] * 2

    def broken(request: httpx.Request) -> httpx.Response:
        return httpx.Response(500, json={"error": {"code": "internal_error", "message": "boom"}})

    sdk = SdkClient("http://mv.test", "mvk_x", transport=httpx.MockTransport(broken), retries=0)
    sdk_backend = RemoteBackend(sdk)
    with pytest.raises(BackendError) as failed:
        sdk_backend.consolidate()
    assert failed.value.code == "internal_error" and not isinstance(failed.value, AmemOff)
    sdk_backend.close()
