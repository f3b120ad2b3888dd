"""The SDK against a live `memvault serve`: sync and async round trips, a retry that gets the
replayed answer, refusals and every other error mapped to its exception, admin calls with
receipt and audit-chain verification."""

from __future__ import annotations

import asyncio
import json
import uuid
from dataclasses import replace
from typing import Any

import httpx
import pytest

from memvault.client import (
    AsyncClient,
    AuthenticationError,
    Client,
    ConflictError,
    CredentialRefusedError,
    ForbiddenError,
    IdempotencyKeyReusedError,
    InvalidRequestError,
    MemvaultError,
    NotFoundError,
    Policy,
    ScreenRefusedError,
    VerificationError,
    _verify,
)
from tests.test_client.conftest import OPERATOR_KEY, Tenant

AWS_KEY_ID = "AKIA" + "QWERTYUIOPASDFGH"  # the documented shape: AKIA + 16 capitals/digits


class DropFirstWrite(httpx.BaseTransport):
    """Lets the server handle the first POST to `path`, then loses its answer (as a dropped
    connection would), so the client must retry. Records every request and response."""

    def __init__(self, path: str) -> None:
        self.inner = httpx.HTTPTransport()
        self.path = path
        self.dropped: list[httpx.Request] = []
        self.seen: list[tuple[httpx.Request, httpx.Response]] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = self.inner.handle_request(request)
        response.read()
        if request.method == "POST" and request.url.path == self.path and not self.dropped:
            self.dropped.append(request)
            raise httpx.ReadError("connection reset after the server answered", request=request)
        self.seen.append((request, response))
        return response

    def close(self) -> None:
        self.inner.close()


def test_client_sync_round_trip_every_agent_call(tenant: Tenant) -> None:
    with Client(tenant.base_url, tenant.agent_key) as mv:
        first = mv.add("The user keeps bees in the garden", topics=["hobby"], source="chat")
        second = mv.add("The user drinks green tea every morning")
        assert first.text == "The user keeps bees in the garden"
        assert (first.topics, first.source, first.owner) == (["hobby"], "chat", "assistant")
        assert mv.get(first.id) == first

        hits = mv.search("bees in the garden", limit=3)
        assert hits and hits[0].id == first.id and hits[0].scope == "private"
        assert [h.id for h in mv.search("bees", topics=["hobby"])] == [first.id]

        page = mv.list(limit=1)
        assert page.total == 2 and len(page.items) == 1
        assert {n.id for n in mv.iter_notes(page_size=1)} == {first.id, second.id}

        updated = mv.update(second.id, text="The user drinks black tea", topics=["drinks"])
        assert (updated.text, updated.topics) == ("The user drinks black tea", ["drinks"])
        mv.link(first.id, second.id)

        mv.delete(second.id)
        with pytest.raises(NotFoundError) as missing:
            mv.get(second.id)
        assert missing.value.status == 404 and missing.value.code == "not_found"
        mv.delete(first.id, purge=True)
        assert mv.list().total == 0


def test_async_client_round_trip(tenant: Tenant) -> None:
    async def scenario() -> None:
        async with AsyncClient(tenant.base_url, tenant.agent_key) as mv:
            note = await mv.add("The user speaks Portuguese at home")
            assert (await mv.get(note.id)).text == note.text
            hits = await mv.search("which language at home?")
            assert hits[0].id == note.id
            assert (await mv.list()).total == 1
            assert [n.id async for n in mv.iter_notes(page_size=1)] == [note.id]
            changed = await mv.update(note.id, source="onboarding")
            assert changed.source == "onboarding"
            with pytest.raises(CredentialRefusedError) as refused:
                await mv.add(f"Our key id is {AWS_KEY_ID} for uploads")
            assert refused.value.detector == "aws_access_key"
            await mv.delete(note.id)
            with pytest.raises(NotFoundError):
                await mv.get(note.id)
        async with AsyncClient(tenant.base_url, tenant.admin_key) as admin:
            export = await admin.audit_export()
            assert export.verdict is not None and export.verdict.startswith("OK")
            records = [r async for r in admin.dsar_export("alice")]
            assert records[0]["type"] == "subject" and records[-1]["type"] == "end"

    asyncio.run(scenario())


