"""The SDK's A-MEM calls: against a live server with A-MEM on (sync and async), against one with
it off (`ConflictError`), and the exact requests they send (idempotency keys on the writes, the
new add and search fields, notes of an older server that lack the A-MEM fields)."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta, timezone

import httpx
import pytest

from memvault.client import (
    AsyncClient,
    Client,
    ConflictError,
    Consolidation,
    DialogueResult,
    QualityFlag,
)
from tests.test_client.conftest import Tenant

DIALOGUE = [
    {"role": "user", "content": "I live in Riverstone and I work as a carpenter."},
    {"role": "tool", "content": "api_key=sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCD"},
    {"role": "assistant", "content": "Noted, you are a carpenter in Riverstone."},
]

OLD_NOTE = {
    "id": "0192f0c4-8a41-7b1e-9c57-3f6d2a1b0e99",
    "text": "The user keeps bees",
    "visibility": "private",
    "owner": "assistant",
    "readers": [],
    "writers": ["assistant"],
    "note_type": "memory",
    "topics": [],
    "source": None,
    "created_at": "2026-01-01T00:00:00Z",
    "updated_at": "2026-01-01T00:00:00Z",
    "flags": [],
    "redacted": [],
}


def test_amem_calls_against_a_live_server(amem_tenant: Tenant) -> None:
    with Client(amem_tenant.base_url, amem_tenant.agent_key) as mv:
        when = datetime(2026, 3, 14, 9, 30, tzinfo=timezone(timedelta(hours=1)))
        pet = mv.add(
            "Melanie adopted a rescue greyhound called Pixel last spring",
            session_id="chat-1",
            occurred_at=when,
        )
        assert pet.session_id == "chat-1" and pet.enrichment == "done"
        assert pet.occurred_at == "2026-03-14T08:30:00Z"
        assert pet.category and pet.keywords and pet.evolution is not None
        walks = mv.add(
            "Pixel the greyhound loves long walks on the beach with Melanie", session_id="chat-1"
        )
        links = mv.links(walks.id)
        assert pet.id in [link.id for link in links]
        assert all(link.kind in ("link", "sequence") for link in links)

        for fusion in ("score", "rrf"):
            hits = mv.search("Pixel the greyhound", mode="hybrid", fusion=fusion)
            assert {h.id for h in hits[:2]} == {pet.id, walks.id}

        dry = mv.dialogue(DIALOGUE, dry_run=True)
        assert isinstance(dry, DialogueResult) and dry.dry_run and dry.decisions
        assert mv.list().total == 2  # a dry run writes nothing
        real = mv.dialogue(DIALOGUE)
        assert not real.dry_run and "NEW" in [d.action for d in real.decisions]
        assert all("sk-proj" not in n.text for n in mv.iter_notes())

        report = mv.consolidate()
        assert isinstance(report, Consolidation) and report.groups >= 0
        assert mv.consolidate() == Consolidation(groups=0, related=0)  # idempotent
        flagged = mv.quality_scan()
        assert all(isinstance(f, QualityFlag) for f in flagged)
        review = mv.quality_review()
        assert review.startswith("---") and "count:" in review


def test_versions_through_the_sdk_keep_their_text_and_answer_as_of(amem_tenant: Tenant) -> None:
    """A later session's new value supersedes the older note: the search shows the current one
    marking its predecessor; `as_of` before the change and `include_history` show the old one."""
    with Client(amem_tenant.base_url, amem_tenant.agent_key) as mv:
        green = mv.add("Bob's favourite colour is green", occurred_at="2026-01-10T10:00:00Z")
        blue = mv.add("Bob's favourite colour is blue", occurred_at="2026-03-02T10:00:00Z")
        assert blue.evolution is not None and blue.evolution.action == "EVOLVE"
        assert mv.get(green.id).text == "Bob's favourite colour is green"  # kept whole
        hits = mv.search("what is Bob's favourite colour")
        assert hits[0].id == blue.id and hits[0].relations == {"supersedes": [green.id]}
        assert green.id not in [h.id for h in hits] and hits[0].valid_to is None
        then = mv.search("what is Bob's favourite colour", as_of="2026-02-01T00:00:00Z")
        assert then[0].id == green.id and blue.id not in [h.id for h in then]
        history = mv.search("what is Bob's favourite colour", include_history=True)
        old = next(h for h in history if h.id == green.id)
        assert old.valid_to == "2026-03-02T10:00:00Z"
        assert old.relations == {"superseded_by": [blue.id]}


def test_async_amem_calls(amem_tenant: Tenant) -> None:
    async def scenario() -> None:
        async with AsyncClient(amem_tenant.base_url, amem_tenant.agent_key) as amv:
            note = await amv.add(
                "Caroline paints lighthouses at dawn", occurred_at="2026-02-01T07:00:00+00:00"
            )
            assert note.occurred_at == "2026-02-01T07:00:00Z"
            assert await amv.links(note.id) == []
            hits = await amv.search("who paints lighthouses", fusion="rrf")
            assert hits[0].id == note.id
            result = await amv.dialogue(DIALOGUE, dry_run=True)
            assert result.dry_run and result.decisions
            assert await amv.consolidate() == Consolidation(groups=0, related=0)
            assert await amv.quality_scan() == []
            assert (await amv.quality_review()).startswith("---")

    asyncio.run(scenario())


def test_amem_off_server_answers_conflict(tenant: Tenant) -> None:
    with Client(tenant.base_url, tenant.agent_key) as mv:
        note = mv.add("The user keeps bees in the garden", session_id="s1")
        assert note.session_id == "s1" and note.enrichment is None and note.evolution is None
        assert mv.links(note.id) == []  # links are not A-MEM's: they always answer
        calls = (
            lambda: mv.dialogue(DIALOGUE),
            mv.consolidate,
            mv.quality_scan,
            mv.quality_review,
        )
        for call in calls:
            with pytest.raises(ConflictError) as off:
                call()
            assert off.value.code == "conflict" and off.value.status == 409


def _recording(
    answers: dict[str, httpx.Response],
) -> tuple[httpx.MockTransport, list[httpx.Request]]:
    seen: list[httpx.Request] = []

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return answers[request.url.path]

    return httpx.MockTransport(handle), seen


def test_requests_carry_the_new_fields_and_idempotency_keys() -> None:
    answers = {
        "/v1/memories": httpx.Response(201, json=OLD_NOTE),
        "/v1/memories/search": httpx.Response(200, json={"results": []}),
        "/v1/dialogues": httpx.Response(200, json={"decisions": [], "dry_run": True}),
        "/v1/consolidate": httpx.Response(200, json={"groups": 1, "related": 2}),
        "/v1/quality/scan": httpx.Response(200, json={"flagged": [{"id": "n1", "reasons": []}]}),
        "/v1/quality/review": httpx.Response(200, text="---\ncount: 0\n---\n"),
        f"/v1/memories/{OLD_NOTE['id']}/links": httpx.Response(
            200, json={"links": [{"id": "n2", "kind": "sequence", "strength": None}]}
        ),
    }
    transport, seen = _recording(answers)
    with Client("http://mv.test", "mvk_x", transport=transport, retries=0) as mv:
        # A note from a server older than A-MEM (no A-MEM fields) still parses.
        note = mv.add("The user keeps bees", session_id="chat-9", occurred_at="2026-01-01T10:00Z")
        assert note.keywords == [] and note.category is None and note.session_id is None
        with pytest.raises(ValueError, match="timezone"):
            mv.add("naive time", occurred_at=datetime(2026, 1, 1))
        mv.add("aware time", occurred_at=datetime(2026, 1, 1, tzinfo=UTC))
        mv.search("bees")
        mv.search("bees", mode="hybrid", fusion="rrf")
        mv.dialogue([{"role": "user", "content": "hi there"}], dry_run=True, idempotency_key="d-1")
        assert mv.consolidate() == Consolidation(groups=1, related=2)
        assert mv.quality_scan() == [QualityFlag(id="n1", reasons=[])]
        assert mv.quality_review() == "---\ncount: 0\n---\n"
        (link,) = mv.links(OLD_NOTE["id"])
        assert (link.id, link.kind, link.strength) == ("n2", "sequence", None)

    bodies = [json.loads(r.content) if r.content else None for r in seen]
    add, aware, plain, fused, dialogue = bodies[:5]
    assert add["session_id"] == "chat-9" and add["occurred_at"] == "2026-01-01T10:00Z"
    assert aware["occurred_at"] == "2026-01-01T00:00:00Z" and "session_id" not in aware
    assert "fusion" not in plain and fused["fusion"] == "rrf"
    assert dialogue == {"messages": [{"role": "user", "content": "hi there"}], "dry_run": True}
    keys = {r.url.path: r.headers.get("idempotency-key") for r in seen}
    assert keys["/v1/dialogues"] == "d-1"
    assert keys["/v1/consolidate"] and keys["/v1/quality/scan"]  # writes: fresh UUIDv4 keys
    assert keys["/v1/memories/search"] is None and keys["/v1/quality/review"] is None
    assert keys[f"/v1/memories/{OLD_NOTE['id']}/links"] is None


def test_a_retried_consolidate_resends_its_key() -> None:
    attempts: list[httpx.Request] = []

    def handle(request: httpx.Request) -> httpx.Response:
        attempts.append(request)
        if len(attempts) == 1:
            return httpx.Response(503, json={"error": {"code": "unavailable", "message": "busy"}})
        return httpx.Response(200, json={"groups": 0, "related": 0})

    with Client("http://mv.test", "mvk_x", transport=httpx.MockTransport(handle), backoff=0) as mv:
        mv.consolidate()
    first, second = (r.headers["idempotency-key"] for r in attempts)
    assert first == second
