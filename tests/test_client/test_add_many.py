"""`Client.add_many` / `AsyncClient.add_many` against a live server: chunks, progress, per-item
errors in place, idempotent chunks; and `memvault import` through it."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from memvault.client import AsyncClient, Client
from memvault.client import importer as importer_module
from memvault.client.errors import CredentialRefusedError, InvalidRequestError
from memvault.client.importer import Importer, read_mem0
from memvault.client.models import Note
from tests.test_client.conftest import Tenant

AWS_ID = "AKIAQWERTYUIOPASDFGH"


def total(client: Client) -> int:
    return client.list(limit=1).total


def test_add_many_chunks_reports_progress_and_answers_each_item_in_place(
    tenant: Tenant,
) -> None:
    items: list[Any] = [f"Garden fact number {i}: the roses need water" for i in range(600)]
    items[300] = {"text": f"my key is {AWS_ID}"}
    items[301] = {"text": "A fact with a bad visibility", "visibility": "public"}
    items[302] = {"text": "Alice keeps bees", "topics": ("hobbies",), "source": "chat"}
    progress: list[tuple[int, int]] = []
    with Client(tenant.base_url, tenant.agent_key) as client:
        results = client.add_many(items, on_progress=lambda d, t: progress.append((d, t)))
        assert progress == [(256, 600), (512, 600), (600, 600)]
        assert len(results) == 600
        refused, invalid, kept = results[300], results[301], results[302]
        assert isinstance(refused, CredentialRefusedError) and refused.detector
        assert AWS_ID not in str(refused) and AWS_ID not in refused.message
        assert isinstance(invalid, InvalidRequestError)
        assert not isinstance(invalid, CredentialRefusedError)
        assert "visibility" in invalid.message and "public" not in invalid.message
        assert isinstance(kept, Note) and kept.topics == ["hobbies"] and kept.source == "chat"
        notes = [r for r in results if isinstance(r, Note)]
        assert len(notes) == 598
        assert notes[0].text == items[0]
        assert client.get(notes[-1].id).text == items[-1]
        assert total(client) == 598
        with pytest.raises(InvalidRequestError):
            client.add_many(["x y z"], chunk_size=257)
        with pytest.raises(InvalidRequestError):
            client.add_many([{"text": "a b c", "user_id": "bob"}])
        assert client.add_many([]) == []


def test_add_many_with_a_key_replays_its_chunks(tenant: Tenant) -> None:
    items = [f"Kitchen fact {i}: the kettle is blue" for i in range(5)]
    with Client(tenant.base_url, tenant.agent_key) as client:
        first = client.add_many(items, chunk_size=2, idempotency_key="kitchen-import")
        again = client.add_many(items, chunk_size=2, idempotency_key="kitchen-import")
        assert [n.id for n in again] == [n.id for n in first]  # type: ignore[union-attr]
        assert total(client) == 5


def test_async_add_many_chunks_and_reports_progress(tenant: Tenant) -> None:
    items = [{"text": f"Async fact {i}: the train leaves at nine"} for i in range(250)]
    items[120] = {"text": f"token {AWS_ID}"}
    progress: list[tuple[int, int]] = []

    async def scenario() -> list[Any]:
        async with AsyncClient(tenant.base_url, tenant.agent_key) as client:
            return await client.add_many(
                items, chunk_size=100, on_progress=lambda d, t: progress.append((d, t))
            )

    results = asyncio.run(scenario())
    assert progress == [(100, 250), (200, 250), (250, 250)]
    assert isinstance(results[120], CredentialRefusedError)
    assert [isinstance(r, Note) for r in results].count(True) == 249
    with Client(tenant.base_url, tenant.agent_key) as client:
        assert total(client) == 249


def test_mem0_import_goes_through_add_many_and_a_bad_record_never_stops_it(
    tenant: Tenant, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(importer_module, "CHUNK", 4)
    memories: list[Any] = [
        {"id": f"m{i}", "memory": f"Imported fact {i}: the office plant is a fern", "user_id": "u"}
        for i in range(10)
    ]
    memories[4] = {"id": "m4", "memory": f"the deploy key is {AWS_ID}", "user_id": "u"}
    memories[5] = "not a record"
    calls: list[int] = []

    class Counting(Client):
        def add_many(self, items: Any, **kw: Any) -> Any:  # type: ignore[override]
            calls.append(len(items))
            return super().add_many(items, **kw)

    records = read_mem0({"results": memories})
    importer = Importer(
        tenant.base_url,
        api_key=tenant.agent_key,
        client_factory=lambda url, key: Counting(url, key),
    )
    advanced: list[int] = []
    report = importer.run(records, advanced.append).as_dict()
    assert sorted(calls) == [1, 4, 4]  # 9 sendable records, chunks of 4 (2 in flight)
    assert sum(advanced) == 10
    assert (report["added"], report["refused"], report["invalid"]) == (8, 1, 1)
    assert [p["index"] for p in report["problems"]] == [5, 6]
    assert report["problems"][0]["code"] == "credential_refused"
    assert AWS_ID not in str(report)
    again = importer.run(records).as_dict()
    assert (again["added"], again["present"], again["refused"]) == (0, 8, 1)
    with Client(tenant.base_url, tenant.agent_key) as client:
        assert total(client) == 8
