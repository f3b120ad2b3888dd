"""`client.untrusted(...)` against a live server: reads inside the block raise, and it unmarks."""

from __future__ import annotations

import asyncio

import pytest

from memvault.client import AsyncClient, Client, SessionUntrustedError
from tests.test_client.conftest import Tenant

TEXT = "Alice lives at 12 Rosemary Lane, Springfield"


def test_reads_inside_the_block_raise_and_the_session_is_unmarked_on_exit(tenant: Tenant) -> None:
    with Client(tenant.base_url, tenant.agent_key) as client:
        note = client.add(TEXT)
        with client.untrusted("chat-1", reason="summarised an external web page") as inside:
            assert inside.session_id == "chat-1"
            for read in (
                lambda: client.search("where does Alice live"),
                lambda: client.get(note.id),
                lambda: client.list(),
                lambda: client.links(note.id),
            ):
                with pytest.raises(SessionUntrustedError) as raised:
                    read()
                assert raised.value.status == 423 and "Rosemary" not in str(raised.value)
            # Another client of the same key that names no session still reads.
            with Client(tenant.base_url, tenant.agent_key) as other:
                assert other.get(note.id).id == note.id
            # ...and one that names the session is refused: the mark is on the server.
            named = Client(tenant.base_url, tenant.agent_key, session_id="chat-1")
            with named, pytest.raises(SessionUntrustedError):
                named.get(note.id)
        assert client.session_id is None
        assert client.get(note.id).id == note.id
    with Client(tenant.base_url, tenant.agent_key, session_id="chat-1") as named:
        assert named.get(note.id).id == note.id  # unmarked on exit


def test_the_block_unmarks_even_when_it_raises(tenant: Tenant) -> None:
    with Client(tenant.base_url, tenant.agent_key) as client:
        note = client.add(TEXT)
        with pytest.raises(RuntimeError), client.untrusted("chat-2", reason="an email"):
            raise RuntimeError("the agent's own failure")
    with Client(tenant.base_url, tenant.agent_key, session_id="chat-2") as named:
        assert named.get(note.id).id == note.id


def test_the_async_client_block_marks_and_unmarks(tenant: Tenant) -> None:
    async def run() -> None:
        async with AsyncClient(tenant.base_url, tenant.agent_key) as client:
            note = await client.add(TEXT)
            async with client.untrusted("chat-3", reason="a web page", ttl_s=60):
                with pytest.raises(SessionUntrustedError):
                    await client.search("where does Alice live")
                with pytest.raises(SessionUntrustedError):
                    await client.get(note.id)
            assert (await client.get(note.id)).id == note.id

    asyncio.run(run())
