"""Error mapping and the retry loop, without a server (httpx.MockTransport answers)."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest

from memvault.client import (
    Client,
    CredentialRefusedError,
    ErasureTimeout,
    IdempotencyKeyInProgressError,
    RateLimitedError,
    ScopeErasingError,
    ScreenRefusedError,
    ServerError,
    TransportError,
    UnavailableError,
    VerificationError,
)
from memvault.client.errors import EXCEPTION_BY_CODE, ApiError, MemvaultError, error_from_response

API_DOC = Path(__file__).resolve().parents[2] / "docs" / "api.md"
NOTE = {
    "id": "01a22db8-03c0-7f02-b7fe-97b89ee6e2fa",
    "text": "The user keeps bees",
    "visibility": "private",
    "owner": "assistant",
    "readers": ["assistant"],
    "writers": ["assistant"],
    "note_type": "memory",
    "topics": [],
    "source": None,
    "created_at": "2026-11-30T18:00:00Z",
    "updated_at": "2026-11-30T18:00:00Z",
    "flags": [],
    "redacted": [],
}


def documented_codes() -> set[str]:
    """Every error code in the table of docs/api.md's "Errors" section."""
    section = API_DOC.read_text().split("## Errors", 1)[1].split("\n## ", 1)[0]
    codes: set[str] = set()
    for row in section.splitlines():
        cells = row.split("|")
        if len(cells) > 3 and cells[1].strip().isdigit():
            codes.update(re.findall(r"`([a-z_]+)`", cells[2]))
    return codes


def test_every_documented_error_code_has_its_exception() -> None:
    codes = documented_codes()
    assert {"invalid_request", "scope_erasing", "idempotency_key_reused"} <= codes
    assert codes - set(EXCEPTION_BY_CODE) == set()
    for code in codes:
        assert EXCEPTION_BY_CODE[code].code == code or code in {
            "malformed_body",
            "body_too_deep",
            "scope_violation",
            "decryption_failed",
            "key_not_found",
            "index_error",
        }


def test_error_from_response_keeps_code_status_and_detector() -> None:
    body = {"error": {"code": "credential_refused", "message": "topics.0 refused by github_pat"}}
    error = error_from_response(422, body)
    assert isinstance(error, CredentialRefusedError) and isinstance(error, ScreenRefusedError)
    assert (error.detector, error.field, error.status) == ("github_pat", "topics.0", 422)
    erasing = error_from_response(409, {"error": {"code": "scope_erasing", "message": "x"}})
    assert isinstance(erasing, ScopeErasingError)
    unknown = error_from_response(418, {"error": {"code": "teapot", "message": "short"}})
    assert type(unknown) is ApiError and unknown.code == "teapot"
    html = error_from_response(502, None)
    assert isinstance(html, ServerError) and isinstance(html, MemvaultError)
    boom = error_from_response(
        500,
        {"error": {"code": "internal_error", "message": "internal error"}},
        {"x-correlation-id": "3f9c"},
    )
    assert isinstance(boom, ServerError) and boom.correlation_id == "3f9c"


def scripted(answers: list[httpx.Response | Exception]) -> tuple[httpx.MockTransport, list]:
    requests: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        requests.append(request)
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    return httpx.MockTransport(handler), requests


def error(status: int, code: str, **headers: str) -> httpx.Response:
    body = {"error": {"code": code, "message": code}}
    return httpx.Response(status, json=body, headers=headers)


def test_retries_503_429_in_progress_and_resets_with_one_idempotency_key() -> None:
    transport, requests = scripted(
        [
            error(503, "unavailable"),
            httpx.ConnectError("refused"),
            error(429, "too_many_requests", **{"Retry-After": "0"}),
            error(409, "idempotency_key_in_progress", **{"Retry-After": "0"}),
            httpx.Response(201, json=NOTE),
        ]
    )
    with Client("http://mv.test", "k", transport=transport, retries=4, backoff=0.001) as mv:
        note = mv.add("The user keeps bees")
    assert note.id == NOTE["id"]
    assert len(requests) == 5
    keys = {r.headers["Idempotency-Key"] for r in requests}
    bodies = {r.content for r in requests}
    assert len(keys) == 1 and len(bodies) == 1
    assert requests[0].headers["Authorization"] == "Bearer k"


