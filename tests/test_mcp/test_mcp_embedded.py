"""`memvault mcp --embedded` over stdio, driven by the `mcp` SDK's client: the tool list (no
scope field in any schema), add, search wrapped as data, refusals, scope isolation, and the A-MEM
tools (`unavailable` with MEMVAULT_AMEM=off, run with it on)."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from memvault.api.schemas import MEMORY_NOTICE
from memvault.mcp import TOOL_NAMES
from tests.conftest import ServicesFactory
from tests.test_mcp.mcpdrive import (
    SCOPE_FIELDS,
    call,
    data,
    error_text,
    mcp_session,
    schema_properties,
)

pytestmark = pytest.mark.slow

FACT = "The staging database lives on the blue cluster in Frankfurt"
SECRET = "ghp_" + "Zq8XvL2mN4pR7sT1uW3yB5dF6gH9jK0aCe"


def _keys(make_services: ServicesFactory, data_dir: Path) -> tuple[str, str]:
    """Two agent keys of two users of one tenant, made before the MCP server locks the dir."""
    services = make_services(data_dir=data_dir)
    try:
        services.tenants.create("acme")
        alice = services.keys.issue("acme", "alice", "main", "agent").api_key
        bob = services.keys.issue("acme", "bob", "main", "agent").api_key
    finally:
        services.close()
    return alice, bob


def test_mcp_embedded_tools_add_search_and_isolation(
    make_services: ServicesFactory, tmp_path: Path
) -> None:
    data_dir = tmp_path / "data"
    alice, bob = _keys(make_services, data_dir)
    argv = ("--embedded", "--data-dir", str(data_dir))

    async def as_alice() -> str:
        async with mcp_session(alice, *argv) as session:
            tools = (await session.list_tools()).tools
            assert sorted(t.name for t in tools) == sorted(TOOL_NAMES)
            for tool in tools:
                assert not schema_properties(tool.input_schema) & SCOPE_FIELDS, tool.name

            added = await data(session, "memory_add", text=FACT, source="chat")
            assert added["notice"] == MEMORY_NOTICE
            (note,) = added["memories"]
            assert (note["text"], note["source"], note["scope"]) == (FACT, "chat", "private")

            found = await data(session, "memory_search", query="where is the staging database")
            assert found["notice"] == MEMORY_NOTICE
            assert found["kind"] == "memvault.recalled_memory"
            hit = found["memories"][0]
            assert hit["id"] == note["id"] and hit["text"] == FACT
            assert hit["scope"] == "private" and hit["owner"] == "main"
            assert hit["source"] == "chat" and 0 <= hit["age_days"] < 1

            listed = await data(session, "memory_list")
            assert listed["total"] == 1 and listed["memories"][0]["id"] == note["id"]

            brief = await data(session, "memory_add", text="A short-lived reminder about lunch")
            brief_id = brief["memories"][0]["id"]
            got = await data(session, "memory_get", id=brief_id)
            assert got["memories"][0]["text"] == "A short-lived reminder about lunch"
            deleted = await data(session, "memory_delete", id=brief_id)
            assert deleted == {"deleted": brief_id, "purged": False}
            assert (await data(session, "memory_list"))["total"] == 1

            refused = await call(session, "memory_add", text=f"my github token is {SECRET}")
            assert refused.is_error and "credential_refused" in error_text(refused)
            assert SECRET not in error_text(refused)

            scoped = await call(session, "memory_search", query="blue cluster", user_id="bob")
            assert scoped.is_error  # refused, never silently dropped nor used as a scope
            assert error_text(scoped).endswith("invalid_request: user_id: unknown argument")
            long_text = "blue cluster notes " * 2000
            too_long = await call(session, "memory_add", text=long_text, tenant_id="other")
            assert too_long.is_error
            assert "tenant_id: unknown argument" in error_text(too_long)
            assert "text: maxLength" in error_text(too_long)
            assert "blue cluster" not in error_text(too_long)

            for tool in ("memory_consolidate", "memory_quality_scan"):  # MEMVAULT_AMEM=off
                answer = await data(session, tool)
                assert answer["status"] == "unavailable" and answer["tool"] == tool
                assert answer["reason"] == "amem_off"
            return str(note["id"])

    async def as_bob(alice_note: str) -> None:
        async with mcp_session(bob, *argv, MEMVAULT_AMEM="on") as session:
            found = await data(session, "memory_search", query="where is the staging database")
            assert found["memories"] == []
            assert (await data(session, "memory_list"))["total"] == 0
            missing = await call(session, "memory_get", id=alice_note)
            assert missing.is_error and "not_found" in error_text(missing)
            gone = await call(session, "memory_delete", id=alice_note)
            assert gone.is_error and "not_found" in error_text(gone)

            # With A-MEM on, the maintenance tools run on Bob's own scope only.
            added = await data(
                session, "memory_add", text="Bob waters the fern on Mondays", session_id="chat-1"
            )
            (note,) = added["memories"]
            assert note["session_id"] == "chat-1" and note["evolution"]["action"] == "NEW"
            merged = await data(session, "memory_consolidate")
            assert (merged["status"], merged["groups"], merged["related"]) == ("done", 0, 0)
            scan = await data(session, "memory_quality_scan")
            assert scan["status"] == "done" and scan["flagged"] == []

    alice_note = anyio.run(as_alice)
    anyio.run(as_bob, alice_note)
