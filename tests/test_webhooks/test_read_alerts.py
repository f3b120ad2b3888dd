"""Read alerts over HTTP on both backends: thresholds, suspension, the untrusted-session rule."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from memvault.client.webhooks import verify
from memvault.observability._metrics import READ_ALERTS
from tests.apiclient import Api
from tests.test_webhooks.conftest import Opener, Receiver, drain, key_id_of, subscribe

NOTE_TEXT = "Marigold Vesuvian keeps her spare key under the third flowerpot"


def _policy(api: Api, tenant: str, **alerts: Any) -> None:
    r = api.call("PUT", "/v1/admin/policy", api.tenant(tenant), json={"read_alerts": alerts})
    assert r.status_code == 200, r.text


def _alerts(api: Api, tenant: str) -> list[dict[str, Any]]:
    r = api.call("GET", "/v1/admin/alerts", api.tenant(tenant))
    assert r.status_code == 200, r.text
    return list(r.json()["alerts"])


def _fired(rule: str) -> float:
    return float(READ_ALERTS.labels(rule)._value.get())


def test_an_alert_fires_at_the_threshold_and_not_below(
    reopenable: Opener, receivers: Callable[..., Receiver]
) -> None:
    api = Api(reopenable())
    receiver = receivers()
    hook = subscribe(api, "t1", receiver.url, ["read.alert"])
    _policy(api, "t1", records_per_key_per_minute=4, records_per_session=None)
    key = api.agent_key("t1", "u1", "a1")
    for i in range(4):
        api.add(key, f"{NOTE_TEXT} number {i}")
    before = _fired("records_per_key_per_minute")
    assert len(api.search(key, "spare key flowerpot", limit=3)) == 3  # 3 < 4: no alert
    assert _alerts(api, "t1") == [] and _fired("records_per_key_per_minute") == before
    got = api.call("GET", "/v1/memories", key, params={"limit": 1}).json()["items"]
    assert len(got) == 1  # 4 records this minute: the alert fires
    [alert] = _alerts(api, "t1")
    assert alert["rule"] == "records_per_key_per_minute" and alert["key_id"] == key_id_of(key)
    assert alert["count"] == 4 and alert["threshold"] == 4 and len(alert["note_ids"]) == 4
    assert _fired("records_per_key_per_minute") == before + 1
    api.search(key, "spare key", limit=3)  # once per key and minute
    assert len(_alerts(api, "t1")) == 1
    events = [e for e in api.services.audit.events("t1") if e["action"] == "read.alert"]
    assert len(events) == 1 and events[0]["details"]["rule"] == "records_per_key_per_minute"
    assert "Marigold" not in str(events) and "Marigold" not in str(alert)
    drain(api.services, lambda: len(receiver.received) >= 1)
    delivered = receiver.received[0]
    event = verify(delivered.body, delivered.headers["memvault-signature"], hook["secret"])
    assert event["type"] == "read.alert" and set(event["data"]["note_ids"]) == set(
        alert["note_ids"]
    )
    assert "Marigold" not in delivered.body.decode() and "flowerpot" not in delivered.body.decode()


def test_a_session_threshold_counts_per_session(reopenable: Opener) -> None:
    api = Api(reopenable())
    _policy(api, "t1", records_per_key_per_minute=None, records_per_session=3)
    key = api.agent_key("t1", "u1", "a1")
    for i in range(3):
        api.add(key, f"{NOTE_TEXT} number {i}")
    for session in ("s-1", "s-2"):  # two records in each of two sessions: none crosses 3
        r = api.call(
            "POST",
            "/v1/memories/search",
            key,
            json={"query": "spare key", "limit": 2},
            headers={"X-Session-Id": session},
        )
        assert r.status_code == 200
    assert _alerts(api, "t1") == []
    r = api.call(
        "POST",
        "/v1/memories/search",
        key,
        json={"query": "spare key", "limit": 1},
        headers={"X-Session-Id": "s-1"},
    )
    assert r.status_code == 200
    [alert] = _alerts(api, "t1")
    assert alert["rule"] == "records_per_session" and alert["in_session"] is True


def test_suspend_key_answers_401_until_resumed(reopenable: Opener) -> None:
    api = Api(reopenable())
    _policy(api, "t1", records_per_key_per_minute=2, on_alert="suspend_key")
    key = api.agent_key("t1", "u1", "a1")
    other = api.agent_key("t1", "u1", "a2")
    for i in range(2):
        api.add(key, f"{NOTE_TEXT} number {i}")
    assert len(api.search(key, "spare key", limit=2)) == 2  # crosses: suspended after it
    r = api.call("POST", "/v1/memories/search", key, json={"query": "spare key"})
    assert r.status_code == 401 and r.json()["error"]["code"] == "key_suspended"
    assert api.call("GET", "/v1/memories", key).status_code == 401
    assert api.call("GET", "/v1/memories", other).status_code == 200  # only that key
    [alert] = _alerts(api, "t1")
    assert alert["key_suspended"] is True
    agent = api.call("POST", f"/v1/admin/keys/{key_id_of(key)}/resume", other)
    assert agent.status_code == 403  # an agent cannot lift it
    r = api.call("POST", f"/v1/admin/keys/{key_id_of(key)}/resume", api.tenant("t1"))
    assert r.status_code == 204
    assert api.call("GET", "/v1/memories", key).status_code == 200
    r = api.call("POST", "/v1/admin/keys/0000000000000000/resume", api.tenant("t1"))
    assert r.status_code == 404
    actions = [e["action"] for e in api.services.audit.events("t1")]
    assert "key.resumed" in actions


def test_a_session_marked_untrusted_right_after_a_read_alerts(reopenable: Opener) -> None:
    api = Api(reopenable())
    key = api.agent_key("t1", "u1", "a1")
    note = api.add(key, NOTE_TEXT)
    alerts = api.services.alerts
    kid = key_id_of(key)
    assert alerts.note_session_marked("t1", kid, "never-read") is False
    r = api.call("GET", f"/v1/memories/{note['id']}", key, headers={"X-Session-Id": "turn-42"})
    assert r.status_code == 200
    assert alerts.note_session_marked("t1", kid, "turn-42") is True
    assert alerts.note_session_marked("t1", kid, "turn-42") is False  # once per session
    [alert] = _alerts(api, "t1")
    assert alert["rule"] == "untrusted_after_read_seconds" and alert["note_ids"] == [note["id"]]
    # Turned off by the tenant: no alert.
    _policy(api, "t1", untrusted_after_read_seconds=None)
    api.call("GET", f"/v1/memories/{note['id']}", key, headers={"X-Session-Id": "turn-43"})
    assert alerts.note_session_marked("t1", kid, "turn-43") is False


def test_a_session_reading_topics_outside_the_keys_usual_mix_alerts(reopenable: Opener) -> None:
    api = Api(reopenable())
    _policy(api, "t1", new_topics_per_session=3, records_per_key_per_minute=None)
    key = api.agent_key("t1", "u1", "a1")
    api.add(key, "The sprint review is on Friday afternoon", topics=["work"])
    for topic in ("health", "money", "family"):
        api.add(key, f"A private note about {topic} matters and plans", topics=[topic])
    kid = key_id_of(key)

    def read(session: str, query: str, limit: int) -> None:
        r = api.call(
            "POST",
            "/v1/memories/search",
            key,
            json={"query": query, "limit": limit},
            headers={"X-Session-Id": session},
        )
        assert r.status_code == 200

    read("usual", "sprint review", 1)
    api.services.alerts.end_session("t1", kid, "usual")  # the key's usual mix
    read("odd", "private note matters plans", 3)
    [alert] = _alerts(api, "t1")
    assert alert["rule"] == "new_topics_per_session" and alert["count"] >= 3


def test_the_policy_round_trips_and_refuses_bad_thresholds(reopenable: Opener) -> None:
    api = Api(reopenable())
    _policy(api, "t1", records_per_session=None, on_alert="suspend_key")
    got = api.call("GET", "/v1/admin/policy", api.tenant("t1")).json()["read_alerts"]
    assert got["records_per_session"] is None and got["on_alert"] == "suspend_key"
    assert got["records_per_key_per_minute"] == 500
    for bad in ({"records_per_session": 0}, {"on_alert": "explode"}, {"nope": 1}):
        r = api.call("PUT", "/v1/admin/policy", api.tenant("t1"), json={"read_alerts": bad})
        assert r.status_code == 422


def test_the_mark_route_raises_the_untrusted_after_read_alert(reopenable: Opener) -> None:
    """The worked example of docs/exfiltration.md over HTTP: a read in session turn-42, then the
    runtime marks turn-42 untrusted; the read is refused with 423 and the admin sees the alert."""
    api = Api(reopenable())
    key = api.agent_key("t1", "u1", "a1")
    note = api.add(key, NOTE_TEXT)
    r = api.call("GET", f"/v1/memories/{note['id']}", key, headers={"X-Session-Id": "turn-42"})
    assert r.status_code == 200
    assert _alerts(api, "t1") == []
    r = api.call(
        "POST", "/v1/sessions/turn-42/untrusted", key, json={"reason": "web page", "ttl_s": 300}
    )
    assert r.status_code == 200, r.text
    [alert] = _alerts(api, "t1")
    assert alert["rule"] == "untrusted_after_read_seconds" and alert["note_ids"] == [note["id"]]
    r = api.call("GET", f"/v1/memories/{note['id']}", key, headers={"X-Session-Id": "turn-42"})
    assert r.status_code == 423 and NOTE_TEXT not in r.text