def test_gives_up_after_the_last_retry() -> None:
    transport, requests = scripted([error(503, "unavailable")] * 3)
    mv = Client("http://mv.test", "k", transport=transport, retries=2, backoff=0.001)
    with mv, pytest.raises(UnavailableError):
        mv.list()
    assert len(requests) == 3
    transport, _ = scripted([error(429, "too_many_requests")])
    mv = Client("http://mv.test", "k", transport=transport, retries=0)
    with mv, pytest.raises(RateLimitedError):
        mv.get(NOTE["id"])
    transport, requests = scripted([httpx.ReadTimeout("slow")] * 2)
    mv = Client("http://mv.test", "k", transport=transport, retries=1, backoff=0.001)
    with mv, pytest.raises(TransportError) as lost:
        mv.add("a text that must not appear in the error")
    assert "must not appear" not in str(lost.value)
    assert len(requests) == 2


def test_other_errors_are_not_retried() -> None:
    transport, requests = scripted(
        [error(409, "idempotency_key_in_progress"), error(422, "invalid_request")]
    )
    with Client("http://mv.test", "k", transport=transport, backoff=0.001) as mv:
        with pytest.raises(IdempotencyKeyInProgressError):
            mv.add("no Retry-After: not the server's in-progress answer")
        with pytest.raises(MemvaultError):
            mv.search("tea")
    assert len(requests) == 2
    assert "Idempotency-Key" not in requests[1].headers  # a search stores nothing


def test_env_defaults_and_quoted_ids(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMVAULT_URL", "http://from-env.test/")
    monkeypatch.setenv("MEMVAULT_API_KEY", "env-key")
    transport, requests = scripted([error(404, "not_found")])
    with Client(transport=transport) as mv:
        assert mv.base_url == "http://from-env.test"
        with pytest.raises(MemvaultError):
            mv.get("../admin/keys")  # not a note id: refused before anything is sent
        assert not requests
        with pytest.raises(MemvaultError):
            mv.revoke_key("../memories")
    assert requests[0].url.host == "from-env.test"
    assert requests[0].headers["Authorization"] == "Bearer env-key"
    assert requests[0].url.raw_path == b"/v1/admin/keys/..%2Fmemories"


def signed_receipt() -> tuple[dict, list[dict]]:
    """A receipt signed by a throwaway Ed25519 key, and that key as `receipt_keys()` lists it."""
    import base64

    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

    from memvault.canonical import canonical_json

    key = Ed25519PrivateKey.generate()
    public = key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    receipt = {
        "id": "job-1",
        "tenant_id": "acme",
        "subject": {"user_id": "alice", "agent_id": None},
        "keys_destroyed": 1,
        "stores": [{"store": "notes", "deleted": 2, "remaining": 0}],
        "verified": True,
    }
    signature = base64.b64encode(key.sign(canonical_json(receipt))).decode()
    keys = [
        {
            "key_id": "ed25519-test",
            "alg": "Ed25519",
            "public_key": base64.b64encode(public).decode(),
            "created_at": "2026-11-30T18:00:00Z",
        }
    ]
    body = {"id": "job-1", "state": "done", "receipt": receipt, "key_id": "ed25519-test"}
    return {**body, "signature": signature}, keys


def test_erase_polls_a_202_job_until_done_then_verifies_the_receipt() -> None:
    done, keys = signed_receipt()
    running = {"id": "job-1", "state": "running", "steps_done": 2, "steps_total": 8}
    transport, requests = scripted(
        [
            httpx.Response(202, json=running),
            httpx.Response(200, json=running),
            httpx.Response(200, json=done),
            httpx.Response(200, json={"keys": keys}),
        ]
    )
    with Client("http://mv.test", "admin", transport=transport) as admin:
        job = admin.erase("alice", poll_interval=0.01)
    assert job.done and job.verdict is not None and "verified" in job.verdict
    assert [(r.method, r.url.path) for r in requests] == [
        ("POST", "/v1/admin/erase"),
        ("GET", "/v1/admin/erasures/job-1"),
        ("GET", "/v1/admin/erasures/job-1"),
        ("GET", "/v1/receipt-keys"),
    ]

    forged = {**done, "receipt": {**done["receipt"], "keys_destroyed": 0}}
    keys_answer = httpx.Response(200, json={"keys": keys})
    transport, _ = scripted([httpx.Response(200, json=forged), keys_answer])
    admin = Client("http://mv.test", "admin", transport=transport)
    with admin, pytest.raises(VerificationError):
        admin.erase("alice")

    still_running = [httpx.Response(200, json=running) for _ in range(50)]
    transport, _ = scripted([httpx.Response(202, json=running), *still_running])
    with Client("http://mv.test", "admin", transport=transport) as admin:
        with pytest.raises(ErasureTimeout) as slow:
            admin.erase("alice", timeout=0.05, poll_interval=0.01)
        assert slow.value.job_id == "job-1"
        assert admin.erase("alice", wait=False).progress["steps_done"] == 2