def test_retry_after_lost_answer_gets_the_replay_and_one_note(tenant: Tenant) -> None:
    transport = DropFirstWrite("/v1/memories")
    with Client(tenant.base_url, tenant.agent_key, transport=transport, backoff=0.01) as mv:
        note = mv.add("The user parks the bike by the back door")
        assert mv.list().total == 1
        assert [n.id for n in mv.list().items] == [note.id]
    lost = transport.dropped[0]
    retry, answer = next((q, r) for q, r in transport.seen if q.method == "POST")
    assert answer.status_code == 201
    assert answer.headers["Idempotent-Replayed"] == "true"
    assert retry.headers["Idempotency-Key"] == lost.headers["Idempotency-Key"]
    uuid.UUID(lost.headers["Idempotency-Key"])  # a UUID by default
    assert retry.content == lost.content  # the same bytes, or the server would answer 409


def test_async_retry_after_lost_answer_gets_the_replay(tenant: Tenant) -> None:
    class AsyncDropFirst(httpx.AsyncBaseTransport):
        def __init__(self) -> None:
            self.inner = httpx.AsyncHTTPTransport()
            self.dropped = 0
            self.replayed: list[str | None] = []

        async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
            response = await self.inner.handle_async_request(request)
            await response.aread()
            if request.method == "POST" and self.dropped == 0:
                self.dropped += 1
                raise httpx.RemoteProtocolError("server disconnected", request=request)
            if request.method == "POST":
                self.replayed.append(response.headers.get("Idempotent-Replayed"))
            return response

    async def scenario() -> None:
        transport = AsyncDropFirst()
        async with AsyncClient(
            tenant.base_url, tenant.agent_key, transport=transport, backoff=0.01
        ) as mv:
            await mv.add("The user waters the plants on Sundays")
            assert (await mv.list()).total == 1
        assert transport.replayed == ["true"]

    asyncio.run(scenario())


def test_refused_write_maps_to_its_exception_with_the_detector(tenant: Tenant) -> None:
    text = f"Use the key {AWS_KEY_ID} to reach the bucket"
    with Client(tenant.base_url, tenant.agent_key) as mv:
        with pytest.raises(ScreenRefusedError) as refused:
            mv.add(text)
        error = refused.value
        assert isinstance(error, CredentialRefusedError)
        assert (error.status, error.code) == (422, "credential_refused")
        assert (error.detector, error.field) == ("aws_access_key", "text")
        assert AWS_KEY_ID not in str(error) and AWS_KEY_ID not in repr(error)
        with pytest.raises(ScreenRefusedError) as in_source:
            mv.add("The user likes long walks", source=AWS_KEY_ID)
        assert (in_source.value.field, in_source.value.detector) == ("source", "aws_access_key")
        assert mv.list().total == 0  # a refused write stores nothing


def test_error_codes_map_to_exceptions(tenant: Tenant) -> None:
    with Client(tenant.base_url, "mvk_nobody.0123456789abcdef.secret") as stranger:
        with pytest.raises(AuthenticationError) as unauthorized:
            stranger.list()
        assert unauthorized.value.status == 401
    with Client(tenant.base_url, tenant.agent_key) as mv:
        with pytest.raises(ForbiddenError):
            mv.issue_key("alice", "other")
        with pytest.raises(InvalidRequestError) as invalid:
            mv.search("tea", limit=0)
        assert invalid.value.code == "invalid_request" and "limit" in invalid.value.message
        with pytest.raises(InvalidRequestError):  # refused by the SDK, never sent
            mv.get("not-a-note-id/../../v1/admin/keys")
        mv.add("The user collects stamps", idempotency_key="fixed-key-for-this-test")
        with pytest.raises(IdempotencyKeyReusedError) as reused:
            mv.add("The user collects coins", idempotency_key="fixed-key-for-this-test")
        assert reused.value.status == 409 and isinstance(reused.value, ConflictError)
    with Client(tenant.base_url, OPERATOR_KEY) as operator, pytest.raises(ConflictError):
        operator.create_tenant(tenant.tenant_id)


