"""`Idempotency-Key` on POST, PATCH and DELETE, over HTTP against real services.

Each test runs on SQLite and, when MEMVAULT_TEST_DATABASE_URL is set, on PostgreSQL (with RLS).
"""

from __future__ import annotations

import secrets
import string
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import select, update

from memvault.api.idempotency import (
    TTL_SECONDS,
    count_idempotency_records,
    delete_idempotency_records,
    delete_tenant_idempotency_records,
    install_idempotency,
    purge_expired,
    request_digest,
)
from memvault.errors import IndexError_
from memvault.store.models import IdempotencyRow
from memvault.vault.service import ScopedVault
from tests._helpers import FakeClock
from tests.apiclient import OPERATOR_KEY, Api
from tests.conftest import ServicesFactory

REPLAYED = "idempotent-replayed"
APPLES = "The user grows apples in the orchard"
PEARS = "The user grows pears in the orchard"
PLUMS = "The user grows plums in the orchard"
TEA = "The user drinks green tea every day"
COFFEE = "The user drinks black coffee every day"


def fastapi_app(api: Api) -> FastAPI:
    app = api.client.app
    assert isinstance(app, FastAPI)
    return app


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def make_api(make_services: ServicesFactory, backend: str, clock: FakeClock) -> Callable[..., Api]:
    def build(**options: Any) -> Api:
        api = Api(make_services(backend))
        options.setdefault("clock", clock)
        install_idempotency(fastapi_app(api), **options)  # before the app's first request
        return api

    return build


@pytest.fixture
def api(make_api: Callable[..., Api]) -> Api:
    return make_api()


