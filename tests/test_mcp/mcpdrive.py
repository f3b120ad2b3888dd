"""Drive `memvault mcp` over stdio with the `mcp` SDK's own client (`stdio_client` +
`ClientSession`), as an MCP host would."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.types import CallToolResult, TextContent

from tests.serving import clean_env

SCOPE_FIELDS = {"tenant", "tenant_id", "user", "user_id", "agent", "agent_id", "scope", "namespace"}


@asynccontextmanager
async def mcp_session(api_key: str, *argv: str, **env: str) -> AsyncIterator[ClientSession]:
    """A started `memvault mcp ARGV` for `api_key`, behind an initialized client session."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "memvault.cli", "mcp", *argv],
        env=clean_env(MEMVAULT_API_KEY=api_key, **env),
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


async def call(session: ClientSession, tool: str, **arguments: Any) -> CallToolResult:
    result = await session.call_tool(tool, arguments)
    assert isinstance(result, CallToolResult)
    return result


async def data(session: ClientSession, tool: str, **arguments: Any) -> dict[str, Any]:
    """A successful call's structured result (which the text content repeats as JSON)."""
    result = await call(session, tool, **arguments)
    assert not result.is_error, error_text(result)
    assert result.structured_content is not None
    text = result.content[0]
    assert isinstance(text, TextContent)
    assert json.loads(text.text) == result.structured_content
    return dict(result.structured_content)


def error_text(result: CallToolResult) -> str:
    return " ".join(c.text for c in result.content if isinstance(c, TextContent))


def schema_properties(schema: dict[str, Any]) -> set[str]:
    """Every property name anywhere in a JSON schema (nested objects and $defs included)."""
    names: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            props = node.get("properties")
            if isinstance(props, dict):
                names.update(props)
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(schema)
    return names
