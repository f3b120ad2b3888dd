"""The MCP tools in-process (the SDK's in-memory client) over the embedded backend, on SQLite
and PostgreSQL: envelopes, refusals that name codes and fields but never values, shared versus
private scope labels, and the argument gate."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.types import CallToolResult, TextContent

from memvault.api.schemas import MEMORY_NOTICE
from memvault.errors import Forbidden
from memvault.mcp import EmbeddedBackend, build_server
from memvault.mcp.envelope import recalled
from memvault.mcp.gate import argument_problems
from memvault.vault.factory import Services
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