@pytest.fixture
def add_calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Counts executions of `ScopedVault.add` (the route really ran)."""
    calls: list[str] = []
    original = ScopedVault.add

    def counting(self: ScopedVault, text: str, **kw: Any) -> Any:
        calls.append(text)
        return original(self, text, **kw)

    monkeypatch.setattr(ScopedVault, "add", counting)
    yield calls


def idem(
    api: Api, method: str, path: str, key: str | None, idem_key: str, **kw: Any
) -> httpx.Response:
    headers = kw.pop("headers", {})
    headers["Idempotency-Key"] = idem_key
    response: httpx.Response = api.call(method, path, key, headers=headers, **kw)
    return response


def total(api: Api, key: str) -> int:
    return int(api.call("GET", "/v1/memories", key).json()["total"])


def records(api: Api, tenant: str, user: str | None = None, agent: str | None = None) -> int:
    with api.services.db.session(tenant) as sess:
        return count_idempotency_records(sess, tenant, user, agent)


# --- replay -----------------------------------------------------------------------------------
def test_retried_add_replays_the_first_response_and_stores_one_note(
    api: Api, add_calls: list[str]
) -> None:
    key = api.agent_key("t1", "u1", "a1")
    body = {"text": "The user keeps bees in the back garden", "topics": ["hobby"]}
    first = idem(api, "POST", "/v1/memories", key, "retry-1", json=body)
    again = idem(api, "POST", "/v1/memories", key, "retry-1", json=body)
    assert first.status_code == 201, first.text
    assert REPLAYED not in first.headers
    assert again.status_code == 201 and again.headers[REPLAYED] == "true"
    assert again.content == first.content
    assert again.headers["content-type"] == first.headers["content-type"]
    assert len(add_calls) == 1 and total(api, key) == 1
    # Even after the note is deleted, the retry replays instead of writing a second note.
    note_id = first.json()["id"]
    assert api.call("DELETE", f"/v1/memories/{note_id}", key).status_code == 204
    third = idem(api, "POST", "/v1/memories", key, "retry-1", json=body)
    assert third.status_code == 201 and third.headers[REPLAYED] == "true"
    assert third.json()["id"] == note_id
    assert len(add_calls) == 1 and total(api, key) == 0


def test_same_key_with_another_request_is_409_reused(api: Api, add_calls: list[str]) -> None:
    key = api.agent_key("t1", "u1", "a1")
    first = idem(api, "POST", "/v1/memories", key, "k-reuse", json={"text": "The user likes tea"})
    assert first.status_code == 201
    for method, path, body in [
        ("POST", "/v1/memories", {"text": "The user likes coffee"}),  # another body
        ("POST", "/v1/memories/search", {"text": "The user likes tea"}),  # another path
        ("POST", "/v1/memories?x=1", {"text": "The user likes tea"}),  # another query
        ("PATCH", f"/v1/memories/{first.json()['id']}", {"text": "The user likes tea"}),
    ]:
        r = idem(api, method, path, key, "k-reuse", json=body)
        assert r.status_code == 409, (method, path, r.text)
        assert r.json()["error"]["code"] == "idempotency_key_reused"
        assert "k-reuse" not in r.text and REPLAYED not in r.headers
    assert len(add_calls) == 1 and total(api, key) == 1


def test_patch_and_delete_replay(api: Api) -> None:
    key = api.agent_key("t1", "u1", "a1")
    note = api.add(key, "The user's car is a red hatchback")
    path = f"/v1/memories/{note['id']}"
    v2 = {"text": "The user's car is a blue estate"}
    first = idem(api, "PATCH", path, key, "patch-1", json=v2)
    assert first.status_code == 200 and first.json()["text"].endswith("blue estate")
    later = api.call("PATCH", path, key, json={"text": "The user's car is a green van"})
    assert later.status_code == 200
    again = idem(api, "PATCH", path, key, "patch-1", json=v2)
    assert again.status_code == 200 and again.headers[REPLAYED] == "true"
    assert again.content == first.content
    # The replay did not run the update again: the later text is still the live one.
    assert api.call("GET", path, key).json()["text"].endswith("green van")

    gone = idem(api, "DELETE", path, key, "delete-1")
    assert gone.status_code == 204 and gone.content == b""
    replay = idem(api, "DELETE", path, key, "delete-1")
    assert replay.status_code == 204 and replay.headers[REPLAYED] == "true"
    assert replay.content == b""
    assert api.call("DELETE", path, key).status_code == 404  # executing again would be a 404


# --- concurrency ------------------------------------------------------------------------------
def test_same_key_in_flight_is_409_in_progress(api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    key = api.agent_key("t1", "u1", "a1")
    entered, release = threading.Event(), threading.Event()
    calls: list[str] = []
    original = ScopedVault.add

    def slow_add(self: ScopedVault, text: str, **kw: Any) -> Any:
        calls.append(text)
        if len(calls) == 1:
            entered.set()
            assert release.wait(30)
        return original(self, text, **kw)

    monkeypatch.setattr(ScopedVault, "add", slow_add)
    body = {"text": "The user's train leaves at seven"}
    with ThreadPoolExecutor(1) as pool:
        running = pool.submit(idem, api, "POST", "/v1/memories", key, "slow-1", json=body)
        assert entered.wait(30)
        busy = idem(api, "POST", "/v1/memories", key, "slow-1", json=body)
        other = idem(api, "POST", "/v1/memories", key, "other-1", json={"text": "Another fact"})
        release.set()
        first = running.result(30)
    assert busy.status_code == 409, busy.text
    assert busy.json()["error"]["code"] == "idempotency_key_in_progress"
    assert busy.headers["retry-after"] == "1"
    assert other.status_code == 201  # another key is not held up
    assert first.status_code == 201 and REPLAYED not in first.headers
    replay = idem(api, "POST", "/v1/memories", key, "slow-1", json=body)
    assert replay.headers[REPLAYED] == "true" and replay.content == first.content
    assert len(calls) == 2 and total(api, key) == 2


def test_a_burst_of_same_key_requests_executes_once(api: Api, add_calls: list[str]) -> None:
    key = api.agent_key("t1", "u1", "a1")
    body = {"text": "The user's passport expires in March"}
    start = threading.Barrier(6)

    def send(_: int) -> httpx.Response:
        start.wait(30)
        return idem(api, "POST", "/v1/memories", key, "burst-1", json=body)

    with ThreadPoolExecutor(6) as pool:
        responses = list(pool.map(send, range(6)))
    executed = [r for r in responses if r.status_code == 201 and REPLAYED not in r.headers]
    assert len(executed) == 1, [(r.status_code, r.headers.get(REPLAYED)) for r in responses]
    for r in responses:
        if r.status_code == 409:
            assert r.json()["error"]["code"] == "idempotency_key_in_progress"
        else:
            assert r.status_code == 201 and r.content == executed[0].content
    assert len(add_calls) == 1 and total(api, key) == 1


def test_a_dead_attempt_is_taken_over(make_api: Callable[..., Api], clock: FakeClock) -> None:
    """A crash leaves an attempt `in_flight`: a retry takes it over once it is known dead."""
    multi = make_api(single_process=False)  # as on PostgreSQL with several workers
    single = make_api(single_process=True)  # the embedded default: one server per directory
    for api in (multi, single):
        key = api.agent_key("t1", "u1", "a1")
        body = {"text": "The user's dentist is on Elm Street"}
        assert idem(api, "POST", "/v1/memories", key, "crash-1", json=body).status_code == 201
        with api.services.db.session("t1") as sess:  # as if a process died mid-request
            sess.execute(
                update(IdempotencyRow)
                .where(IdempotencyRow.tenant_id == "t1")
                .values(
                    state="in_flight",
                    response_ct=None,
                    lock_owner="0123456789abcdef.dead",
                    locked_until=clock.now + 30,
                )
            )
        retry = idem(api, "POST", "/v1/memories", key, "crash-1", json=body)
        if api is multi:  # another worker may still be running it until the lease ends
            assert retry.status_code == 409
            assert retry.json()["error"]["code"] == "idempotency_key_in_progress"
            clock.now += 31
            retry = idem(api, "POST", "/v1/memories", key, "crash-1", json=body)
        assert retry.status_code == 201 and REPLAYED not in retry.headers
        replay = idem(api, "POST", "/v1/memories", key, "crash-1", json=body)
        assert replay.headers[REPLAYED] == "true"
        assert total(api, key) == 1  # the vault's duplicate check keeps the re-run to one note


# --- what is (not) stored ---------------------------------------------------------------------
def test_5xx_is_not_stored_but_4xx_is(api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    key = api.agent_key("t1", "u1", "a1")
    original = ScopedVault.add
    calls: list[str] = []

    def flaky(self: ScopedVault, text: str, **kw: Any) -> Any:
        calls.append(text)
        if len(calls) == 1:
            raise IndexError_("index unavailable")
        return original(self, text, **kw)

    monkeypatch.setattr(ScopedVault, "add", flaky)
    body = {"text": "The user's gym is open until ten"}
    failed = idem(api, "POST", "/v1/memories", key, "five-1", json=body)
    assert failed.status_code == 500
    assert records(api, "t1") == 0  # released
    retried = idem(api, "POST", "/v1/memories", key, "five-1", json=body)
    assert retried.status_code == 201 and REPLAYED not in retried.headers
    again = idem(api, "POST", "/v1/memories", key, "five-1", json=body)
    assert again.headers[REPLAYED] == "true" and again.content == retried.content
    assert len(calls) == 2

    bad = idem(api, "POST", "/v1/memories", key, "four-1", json={"text": ""})
    assert bad.status_code == 422
    bad_again = idem(api, "POST", "/v1/memories", key, "four-1", json={"text": ""})
    assert bad_again.status_code == 422 and bad_again.headers[REPLAYED] == "true"
    assert bad_again.content == bad.content
    # 401: never stored (the key does not authenticate, so nothing is recorded at all).
    unauth = idem(api, "POST", "/v1/memories", "mvk_t1.nokey.nosecret", "four-2", json=body)
    assert unauth.status_code == 401
    assert records(api, "t1") == 2


def test_principals_with_the_same_key_are_independent(api: Api, add_calls: list[str]) -> None:
    a1 = api.agent_key("t1", "u1", "a1")
    a2 = api.agent_key("t1", "u1", "a2")
    b1 = api.agent_key("t1", "u2", "a1")
    other_tenant = api.agent_key("t2", "u1", "a1")
    for n, key in enumerate([a1, a2, b1, other_tenant]):
        r = idem(api, "POST", "/v1/memories", key, "shared-key", json={"text": f"Fact number {n}"})
        assert r.status_code == 201 and REPLAYED not in r.headers, r.text
    admin = idem(
        api,
        "POST",
        "/v1/admin/keys",
        api.tenant("t1"),
        "shared-key",
        json={"user_id": "u9", "agent_id": "a9", "role": "agent"},
    )
    assert admin.status_code == 201 and REPLAYED not in admin.headers
    assert len(add_calls) == 4
    replay = idem(api, "POST", "/v1/memories", a2, "shared-key", json={"text": "Fact number 1"})
    assert replay.headers[REPLAYED] == "true"
    assert replay.json()["text"] == "Fact number 1"


def test_operator_requests_are_executed_and_never_stored(api: Api) -> None:
    body = {"tenant_id": "fresh"}
    first = idem(api, "POST", "/v1/operator/tenants", OPERATOR_KEY, "op-1", json=body)
    assert first.status_code == 201
    again = idem(api, "POST", "/v1/operator/tenants", OPERATOR_KEY, "op-1", json=body)
    assert again.status_code == 409 and REPLAYED not in again.headers
    assert again.json()["error"]["code"] == "conflict"
    assert records(api, "fresh") == 0
    bad = idem(api, "POST", "/v1/operator/tenants", OPERATOR_KEY, "", json={"tenant_id": "x2"})
    assert bad.status_code == 422


def test_stored_responses_are_sealed_not_plaintext(
    make_services: ServicesFactory, clock: FakeClock
) -> None:
    api = Api(make_services("sqlite"))
    install_idempotency(fastapi_app(api), clock=clock)
    key = api.agent_key("t1", "u1", "a1")
    # letters only: a random run of digits can read as a phone number and be redacted
    marker = "quixotic" + "".join(secrets.choice(string.ascii_lowercase) for _ in range(12))
    idem_key = "idem-marker-" + secrets.token_hex(6)
    text = f"The user collects stamps from {marker} island"
    body = {"text": text}
    first = idem(api, "POST", "/v1/memories", key, idem_key, json=body)
    assert first.status_code == 201 and marker in first.text
    issued = idem(
        api,
        "POST",
        "/v1/admin/keys",
        api.tenant("t1"),
        idem_key + "-admin",
        json={"user_id": "u2", "agent_id": "a2", "role": "agent"},
    )
    assert issued.status_code == 201
    secret = issued.json()["api_key"].rsplit(".", 1)[1]
    assert records(api, "t1") == 2
    raw = httpx.Request("POST", "http://x/v1/memories", json=body).content
    digest = request_digest("POST", "/v1/memories", b"", raw)
    files = [p for p in api.services.settings.data_dir.rglob("*") if p.is_file()]
    names = {p.name for p in files}
    assert {"memvault.db", "memvault.db-wal"} <= names
    for path in files:
        data = path.read_bytes()
        for needle in (marker, idem_key, secret, digest):
            assert needle.encode() not in data, (path.name, needle)
    replay = idem(api, "POST", "/v1/memories", key, idem_key, json=body)
    assert replay.headers[REPLAYED] == "true" and replay.content == first.content


def test_a_record_whose_scope_key_was_shredded_is_absent(api: Api) -> None:
    """Sealed under the principal's scope key: shredding it makes the record unreadable."""
    admin = api.tenant("t1")  # its scope is (t1, admin user, admin agent) of its key row
    body = {"user_id": "u1", "agent_id": "a1", "role": "agent"}
    first = idem(api, "POST", "/v1/admin/keys", admin, "shred-1", json=body)
    assert first.status_code == 201
    replay = idem(api, "POST", "/v1/admin/keys", admin, "shred-1", json=body)
    assert replay.headers[REPLAYED] == "true" and replay.content == first.content
    principal = api.services.keys.authenticate(admin)
    assert principal.user is not None and principal.agent is not None
    api.services.keyring.shred("t1", principal.user, principal.agent)
    retry = idem(api, "POST", "/v1/admin/keys", admin, "shred-1", json=body)
    assert retry.status_code == 201 and REPLAYED not in retry.headers  # no 500, no replay
    assert retry.json()["key_id"] != first.json()["key_id"]  # it ran again
    again = idem(api, "POST", "/v1/admin/keys", admin, "shred-1", json=body)
    assert again.headers[REPLAYED] == "true" and again.content == retry.content
    assert records(api, "t1") == 1


