"""A real HTTP receiver on loopback, and services that can be stopped and opened again."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from memvault.embed.base import Embedder
from memvault.runtime.factory import Services
from memvault.webhooks.hub import EVENT_TYPES
from tests.apiclient import Api
from tests.conftest import OpenedServices


@dataclass
class Received:
    """One POST the receiver got: its headers (lower-cased names) and raw body."""

    headers: dict[str, str]
    body: bytes

    @property
    def event(self) -> dict[str, Any]:
        return dict(json.loads(self.body))


@dataclass
class Receiver:
    """A threaded `http.server` on 127.0.0.1 that records every POST; it answers 500 to the
    first `fail_first` of them, then 204."""

    fail_first: int = 0
    delay: float = 0.0
    received: list[Received] = field(default_factory=list)
    answered: list[int] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.server_address[1]}/hook"

    def start(self) -> Receiver:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                if owner.delay:
                    time.sleep(owner.delay)
                with owner.lock:
                    seen = len(owner.answered)
                    status = 500 if seen < owner.fail_first else 204
                    owner.answered.append(status)
                    if status == 204:
                        headers = {k.lower(): v for k, v in self.headers.items()}
                        owner.received.append(Received(headers, body))
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *_args: object) -> None:
                return None

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()

    def events(self, event_type: str | None = None) -> list[dict[str, Any]]:
        with self.lock:
            found = [r.event for r in self.received]
        return [e for e in found if event_type is None or e["type"] == event_type]


@pytest.fixture
def receivers() -> Iterator[Callable[..., Receiver]]:
    started: list[Receiver] = []

    def make(**kw: Any) -> Receiver:
        started.append(Receiver(**kw).start())
        return started[-1]

    yield make
    for receiver in started:
        receiver.stop()


Opener = Callable[[], Services]


@pytest.fixture
def reopenable(
    tmp_path: Path, embedder: Embedder, screen: object, backend: str
) -> Iterator[Opener]:
    """Opens services on one data dir and database (SQLite, or one PostgreSQL schema) each
    time it is called: a server stopped and started again. The delivery thread is off; tests
    drive `services.deliverer.run_once()` unless they start the services."""
    opened = OpenedServices()
    settings = opened.settings(backend, tmp_path / "data", webhook_poll_seconds=0.05)

    def open_once() -> Services:
        services = opened.open(settings, embedder=embedder, screen=screen)
        services.deliverer.retry_base = 0.05
        return services

    yield open_once
    opened.close()


def key_id_of(token: str) -> str:
    """The key id inside an API key `mvk_<tenant>.<key id>.<secret>`."""
    return token.split(".")[-2]


def subscribe(api: Api, tenant: str, url: str, events: list[str] | None = None) -> dict[str, Any]:
    """Create a webhook of `tenant` (every event type by default); its answer, with the secret."""
    body = {"url": url, "events": events or list(ALL_EVENTS)}
    r = api.call("POST", "/v1/admin/webhooks", api.tenant(tenant), json=body)
    assert r.status_code == 201, r.text
    return dict(r.json())


def drain(services: Services, until: Callable[[], bool], seconds: float = 10.0) -> None:
    """Run delivery passes until `until()` holds (or fail after `seconds`)."""
    deadline = time.monotonic() + seconds
    while not until():
        assert time.monotonic() < deadline, "deliveries did not arrive in time"
        services.deliverer.run_once()
        time.sleep(0.02)


ALL_EVENTS = EVENT_TYPES
