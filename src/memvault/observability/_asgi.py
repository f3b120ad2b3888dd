"""`RequestObserver`: the outermost ASGI layer, for request ids, latency and an access line.

It wraps the whole middleware stack (the request guard included), so a 405, a 413 or a 500 from
the guard is measured and carries the request id too. It labels by the route template
(`/v1/memories/{note_id}`), never the raw path, and by the status class (`2xx` ... `5xx`).
"""

from __future__ import annotations

import logging
import time
from typing import Any

from prometheus_client import CollectorRegistry, Histogram
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from memvault.observability import _tracing
from memvault.observability._context import begin_request, end_request
from memvault.observability._metrics import REQUEST_BUCKETS, REQUEST_STAGE_SECONDS

access_log = logging.getLogger("memvault.access")

REQUEST_ID_HEADER = b"x-request-id"
_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


def route_template(scope: Scope) -> str:
    """The matched route's path template, or `unmatched` (a 404 or a refused request)."""
    return str(getattr(scope.get("route"), "path", "unmatched"))


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key == name:
            try:
                return str(value.decode("ascii"))
            except UnicodeDecodeError:
                return None
    return None


class RequestObserver:
    """Pure ASGI middleware: request id in and out, latency histogram, per-stage totals."""

    def __init__(self, app: ASGIApp, latency: Histogram) -> None:
        self.app = app
        self.latency = latency

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        ctx, token = begin_request(_header(scope, REQUEST_ID_HEADER))
        rid = ctx.request_id.encode("ascii")
        status = 500
        method = scope["method"] if scope["method"] in _METHODS else "other"

        async def send_with_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
                headers = [(k, v) for k, v in message.get("headers", ()) if k != REQUEST_ID_HEADER]
                headers.append((REQUEST_ID_HEADER, rid))
                message = {**message, "headers": headers}
            await send(message)

        start = time.perf_counter()
        try:
            with _tracing.span("memvault.request", {"http.request.method": method}) as span:
                await self.app(scope, receive, send_with_id)
                self._annotate(span, scope, status, ctx.request_id)
        finally:
            seconds = time.perf_counter() - start
            route = route_template(scope)
            self.latency.labels(method, route, f"{status // 100}xx").observe(seconds)
            for stage, spent in ctx.stages.items():
                REQUEST_STAGE_SECONDS.labels(route, stage).observe(spent)
            access_log.info(
                "%s %s %d %.1fms",
                method,
                route,
                status,
                seconds * 1000,
                extra={
                    "method": method,
                    "route": route,
                    "status": status,
                    "duration_ms": round(seconds * 1000, 3),
                },
            )
            end_request(token)

    @staticmethod
    def _annotate(span: Any, scope: Scope, status: int, request_id: str) -> None:
        if span is None:
            return
        span.set_attribute("http.route", route_template(scope))
        span.set_attribute("http.response.status_code", status)
        span.set_attribute("memvault.request_id", request_id)


def request_latency(registry: CollectorRegistry) -> Histogram:
    """The request latency histogram (method, route template, status class) in `registry`."""
    return Histogram(
        "memvault_request_duration_seconds",
        "HTTP request latency by method, route template and status class",
        ["method", "route", "status_class"],
        buckets=REQUEST_BUCKETS,
        registry=registry,
    )


def install_request_observer(app: Any, registry: CollectorRegistry) -> None:
    """Make `RequestObserver` wrap `app`'s whole middleware stack, built on the first request.

    Call it after everything else that hooks `build_middleware_stack` (the request guard), so it
    ends up outermost. Registers the latency histogram in `registry` (the app's).
    """
    latency = request_latency(registry)
    build = app.build_middleware_stack

    def build_observed() -> ASGIApp:
        return RequestObserver(build(), latency)

    app.build_middleware_stack = build_observed
