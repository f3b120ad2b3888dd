"""`FakeMessagesServer`: a scripted Anthropic Messages API on loopback, for tests that drive the
real `anthropic` SDK (`anthropic.Anthropic(base_url=server.base_url, ...)`).

It answers `POST /v1/messages` with what the test scripted: a queue of replies, then a responder
callable, each a text (wrapped in a valid Message) or a `FakeReply` (any status, a raw body, a
delay). Every request is recorded in `.requests` (path, headers, parsed JSON body) for the test to
inspect; nothing is logged.

    with FakeMessagesServer(replies=['{"action": "NEW", "merged_text": null}']) as server:
        client = anthropic.Anthropic(api_key="test", base_url=server.base_url, max_retries=0)
"""

from __future__ import annotations

import itertools
import json
import threading
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}


@dataclass(frozen=True, slots=True)
class FakeReply:
    """One scripted answer.

    - `text`: the assistant's text, wrapped in a valid Message (status 200).
    - `status`: another status answers with an Anthropic error envelope (or `body`).
    - `body`: sent verbatim instead of the envelope (malformed responses).
    - `delay_s`: wait this long before answering (a slow model; the client may time out).
    """

    text: str | None = None
    status: int = 200
    body: str | None = None
    delay_s: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    """One request as the server received it."""

    method: str
    path: str
    headers: dict[str, str]
    json: Any

    def prompt_text(self) -> str:
        """The system prompt and every message text of the request, joined (for assertions)."""
        body = self.json if isinstance(self.json, dict) else {}
        parts: list[str] = []
        system = body.get("system")
        parts.extend(_texts(system))
        for message in body.get("messages", []):
            parts.extend(_texts(message.get("content")))
        return "\n".join(parts)


def _texts(content: Any) -> Iterable[str]:
    if isinstance(content, str):
        yield content
    elif isinstance(content, list):
        for block in content:
            if isinstance(block, dict) and isinstance(block.get("text"), str):
                yield block["text"]


Responder = Callable[[Any], "str | FakeReply"]


class FakeMessagesServer:
    """A real HTTP server on 127.0.0.1 (random port, background thread); a context manager.

    Replies come from `replies` in order, then from `responder(request_json)`; with neither
    left, the server answers 500 so that an unscripted call fails loudly.
    """

    def __init__(
        self,
        replies: Iterable[str | FakeReply] = (),
        responder: Responder | None = None,
    ) -> None:
        self._replies: deque[str | FakeReply] = deque(replies)
        self.responder = responder
        self.requests: list[RecordedRequest] = []
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._ids = itertools.count(1)
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        """`http://127.0.0.1:<port>`: the SDK's `base_url`."""
        if self._server is None:
            raise RuntimeError("FakeMessagesServer is not started")
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def add_reply(self, reply: str | FakeReply) -> None:
        """Queue one more reply."""
        with self._lock:
            self._replies.append(reply)

    def start(self) -> FakeMessagesServer:
        """Bind a free loopback port and serve in a daemon thread."""
        handler = _handler_for(self)
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},  # `close` waits for one poll: not 0.5 s
            name="fake-messages",
            daemon=True,
        )
        self._thread.start()
        return self

    def close(self) -> None:
        """Stop serving; delayed replies still waiting are cut short."""
        self._closing.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> FakeMessagesServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _next_reply(self, body: Any) -> FakeReply:
        with self._lock:
            scripted = self._replies.popleft() if self._replies else None
        if scripted is None and self.responder is not None:
            scripted = self.responder(body)
        if scripted is None:
            return FakeReply(status=500, body=_error_body(500, "no scripted reply"))
        return FakeReply(text=scripted) if isinstance(scripted, str) else scripted

    def _message(self, request: Any, text: str) -> str:
        model = request.get("model", "fake-model") if isinstance(request, dict) else "fake-model"
        return json.dumps(
            {
                "id": f"msg_fake_{next(self._ids):06d}",
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [{"type": "text", "text": text}],
                "stop_reason": "end_turn",
                "stop_sequence": None,
                "usage": {"input_tokens": 10, "output_tokens": max(1, len(text) // 4)},
            }
        )


def _error_body(status: int, message: str) -> str:
    kind = _ERROR_TYPES.get(status, "api_error")
    return json.dumps({"type": "error", "error": {"type": kind, "message": message}})


def _handler_for(server: FakeMessagesServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            """Silent: request bodies hold note text and are never logged."""

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body: Any = json.loads(raw or b"null")
            except ValueError:
                body = None
            path = self.path.split("?", 1)[0]
            server.requests.append(
                RecordedRequest("POST", path, {k.lower(): v for k, v in self.headers.items()}, body)
            )
            if path != "/v1/messages":
                self._send(404, _error_body(404, "not found"), {})
                return
            reply = server._next_reply(body)
            if reply.delay_s > 0 and server._closing.wait(reply.delay_s):
                return
            if reply.body is not None:
                payload = reply.body
            elif reply.status == 200:
                payload = server._message(body, reply.text or "")
            else:
                payload = _error_body(reply.status, "scripted error")
            self._send(reply.status, payload, reply.headers)

        def _send(self, status: int, payload: str, headers: dict[str, str]) -> None:
            data = payload.encode("utf-8")
            try:
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.send_header("request-id", "req_fake")
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (timed out) before the answer

    return Handler
