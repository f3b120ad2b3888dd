"""OpenTelemetry spans (the `otel` extra) for requests and stages, with no text in attributes."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from memvault.observability import (
    configure_tracing_from_env,
    disable_tracing,
    enable_tracing,
    tracing_enabled,
)
from tests.apiclient import Api
from tests.conftest import ServicesFactory

sdk_trace = pytest.importorskip("opentelemetry.sdk.trace")
in_memory = pytest.importorskip("opentelemetry.sdk.trace.export.in_memory_span_exporter")
export = pytest.importorskip("opentelemetry.sdk.trace.export")

NOTE = "The user waters the basil on the balcony every evening"
SECRET = "AKIAIOSFODNN7EXAMPLE"


@pytest.fixture
def spans() -> Iterator[Any]:
    exporter = in_memory.InMemorySpanExporter()
    provider = sdk_trace.TracerProvider()
    provider.add_span_processor(export.SimpleSpanProcessor(exporter))
    assert enable_tracing(provider)
    try:
        yield exporter
    finally:
        disable_tracing()


def test_spans_cover_request_and_stages_and_hold_no_text(
    make_services: ServicesFactory, spans: Any
) -> None:
    api = Api(make_services("sqlite"))
    key = api.agent_key("acme", "alice", "gardener")
    note = api.add(key, NOTE)
    api.search(key, "what happens on the balcony?")
    r = api.call("POST", "/v1/memories", key, json={"text": f"the key is {SECRET}"})
    assert r.status_code == 422

    finished = spans.get_finished_spans()
    names = {s.name for s in finished}
    assert {"memvault.request", "memvault.embed", "memvault.index", "memvault.sql"} <= names
    assert "memvault.screen" in names
    routes = {s.attributes.get("http.route") for s in finished if s.name == "memvault.request"}
    assert {"/v1/memories", "/v1/memories/search"} <= routes
    stage = next(s for s in finished if s.name == "memvault.embed")
    assert stage.parent is not None  # nested in its request's span
    for s in finished:
        for attr, val in (s.attributes or {}).items():
            text = str(val)
            for needle in (NOTE, "basil", "balcony", SECRET, key, note["id"]):
                assert needle not in text, (s.name, attr)


def test_tracing_is_off_without_the_env_flag(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MEMVAULT_OTEL", raising=False)
    assert configure_tracing_from_env() is False
    assert not tracing_enabled()


def test_tracing_turns_on_with_the_env_flag_and_the_sdk(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMVAULT_OTEL", "1")
    try:
        assert configure_tracing_from_env() is True
        assert tracing_enabled()
    finally:
        disable_tracing()
    assert not tracing_enabled()


def test_a_global_provider_gets_memvault_spans_only(
    make_services: ServicesFactory, spans: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a global tracer provider set (as MEMVAULT_OTEL=1 sets it), the framework adds none
    of its own spans or exception logs: those would carry raw paths (note ids) and messages."""
    trace = pytest.importorskip("opentelemetry.trace")
    provider = sdk_trace.TracerProvider()
    provider.add_span_processor(export.SimpleSpanProcessor(spans))
    monkeypatch.setattr(trace, "get_tracer_provider", lambda: provider)
    api = Api(make_services("sqlite"))
    key = api.agent_key("acme", "alice", "gardener")
    note = api.add(key, NOTE)
    assert api.call("GET", f"/v1/memories/{note['id']}", key).status_code == 200
    assert api.call("GET", "/v1/memories/nope?x=" + SECRET, key).status_code in (404, 422)

    finished = spans.get_finished_spans()
    assert "memvault.request" in {s.name for s in finished}
    assert {s.name for s in finished if not s.name.startswith("memvault.")} == set()
    for s in finished:
        for attr, val in (s.attributes or {}).items():
            for needle in (NOTE, SECRET, key, note["id"]):
                assert needle not in str(val), (s.name, attr)
