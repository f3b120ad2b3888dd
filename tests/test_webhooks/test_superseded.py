"""`memory.superseded`: A-MEM's supersedes relation reaches the tenant's webhook (ids only)."""

from __future__ import annotations

from collections.abc import Callable

from memvault.client.webhooks import verify
from tests.apiclient import Api
from tests.conftest import ServicesFactory
from tests.test_webhooks.conftest import Receiver, drain, subscribe


def test_a_superseded_note_is_an_event(
    make_services: ServicesFactory, backend: str, receivers: Callable[..., Receiver]
) -> None:
    api = Api(make_services(backend, amem=True))
    receiver = receivers()
    hook = subscribe(api, "t1", receiver.url, ["memory.superseded"])
    key = api.agent_key("t1", "u1", "a1")
    green = api.add(
        key, "Bob's favourite colour is green", session_id="s1", occurred_at="2026-01-05T10:00:00Z"
    )
    blue = api.add(
        key, "Bob's favourite colour is blue", session_id="s2", occurred_at="2026-04-05T10:00:00Z"
    )
    drain(api.services, lambda: len(receiver.received) >= 1, seconds=30)
    got = receiver.received[0]
    event = verify(got.body, got.headers["memvault-signature"], hook["secret"])
    assert event["type"] == "memory.superseded"
    assert event["data"]["note_id"] == green["id"]
    assert event["data"]["superseded_by"] == blue["id"]
    assert "colour" not in got.body.decode() and "green" not in got.body.decode()
