"""Signed, durable webhooks over HTTP on both backends, with a real receiver on loopback."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest

from memvault.client.webhooks import SignatureError, sign, verify
from memvault.store.models import ReadAlertRow, WebhookDeliveryRow, WebhookRow
from memvault.webhooks.delivery import Deliverer
from tests.apiclient import OPERATOR_KEY, Api
from tests.test_webhooks.conftest import Opener, Receiver, drain, subscribe

SECRET_TEXT = "Pelargonium Quixotic lives at 77 Zephyrine Boulevard"
WORDS = ("Pelargonium", "Quixotic", "Zephyrine", "Boulevard", "lives at")


def test_memory_events_are_signed_and_carry_no_text(
    reopenable: Opener, receivers: Callable[..., Receiver]
) -> None:
    api = Api(reopenable())
    receiver = receivers()
    hook = subscribe(api, "t1", receiver.url)
    assert hook["secret"].startswith("whsec_") and "secret" not in str(
        api.call("GET", "/v1/admin/webhooks", api.tenant("t1")).json()
    )
    key = api.agent_key("t1", "u1", "a1")
    note = api.add(key, SECRET_TEXT)
    r = api.call("PATCH", f"/v1/memories/{note['id']}", key, json={"text": SECRET_TEXT + " now"})
    assert r.status_code == 200, r.text
    assert api.call("DELETE", f"/v1/memories/{note['id']}", key).status_code == 204
    drain(api.services, lambda: len(receiver.received) >= 3)
    kinds = [e["type"] for e in receiver.events()]
    assert kinds == ["memory.added", "memory.updated", "memory.deleted"]
    for got in receiver.received:
        event = verify(got.body, got.headers["memvault-signature"], hook["secret"])
        assert event["tenant_id"] == "t1" and event["data"]["note_id"] == note["id"]
        assert event["data"]["user"] != "u1" and len(event["data"]["user"]) >= 16  # a pseudonym
        assert got.headers["memvault-event"] == event["type"]
        for word in WORDS:
            assert word not in got.body.decode()
        with pytest.raises(SignatureError):
            verify(got.body + b" ", got.headers["memvault-signature"], hook["secret"])
        with pytest.raises(SignatureError):
            verify(got.body, got.headers["memvault-signature"], "whsec_wrong")
        with pytest.raises(SignatureError):  # a replay after the tolerance
            verify(
                got.body, got.headers["memvault-signature"], hook["secret"], now=time.time() + 301
            )
    deliveries = api.call("GET", "/v1/admin/webhooks/deliveries", api.tenant("t1")).json()
    assert {d["status"] for d in deliveries["deliveries"]} == {"delivered"}


def test_verify_checks_the_header_format() -> None:
    body = b'{"id":"x"}'
    header = sign(body, "whsec_s", int(time.time()))
    assert verify(body, header, "whsec_s") == {"id": "x"}
    for bad in ("", "t=abc,v1=00", "v1=" + header.rpartition("v1=")[2], header.split(",")[0]):
        with pytest.raises(SignatureError):
            verify(body, bad, "whsec_s")


def test_a_delivery_that_fails_twice_arrives_on_the_third_try(
    reopenable: Opener, receivers: Callable[..., Receiver]
) -> None:
    api = Api(reopenable())
    receiver = receivers(fail_first=2)
    hook = subscribe(api, "t1", receiver.url, ["memory.added"])
    api.add(api.agent_key("t1", "u1", "a1"), "A note about the weekly planning meeting")
    drain(api.services, lambda: len(receiver.received) == 1)
    assert receiver.answered == [500, 500, 204]
    got = receiver.received[0]
    verify(got.body, got.headers["memvault-signature"], hook["secret"])
    [row] = api.call("GET", "/v1/admin/webhooks/deliveries", api.tenant("t1")).json()["deliveries"]
    assert row["status"] == "delivered" and row["attempts"] == 3 and row["last_status"] == 204


def test_deliveries_pending_at_stop_are_delivered_after_a_restart(
    reopenable: Opener, receivers: Callable[..., Receiver]
) -> None:
    first = reopenable()
    api = Api(first)
    receiver = receivers(fail_first=1)
    hook = subscribe(api, "t1", receiver.url, ["memory.added"])
    note = api.add(api.agent_key("t1", "u1", "a1"), "A note written just before the restart")
    first.deliverer.run_once()  # answered 500: pending, retried later
    assert receiver.answered == [500] and receiver.received == []
    first.close()

    second = reopenable()
    second.start()  # the delivery thread of the new server finds the pending row
    deadline = time.monotonic() + 15
    while not receiver.received:
        assert time.monotonic() < deadline, "the pending delivery never arrived"
        time.sleep(0.05)
    got = receiver.received[0]
    event = verify(got.body, got.headers["memvault-signature"], hook["secret"])
    assert event["type"] == "memory.added" and event["data"]["note_id"] == note["id"]


def test_a_tenant_never_receives_another_tenants_events(
    reopenable: Opener, receivers: Callable[..., Receiver]
) -> None:
    api = Api(reopenable())
    one, two = receivers(), receivers()
    hook_one = subscribe(api, "t1", one.url)
    hook_two = subscribe(api, "t2", two.url)
    n1 = api.add(api.agent_key("t1", "u1", "a1"), "Tenant one keeps this planning note")
    n2 = api.add(api.agent_key("t2", "u1", "a1"), "Tenant two keeps this planning note")
    drain(api.services, lambda: len(one.received) >= 1 and len(two.received) >= 1)
    api.services.deliverer.run_once()
    assert [e["data"]["note_id"] for e in one.events()] == [n1["id"]]
    assert [e["data"]["note_id"] for e in two.events()] == [n2["id"]]
    assert {e["tenant_id"] for e in one.events()} == {"t1"}
    for got in one.received:
        verify(got.body, got.headers["memvault-signature"], hook_one["secret"])
        with pytest.raises(SignatureError):
            verify(got.body, got.headers["memvault-signature"], hook_two["secret"])
    # Another tenant's admin sees no endpoint and cannot delete one.
    assert (
        api.call("GET", "/v1/admin/webhooks", api.tenant("t2")).json()["webhooks"][0]["id"]
        == hook_two["id"]
    )
    r = api.call("DELETE", f"/v1/admin/webhooks/{hook_one['id']}", api.tenant("t2"))
    assert r.status_code == 404


def test_only_subscribed_event_types_are_sent_and_erasure_carries_its_receipt(
    reopenable: Opener, receivers: Callable[..., Receiver]
) -> None:
    api = Api(reopenable())
    receiver = receivers()
    subscribe(api, "t1", receiver.url, ["scope.erased"])
    api.add(api.agent_key("t1", "u1", "a1"), "A note that the erase will remove")
    r = api.call("POST", "/v1/admin/erase", api.tenant("t1"), json={"user_id": "u1"})
    assert r.status_code == 200, r.text
    receipt_id = r.json()["receipt"]["id"]
    drain(api.services, lambda: len(receiver.received) >= 1)
    [event] = receiver.events()
    assert event["type"] == "scope.erased" and event["data"]["receipt_id"] == receipt_id
    assert event["data"]["verified"] is True and event["data"]["user"] != "u1"


@pytest.mark.parametrize(
    "url",
    [
        "http://example.com/hook",
        "http://10.0.0.1/hook",
        "ftp://127.0.0.1/hook",
        "https://user:pw@example.com/hook",
        "https:///nohost",
    ],
)
def test_endpoint_urls_must_be_https_or_loopback(reopenable: Opener, url: str) -> None:
    api = Api(reopenable())
    r = api.call(
        "POST", "/v1/admin/webhooks", api.tenant("t1"), json={"url": url, "events": ["read.alert"]}
    )
    assert r.status_code == 422, r.text
    assert "pw" not in r.text
    ok = {"url": "https://hooks.example.com/in", "events": ["read.alert"]}
    assert api.call("POST", "/v1/admin/webhooks", api.tenant("t1"), json=ok).status_code == 201
    bad_event = {"url": "https://hooks.example.com/in", "events": ["note.searched"]}
    r = api.call("POST", "/v1/admin/webhooks", api.tenant("t1"), json=bad_event)
    assert r.status_code == 422


def test_two_workers_never_deliver_one_event_twice(
    reopenable: Opener, receivers: Callable[..., Receiver], backend: str
) -> None:
    if backend != "postgres":
        pytest.skip("several workers share one database on PostgreSQL only")
    api = Api(reopenable())
    services = api.services
    # A second worker's deliverer: its own connections to the same PostgreSQL database.
    other = Deliverer(services.db, services.webhooks, services.db.tenant_ids, poll=0)
    receiver = receivers(delay=0.05)
    subscribe(api, "t1", receiver.url, ["memory.added"])
    key = api.agent_key("t1", "u1", "a1")
    for i in range(12):
        api.add(key, f"Planning note number {i} for the quarterly review")
    passes = [threading.Thread(target=d.run_once) for d in (services.deliverer, other) * 3]
    for t in passes:
        t.start()
    for t in passes:
        t.join()
    drain(api.services, lambda: len(receiver.received) >= 12)
    other.stop()
    ids = [r.headers["memvault-delivery"] for r in receiver.received]
    assert len(ids) == len(set(ids)) == 12


def test_a_tenant_deletion_removes_its_endpoints_and_deliveries(
    reopenable: Opener, receivers: Callable[..., Receiver]
) -> None:
    api = Api(reopenable())
    receiver = receivers(fail_first=100)
    subscribe(api, "t1", receiver.url)
    api.add(api.agent_key("t1", "u1", "a1"), "A note whose event stays pending")
    api.services.deliverer.run_once()
    with api.services.db.session("t1") as sess:
        assert sess.query(WebhookDeliveryRow).count() == 1
    r = api.call("DELETE", "/v1/operator/tenants/t1", OPERATOR_KEY)
    assert r.status_code == 200, r.text
    with api.services.db.session("t1") as sess:
        for model in (WebhookRow, WebhookDeliveryRow, ReadAlertRow):
            assert sess.query(model).count() == 0
