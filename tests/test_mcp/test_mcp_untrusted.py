"""`memvault mcp` with `MEMVAULT_SESSION_ID`: while the runtime has the session marked (with
`memvault untrusted`, a command of the runtime, not a tool), every memory read tool answers
`session_untrusted` and returns no memory."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import anyio
import httpx
import pytest

from memvault.mcp import TOOL_NAMES
from tests.serving import clean_env, free_port, start_serve, stop, wait_healthy
from tests.test_mcp.mcpdrive import call, data, error_text, mcp_session

pytestmark = pytest.mark.slow

OPERATOR_KEY = "mvop_mcp-untrusted-operator-key-abcd"
ADDRESS = "Alice lives at 12 Rosemary Lane, Springfield"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """A live `memvault serve` and an agent key of tenant acme: (url, key)."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    proc = start_serve(
        tmp_path_factory.mktemp("mcp-untrusted") / "data",
        port,
        clean_env(MEMVAULT_OPERATOR_KEY=OPERATOR_KEY),
    )
    try:
        wait_healthy(url, proc)
        with httpx.Client(base_url=url, timeout=60) as http:
            op = {"Authorization": f"Bearer {OPERATOR_KEY}"}
            made = http.post("/v1/operator/tenants", json={"tenant_id": "acme"}, headers=op)
            admin = {"Authorization": f"Bearer {made.json()['api_key']}"}
            issued = http.post(
                "/v1/admin/keys", json={"user_id": "alice", "agent_id": "main"}, headers=admin
            )
            yield url, str(issued.json()["api_key"])
    finally:
        stop(proc)


def runtime_control(url: str, key: str, *args: str) -> subprocess.CompletedProcess[str]:
    """What the agent's runtime runs: `memvault untrusted ...` with the agent key."""
    return subprocess.run(
        [sys.executable, "-m", "memvault.cli", "untrusted", *args, "--url", url],
        env=clean_env(MEMVAULT_API_KEY=key),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_mcp_reads_answer_session_untrusted_while_the_runtime_has_the_session_marked(
    server: tuple[str, str],
) -> None:
    url, key = server

    async def scenario() -> None:
        async with mcp_session(key, "--url", url, MEMVAULT_SESSION_ID="chat-1") as mcp:
            tools = sorted(t.name for t in (await mcp.list_tools()).tools)
            assert tools == sorted(TOOL_NAMES)  # no tool the model could call to unmark
            assert not [t for t in tools if "untrusted" in t or "session" in t]
            note = (await data(mcp, "memory_add", text=ADDRESS))["memories"][0]["id"]
            assert (await data(mcp, "memory_get", id=note))["memories"][0]["id"] == note

            done = runtime_control(url, key, "chat-1", "--reason", "read a web page")
            assert done.returncode == 0, done.stderr
            for tool, args in (
                ("memory_search", {"query": "where does Alice live"}),
                ("memory_list", {}),
                ("memory_get", {"id": note}),
            ):
                result = await call(mcp, tool, **args)
                assert result.is_error, tool
                text = error_text(result)
                assert "session_untrusted" in text and "Rosemary" not in text, tool

            # Another MCP process of the same key in another session still reads.
            async with mcp_session(key, "--url", url, MEMVAULT_SESSION_ID="chat-2") as other:
                assert (await data(other, "memory_get", id=note))["memories"][0]["id"] == note

            ended = runtime_control(url, key, "chat-1", "--end")
            assert ended.returncode == 0, ended.stderr
            assert (await data(mcp, "memory_get", id=note))["memories"][0]["id"] == note

    anyio.run(scenario)


def test_mcp_session_id_is_refused_when_malformed_or_embedded(server: tuple[str, str]) -> None:
    url, key = server
    for argv, env_session in ((("--url", url), "has space"), (("--embedded",), "chat-1")):
        done = subprocess.run(
            [sys.executable, "-m", "memvault.cli", "mcp", *argv],
            env=clean_env(MEMVAULT_API_KEY=key, MEMVAULT_SESSION_ID=env_session),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 1 and "MEMVAULT_SESSION_ID" in done.stderr, done.stderr