def test_no_response_is_sealed_into_a_scope_being_erased(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An erase that starts while the route answers: the response is sent, not stored."""
    guard = getattr(api.services.vault.parts, "guard", None)
    if guard is None:
        pytest.skip("this vault has no scope guard")
    key = api.agent_key("t1", "u1", "a1")
    blocked, done = threading.Event(), threading.Event()
    original = ScopedVault.add

    def erase_begins(self: ScopedVault, text: str, **kw: Any) -> Any:
        note = original(self, text, **kw)

        def hold() -> None:
            with guard.blocking("t1", "u1"):
                blocked.set()
                done.wait(30)

        threading.Thread(target=hold, daemon=True).start()
        assert blocked.wait(30)
        return note

    monkeypatch.setattr(ScopedVault, "add", erase_begins)
    body = {"text": TEA}
    try:
        r = idem(api, "POST", "/v1/memories", key, "erasing-1", json=body)
        assert r.status_code == 201 and REPLAYED not in r.headers
        assert records(api, "t1") == 0  # released, nothing sealed
    finally:
        done.set()


def test_erasure_and_tenant_deletion_remove_the_records(api: Api) -> None:
    keys = {
        (u, a): api.agent_key("t1", u, a) for u, a in [("u1", "a1"), ("u2", "a1"), ("u2", "a2")]
    }
    for (u, a), key in keys.items():
        r = idem(api, "POST", "/v1/memories", key, "erase-1", json={"text": f"Fact of {u} {a}"})
        assert r.status_code == 201
    assert records(api, "t1") == 3
    with api.services.db.session("t1") as sess:
        assert delete_idempotency_records(sess, "t1", "u2", "a1") == 1
        assert delete_idempotency_records(sess, "t1", "u1") == 1
    assert records(api, "t1", "u2") == 1 and records(api, "t1", "u1") == 0
    kept = idem(api, "POST", "/v1/memories", keys[("u2", "a2")], "erase-1", json={"text": "x"})
    assert kept.status_code == 409  # u2/a2's record is still there (a different body)
    with api.services.db.session("t1") as sess:
        assert delete_tenant_idempotency_records(sess, "t1") == 1
    assert records(api, "t1") == 0


def test_expired_records_are_ignored_and_purged(
    api: Api, clock: FakeClock, add_calls: list[str]
) -> None:
    key = api.agent_key("t1", "u1", "a1")
    start = clock.now
    assert idem(api, "POST", "/v1/memories", key, "day-1", json={"text": APPLES}).status_code == 201
    clock.now = start + TTL_SECONDS - 1
    r = idem(api, "POST", "/v1/memories", key, "day-1", json={"text": PEARS})
    assert r.status_code == 409  # still remembered just before 24 h
    clock.now = start + TTL_SECONDS + 1
    r = idem(api, "POST", "/v1/memories", key, "day-1", json={"text": PEARS})
    assert r.status_code == 201 and REPLAYED not in r.headers
    assert add_calls == [APPLES, PEARS]
    # The sweeper: one record older than 24 h at `now`, one younger.
    assert idem(api, "POST", "/v1/memories", key, "day-2", json={"text": PLUMS}).status_code == 201
    with api.services.db.session("t1") as sess:
        created = sorted(sess.execute(select(IdempotencyRow.created_at)).scalars())
    assert len(created) == 2
    assert purge_expired(api.services.db, start + TTL_SECONDS + 1, tenants=["t1"]) == 0
    assert purge_expired(api.services.db, clock.now + TTL_SECONDS, tenants=["t1"]) == 2
    assert records(api, "t1") == 0


def test_purge_expired_defaults_to_every_tenant(api: Api, clock: FakeClock) -> None:
    for tenant in ("t1", "t2"):
        key = api.agent_key(tenant, "u1", "a1")
        assert (
            idem(api, "POST", "/v1/memories", key, "sweep", json={"text": TEA}).status_code == 201
        )
    assert purge_expired(api.services.db, clock.now + TTL_SECONDS / 2) == 0
    assert purge_expired(api.services.db, clock.now + TTL_SECONDS) == 2


# --- the header -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "value",
    [b"", b"   ", b"x" * 256, "clé".encode(), b"a\x01b", b"tab\x7f"],
    ids=["empty", "blank", "too-long", "non-ascii", "control", "del"],
)
def test_an_invalid_header_is_422_and_never_echoed(
    api: Api, add_calls: list[str], value: bytes
) -> None:
    key = api.agent_key("t1", "u1", "a1")
    headers = {b"Authorization": f"Bearer {key}".encode(), b"Idempotency-Key": value}
    r = api.client.post("/v1/memories", headers=headers, json={"text": "The user sails"})
    assert r.status_code == 422, r.text
    error = r.json()["error"]
    assert error["code"] == "invalid_request" and "Idempotency-Key" in error["message"]
    if value.strip():
        assert value.decode("latin-1") not in r.text
    assert add_calls == []


def test_header_edge_cases(api: Api, add_calls: list[str]) -> None:
    key = api.agent_key("t1", "u1", "a1")
    longest = idem(api, "POST", "/v1/memories", key, "k" * 255, json={"text": TEA})
    assert longest.status_code == 201
    twice = api.client.post(
        "/v1/memories",
        headers=[
            ("Authorization", f"Bearer {key}"),
            ("Idempotency-Key", "one"),
            ("Idempotency-Key", "two"),
        ],
        json={"text": COFFEE},
    )
    assert twice.status_code == 422
    # Unauthenticated: the route's 401 comes first; GET ignores the header.
    assert idem(api, "POST", "/v1/memories", None, "", json={"text": "x"}).status_code == 401
    assert idem(api, "GET", "/v1/memories", key, "").status_code == 200
    assert add_calls == [TEA]


def test_request_bodies_are_bounded(make_api: Callable[..., Api], add_calls: list[str]) -> None:
    api = make_api(max_request_bytes=1000)
    key = api.agent_key("t1", "u1", "a1")
    body = {"text": "The user's long note " + "word " * 300}
    big = idem(api, "POST", "/v1/memories", key, "big-1", json=body)
    assert big.status_code == 413 and big.json()["error"]["code"] == "body_too_large"
    assert add_calls == []
    assert api.call("POST", "/v1/memories", key, json=body).status_code == 201  # no header
