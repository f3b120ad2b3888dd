"""Optional OpenTelemetry spans: off unless the `otel` extra is installed and MEMVAULT_OTEL=1.

Span attributes are names and numbers only (a stage, an operation, a route template, a status,
a request id): never a path, a query, an id of a note or any text. When tracing is off, the
timing helpers check one module global and create nothing.
"""

from __future__ import annotations

import os
from contextlib import AbstractContextManager, nullcontext
from typing import Any

ENV_FLAG = "MEMVAULT_OTEL"
"""Set to `1` to turn tracing on (it also needs `pip install memvault[otel]`)."""

_tracer: Any = None


def tracing_enabled() -> bool:
    """Whether spans are being recorded."""
    return _tracer is not None


def enable_tracing(provider: Any = None) -> bool:
    """Record spans through `provider` (a `TracerProvider`; default: the global one).

    Returns False, changing nothing, when `opentelemetry` is not installed.
    """
    global _tracer
    try:
        from opentelemetry import trace
    except ImportError:
        return False
    source = provider if provider is not None else trace.get_tracer_provider()
    _tracer = source.get_tracer("memvault")
    return True


def disable_tracing() -> None:
    """Stop recording spans (tests switch tracing off again)."""
    global _tracer
    _tracer = None


def configure_tracing_from_env() -> bool:
    """Turn tracing on when MEMVAULT_OTEL=1 and the SDK is installed; True when it is on.

    Spans go to an OTLP/HTTP exporter when `opentelemetry-exporter-otlp-proto-http` is installed
    (configured by the standard `OTEL_EXPORTER_OTLP_*` variables), else nowhere but the SDK.
    """
    if os.environ.get(ENV_FLAG) != "1":
        return False
    try:
        from opentelemetry import trace
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError:
        return False
    provider = TracerProvider(resource=Resource.create({"service.name": "memvault"}))
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    except ImportError:
        pass
    else:
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    return enable_tracing(provider)


def span(name: str, attributes: dict[str, str | int | float]) -> AbstractContextManager[Any]:
    """A span called `name` when tracing is on, else a no-op context manager."""
    tracer = _tracer
    if tracer is None:
        return nullcontext()
    return tracer.start_as_current_span(name, attributes=attributes)
