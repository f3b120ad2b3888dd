"""`/metrics` after real requests: latency by route template, stage timings, refusal counters."""

from __future__ import annotations

import pytest

from memvault.observability import count_judge_fallback
from memvault.scope import Scope
from tests.apiclient import Api
from tests.conftest import ServicesFactory
from tests.faults import Crash, crash_at
from tests.test_observability.metrics_text import samples, value

NOTE = "The user prefers window seats on long flights"
AWS_KEY = "AKIAIOSFODNN7EXAMPLE"  # AWS's documented example key id


@pytest.fixture
def api(make_services: ServicesFactory) -> Api:
    return Api(make_services("sqlite"))


def _metrics(api: Api) -> str:
    r = api.metrics()
    assert r.status_code == 200
    return str(r.text)


def test_add_and_search_record_latency_by_route_template_and_stage_times(api: Api) -> None:
    key = api.agent_key("acme", "alice", "planner")
    before = _metrics(api)
    note = api.add(key, NOTE)
    assert api.search(key, "seat preference on flights")
    assert api.call("GET", f"/v1/memories/{note['id']}", key).status_code == 200
    after = _metrics(api)

    def grew(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    latency = "memvault_request_duration_seconds_count"
    assert grew(latency, method="POST", route="/v1/memories", status_class="2xx") == 1
    assert grew(latency, method="POST", route="/v1/memories/search", status_class="2xx") == 1
    assert grew(latency, method="GET", route="/v1/memories/{note_id}", status_class="2xx") == 1
    assert note["id"] not in after  # a route template, never the raw path

    assert grew("memvault_embed_seconds_count", operation="document") >= 1
    assert grew("memvault_embed_seconds_count", operation="query") >= 1
    assert grew("memvault_index_seconds_count", operation="upsert") >= 1
    searched = sum(
        grew("memvault_index_seconds_count", operation=op)
        for op in ("search_dense", "search_sparse", "search_hybrid")
    )
    assert searched >= 1
    assert grew("memvault_sql_seconds_count", operation="insert") >= 1
    assert grew("memvault_sql_seconds_count", operation="select") >= 1
    assert grew("memvault_screen_seconds_count", operation="note") == 1

    for stage in ("embed", "index", "sql", "screen"):
        per_request = "memvault_request_stage_seconds_count"
        assert grew(per_request, route="/v1/memories", stage=stage) == 1, stage
    assert grew("memvault_request_stage_seconds_sum", route="/v1/memories", stage="embed") > 0
    assert "window seats" not in after


def test_a_refusal_increments_its_detector_counter_only(api: Api) -> None:
    key = api.agent_key("acme", "alice", "planner")
    before = _metrics(api)
    r = api.call("POST", "/v1/memories", key, json={"text": f"Deploy with key {AWS_KEY} now"})
    assert r.status_code == 422 and r.json()["error"]["code"] == "credential_refused"
    after = _metrics(api)
    grown = {
        dict(labels)["detector"]: after_value - value(before, name, **dict(labels))
        for (name, labels), after_value in samples(after).items()
        if name == "memvault_refusals_total"
    }
    assert sum(grown.values()) == 1
    (detector,) = (d for d, n in grown.items() if n == 1)
    assert detector in r.json()["error"]["message"].lower()
    assert AWS_KEY not in after and AWS_KEY.lower() not in after
    status = "memvault_request_duration_seconds_count"
    assert (
        value(after, status, method="POST", route="/v1/memories", status_class="4xx")
        - value(before, status, method="POST", route="/v1/memories", status_class="4xx")
        == 1
    )


def test_reconciler_repairs_are_counted_by_kind(
    make_services: ServicesFactory,
) -> None:
    services = make_services("sqlite")
    api = Api(services)
    services.tenants.create("t1")
    vault = services.vault.scoped(Scope("t1", "u1", "a1"))
    services.vault.fault = crash_at("after_upsert")  # leaves an orphan vector
    with pytest.raises(Crash):
        vault.add("The user's train to Porto leaves in the morning")
    services.vault.fault = lambda _s: None
    before = _metrics(api)
    assert services.reconciler.run(grace_seconds=0).orphans_deleted == 1
    after = _metrics(api)
    name = "memvault_reconciler_repairs_total"
    assert (
        value(after, name, kind="orphan_deleted") - value(before, name, kind="orphan_deleted") == 1
    )
    assert value(after, name, kind="removed") == value(before, name, kind="removed")


def test_judge_fallbacks_are_registered_with_bounded_labels(api: Api) -> None:
    count_judge_fallback("Anthropic", "timeout")
    text = _metrics(api)
    assert value(text, "memvault_judge_fallbacks_total", judge="anthropic", reason="timeout") >= 1


def test_guard_refusals_are_timed_with_a_request_id(api: Api) -> None:
    r = api.client.request("PATCH", "/healthz", headers={"X-Request-ID": "trace-me.1"})
    assert r.status_code == 405
    assert r.headers["x-request-id"] == "trace-me.1"
    text = _metrics(api)
    latency = "memvault_request_duration_seconds_count"
    assert value(text, latency, method="PATCH", route="unmatched", status_class="4xx") >= 1


def test_request_ids_are_echoed_when_well_formed_and_replaced_otherwise(api: Api) -> None:
    r = api.client.get("/healthz", headers={"X-Request-ID": "abc-123"})
    assert r.headers["x-request-id"] == "abc-123"
    r = api.client.get("/healthz", headers={"X-Request-ID": "bad id\twith spaces"})
    assert r.headers["x-request-id"] != "bad id\twith spaces"
    assert len(r.headers["x-request-id"]) == 32
    generated = {api.client.get("/healthz").headers["x-request-id"] for _ in range(3)}
    assert len(generated) == 3
