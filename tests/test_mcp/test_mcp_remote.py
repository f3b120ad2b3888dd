"""`memvault mcp` against a live `memvault serve` (through the SDK), driven by the `mcp` SDK's
client: over stdio, scope isolation between users and between agents of one user; a refused key
stops the server at start in one line; and `--http` (streamable HTTP) behind its bearer gate."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass

import anyio
import httpx
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from memvault.api.schemas import MEMORY_NOTICE
from memvault.mcp import TOOL_NAMES
from tests.serving import clean_env, free_port, start_serve, stop, wait_healthy
from tests.test_mcp.mcpdrive import SCOPE_FIELDS, data, mcp_session, schema_properties

pytestmark = pytest.mark.slow

OPERATOR_KEY = "mvop_mcp-test-operator-key-abcdefgh"
PRIVATE = "Alice keeps her climbing shoes in the blue locker"
SHARED = "Alice's team standup moved to the library on Thursdays"


@dataclass
class Server:
    url: str
    admin: str
    alice: str
    alice_helper: str
    bob: str


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A live `memvault serve` (A-MEM on) with tenant acme and three agent keys."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    data_dir = tmp_path_factory.mktemp("mcp-remote") / "data"
    env = clean_env(MEMVAULT_OPERATOR_KEY=OPERATOR_KEY, MEMVAULT_AMEM="on")
    proc = start_serve(data_dir, port, env)
    try:
        wait_healthy(url, proc)
        with httpx.Client(base_url=url, timeout=60) as http:
            made = http.post(
                "/v1/operator/tenants",
                json={"tenant_id": "acme"},
                headers={"Authorization": f"Bearer {OPERATOR_KEY}"},
            )
            assert made.status_code == 201, made.text
            admin = made.json()["api_key"]

            def key(user: str, agent: str) -> str:
                issued = http.post(
                    "/v1/admin/keys",
                    json={"user_id": user, "agent_id": agent},
                    headers={"Authorization": f"Bearer {admin}"},
                )
                assert issued.status_code == 201, issued.text
                return str(issued.json()["api_key"])

            yield Server(
                url, admin, key("alice", "main"), key("alice", "helper"), key("bob", "main")
            )
    finally:
        stop(proc)


def test_mcp_remote_add_search_and_scope_isolation(server: Server) -> None:
    remote = ("--url", server.url)

    async def scenario() -> None:
        async with (
            mcp_session(server.alice, *remote) as alice,
            mcp_session(server.bob, *remote) as bob,
            mcp_session(server.alice_helper, *remote) as helper,
        ):
            tools = (await alice.list_tools()).tools
            assert sorted(t.name for t in tools) == sorted(TOOL_NAMES)
            assert all(not schema_properties(t.input_schema) & SCOPE_FIELDS for t in tools)

            mine = (await data(alice, "memory_add", text=PRIVATE, source="chat"))["memories"][0]
            ours = await data(alice, "memory_add", text=SHARED, visibility="shared")
            assert mine["scope"] == "private" and ours["memories"][0]["scope"] == "shared"

            found = await data(alice, "memory_search", query="where are the climbing shoes")
            assert found["notice"] == MEMORY_NOTICE
            top = found["memories"][0]
            assert (top["id"], top["text"], top["source"]) == (mine["id"], PRIVATE, "chat")
            assert top["scope"] == "private" and top["owner"] == "main" and top["age_days"] >= 0

            # Another user sees nothing of Alice's; her other agent sees only the shared note.
            for query in ("climbing shoes locker", "team standup library"):
                assert (await data(bob, "memory_search", query=query))["memories"] == []
            assert (await data(bob, "memory_list"))["total"] == 0
            seen = await data(helper, "memory_search", query="climbing shoes standup", limit=10)
            assert [m["text"] for m in seen["memories"]] == [SHARED]
            assert seen["memories"][0]["scope"] == "shared"
            assert (await data(helper, "memory_list"))["total"] == 1
            assert (await data(alice, "memory_list"))["total"] == 2

            # The A-MEM tools run through the SDK on the key's own scope: ids and counts only.
            merged = await data(alice, "memory_consolidate")
            assert (merged["status"], merged["tool"]) == ("done", "memory_consolidate")
            assert (merged["groups"], merged["related"]) == (0, 0)
            scan = await data(helper, "memory_quality_scan")
            assert scan["status"] == "done" and scan["flagged"] == []
            dated = await data(
                bob,
                "memory_add",
                text="Bob ran the Lisbon half marathon",
                session_id="run-log",
                occurred_at="2026-03-01T08:00:00Z",
            )
            (note,) = dated["memories"]
            assert (note["session_id"], note["occurred_at"]) == ("run-log", "2026-03-01T08:00:00Z")
            assert note["evolution"]["action"] == "NEW"

    anyio.run(scenario)


def _mcp_exit(key: str, url: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "memvault.cli", "mcp", "--url", url],
        env=clean_env(MEMVAULT_API_KEY=key),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_mcp_refused_key_or_no_server_stops_at_start_in_one_line(server: Server) -> None:
    forged = server.alice[:-4] + "AAAA"
    nowhere = f"http://127.0.0.1:{free_port()}"
    for key, url, expected in (
        (forged, server.url, "refused"),
        (server.admin, server.url, "not an agent key"),
        (server.alice, nowhere, "cannot reach the memvault server"),
    ):
        done = _mcp_exit(key, url)
        assert done.returncode == 1 and done.stdout == ""
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and expected in lines[0] and "Traceback" not in done.stderr
        assert key not in done.stderr


def test_mcp_http_serves_behind_the_bearer_gate(server: Server) -> None:
    port = free_port()
    endpoint = f"http://127.0.0.1:{port}/mcp"
    proc = subprocess.Popen(
        [sys.executable, "-m", "memvault.cli", "mcp", "--http", "--port", str(port)],
        env=clean_env(MEMVAULT_API_KEY=server.bob, MEMVAULT_URL=server.url),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                refused = httpx.post(endpoint, json={}, timeout=5)
                break
            except httpx.TransportError:
                assert proc.poll() is None and time.monotonic() < deadline
                time.sleep(0.2)
        assert refused.status_code == 401

        async def scenario() -> None:
            headers = {"Authorization": f"Bearer {server.bob}"}
            async with (
                create_mcp_http_client(headers=headers) as http,
                streamable_http_client(endpoint, http_client=http) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                tools = (await session.list_tools()).tools
                assert sorted(t.name for t in tools) == sorted(TOOL_NAMES)
                added = await data(session, "memory_add", text="Bob waters the fern on Mondays")
                found = await data(session, "memory_search", query="who waters the fern")
                assert found["memories"][0]["id"] == added["memories"][0]["id"]

        anyio.run(scenario)
    finally:
        stop(proc)


def test_mcp_help_needs_no_key_and_lists_the_options() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "memvault.cli", "mcp", "--help"],
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0
    for option in (
        "--http",
        "--embedded",
        "--data-dir",
        "--url",
        "--port",
        "--allowed-host",
        "--allowed-origin",
    ):
        assert option in done.stdout


def test_mcp_http_on_all_interfaces_needs_an_allowed_host() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "memvault.cli", "mcp", "--http", "--host", "0.0.0.0"],
        env=clean_env(MEMVAULT_API_KEY="mvk_unused.0123456789abcdef.secret"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1 and "--allowed-host" in done.stderr
    assert "mvk_unused" not in done.stderr + done.stdout
