"""Keyset pagination of `GET /v1/memories`: a walk by the SDK's `iter_notes` (sync and async)
that deletes notes through REST while it runs yields every note alive for the whole walk once;
a bad or foreign cursor is a clean 422. On SQLite and, when MEMVAULT_TEST_DATABASE_URL is set,
on PostgreSQL."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from memvault.client import AsyncClient, Client, InvalidRequestError
from tests.apiclient import Api
from tests.conftest import ServicesFactory

PAGE = 5
NOTES = 20


@pytest.fixture
def api(make_services: ServicesFactory, backend: str) -> Api:
    return Api(make_services(backend))


class ViaTestClient(httpx.BaseTransport):
    """The SDK's requests sent through the app's TestClient (in process, no socket)."""

    def __init__(self, api: Api) -> None:
        self.api = api

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        r = self.api.client.request(
            request.method, str(request.url), headers=request.headers, content=request.read()
        )
        return httpx.Response(r.status_code, headers=r.headers, content=r.content)


def _fill(api: Api, key: str) -> list[str]:
    ids = [
        api.add(key, f"The user noted fact number {i} about the garden")["id"] for i in range(NOTES)
    ]
    return ids[::-1]  # newest first


def _delete(api: Api, key: str, note_id: str) -> None:
    assert api.call("DELETE", f"/v1/memories/{note_id}", key).status_code == 204


def test_sync_walk_survives_deletes(api: Api) -> None:
    key = api.agent_key("acme", "alice", "bot")
    newest_first = _fill(api, key)
    deleted: set[str] = set()
    yielded: list[str] = []
    with Client("http://testserver", key, transport=ViaTestClient(api)) as mv:
        for note in mv.iter_notes(page_size=PAGE):
            yielded.append(note.id)
            if note.id not in deleted:  # delete the note just read: every later one moves up
                _delete(api, key, note.id)
                deleted.add(note.id)
    assert yielded == newest_first  # each exactly once, in order, none skipped


def test_async_walk_survives_deletes(api: Api) -> None:
    key = api.agent_key("acme", "alice", "bot")
    newest_first = _fill(api, key)
    app = api.client.app

    async def walk() -> list[str]:
        out: list[str] = []
        transport = httpx.ASGITransport(app=app)  # type: ignore[arg-type]
        async with AsyncClient("http://testserver", key, transport=transport) as mv:
            async for note in mv.iter_notes(page_size=PAGE):
                out.append(note.id)
                await asyncio.to_thread(_delete, api, key, note.id)
        return out

    assert asyncio.run(walk()) == newest_first


def test_cursor_pages_and_refusals(api: Api) -> None:
    key = api.agent_key("acme", "alice", "bot")
    other = api.agent_key("acme", "alice", "helper")
    newest_first = _fill(api, key)
    first = api.call("GET", "/v1/memories", key, params={"limit": PAGE}).json()
    assert [n["id"] for n in first["items"]] == newest_first[:PAGE]
    cursor = first["next_cursor"]
    assert isinstance(cursor, str) and first["total"] == NOTES
    second = api.call("GET", "/v1/memories", key, params={"limit": PAGE, "cursor": cursor})
    assert [n["id"] for n in second.json()["items"]] == newest_first[PAGE : 2 * PAGE]
    last = api.call("GET", "/v1/memories", key, params={"limit": NOTES}).json()
    assert last["next_cursor"] is None

    flipped = cursor[:-2] + ("A" if cursor[-2] != "A" else "B") + cursor[-1]
    for bad in (flipped, "x", "!!!!", cursor + "AAAA", "A" * 120):
        r = api.call("GET", "/v1/memories", key, params={"cursor": bad})
        assert r.status_code == 422 and r.json()["error"]["code"] == "invalid_request", bad
    # another agent's cursor positions nothing in this list: refused, not followed
    r = api.call("GET", "/v1/memories", other, params={"cursor": cursor})
    assert r.status_code == 422
    r = api.call("GET", "/v1/memories", key, params={"cursor": cursor, "offset": 3})
    assert r.status_code == 422
    with (
        Client("http://testserver", key, transport=ViaTestClient(api)) as mv,
        pytest.raises(InvalidRequestError),
    ):
        mv.list(cursor="x")


def test_mcp_memory_list_walks_by_cursor(api: Api) -> None:
    import anyio
    from mcp import Client as McpClient

    from memvault.mcp import EmbeddedBackend, build_server

    key = api.agent_key("acme", "alice", "bot")
    newest_first = _fill(api, key)
    backend = EmbeddedBackend.authenticate(api.services, key)

    async def walk() -> list[str]:
        out: list[str] = []
        cursor: str | None = None
        async with McpClient(build_server(backend)) as client:
            bad = await client.call_tool("memory_list", {"cursor": "x"})
            assert bad.is_error  # a cursor that is not one is refused, not followed
            while True:
                args: dict[str, object] = {"limit": PAGE}
                if cursor is not None:
                    args["cursor"] = cursor
                result = await client.call_tool("memory_list", args)
                assert not result.is_error and result.structured_content is not None
                page = result.structured_content
                for memory in page["memories"]:
                    out.append(memory["id"])
                    await anyio.to_thread.run_sync(_delete, api, key, memory["id"])
                cursor = page["next_cursor"]
                if cursor is None:
                    return out

    assert anyio.run(walk) == newest_first


def test_rest_bearer_scheme_in_lower_case(api: Api) -> None:
    key = api.agent_key("acme", "alice", "bot")
    for scheme in ("bearer", "BEARER", "Bearer"):
        r = api.client.get("/v1/memories", headers={"Authorization": f"{scheme} {key}"})
        assert r.status_code == 200, scheme