def test_admin_calls_keys_policy_inventory_dsar(tenant: Tenant) -> None:
    with Client(tenant.base_url, tenant.admin_key) as admin:
        issued = admin.issue_key("bob", "planner")
        with Client(tenant.base_url, issued.api_key) as bob:
            bob.add("Bob plans a trip to Lisbon in spring")
            counts = {s["store"]: s["count"] for s in admin.inventory("bob")["stores"]}
            assert counts["notes"] == 1 and counts["vectors"] == 1
            records = list(admin.dsar_export("bob"))
            assert [r["type"] for r in records] == ["subject", "note", "end"]
            assert records[1]["text"] == "Bob plans a trip to Lisbon in spring"
            admin.revoke_key(issued.key_id)
            with pytest.raises(AuthenticationError):
                bob.list()
        policy = admin.set_policy({"email": "refuse"}, ttl_days={"memory": 30})
        assert isinstance(policy, Policy)
        stored = admin.get_policy()
        assert stored.pii["email"] == "refuse" and stored.ttl_days.memory == 30
        assert policy.ttl_days.memory == 30
        assert admin.refusals() == {}


def test_erase_verifies_the_signed_receipt(tenant: Tenant) -> None:
    with Client(tenant.base_url, tenant.agent_key) as mv:
        mv.add("Alice moved to a flat near the river")
    with Client(tenant.base_url, tenant.admin_key) as admin:
        job = admin.erase("alice")
        assert job.done and job.receipt is not None and job.receipt["verified"] is True
        assert job.verdict is not None and "verified" in job.verdict
        assert [e["id"] for e in admin.erasures()] == [job.id]
        assert admin.erasure(job.id).signature == job.signature
        keys = admin.receipt_keys()
        forged = {**job.receipt, "keys_destroyed": job.receipt["keys_destroyed"] + 1}
        with pytest.raises(VerificationError):
            _verify.verified_receipt(replace(job, receipt=forged), keys)
    with Client(tenant.base_url, tenant.agent_key) as gone, pytest.raises(AuthenticationError):
        gone.list()  # the erase deleted alice's keys


def test_audit_export_verifies_the_chain_and_detects_tampering(tenant: Tenant) -> None:
    with Client(tenant.base_url, tenant.admin_key) as admin:
        admin.issue_key("carol", "tutor")
        export = admin.audit_export()
        assert export.verdict is not None and export.verdict.startswith("OK")
        assert export.head["type"] == "head" and export.head["seq"] == len(export.events)
        actions = [e["action"] for e in export.events]
        assert "key.issued" in actions
        later = admin.audit_export(since_seq=export.head["seq"], previous_hash=export.head["hash"])
        assert later.events and later.events[0]["seq"] == export.head["seq"] + 1
        keys = admin.receipt_keys()
    lines: list[str] = list(export.lines)
    event: dict[str, Any] = json.loads(lines[0])
    event["details"] = {**event["details"], "role": "tenant_admin-forged"}
    lines[0] = json.dumps(event)
    with pytest.raises(VerificationError):
        _verify.audit_from_lines(lines, keys)
    with pytest.raises(MemvaultError):
        _verify.audit_from_lines(lines[:-1], None)  # cut off: no head line


def test_operator_deletes_a_tenant_with_a_verified_receipt(server: str) -> None:
    tenant_id = "gone" + uuid.uuid4().hex[:8]
    with Client(server, OPERATOR_KEY) as operator:
        admin_key = operator.create_tenant(tenant_id).api_key
        receipt = operator.delete_tenant(tenant_id)
        assert receipt.done and receipt.verdict is not None
        assert receipt.receipt is not None and receipt.receipt["tenant_id"] == tenant_id
    with Client(server, admin_key) as admin, pytest.raises(AuthenticationError):
        admin.get_policy()
