"""The ASGI side of `Idempotency-Key`: the middleware, the response capture, `install_idempotency`.

The middleware authenticates the caller like the routes do, buffers the request body (bounded)
and replays it to the app, and holds the response until it is complete, then stores it (through
`IdempotencyEngine`) before sending it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable
from typing import Any

import anyio
from anyio import to_thread
from fastapi import FastAPI
from starlette.types import ASGIApp, Message, Receive, Send
from starlette.types import Scope as AsgiScope

from memvault.api.boundary import replay_body
from memvault.api.deps import AUTHENTICATED
from memvault.api.idempotency._engine import (
    HEARTBEAT_SECONDS,
    LEASE_SECONDS,
    MAX_REQUEST_BYTES,
    MAX_RESPONSE_BYTES,
    IdempotencyEngine,
)
from memvault.api.idempotency._keys import (
    HEADER,
    REPLAYED_HEADER,
    SESSION_HEADER,
    Call,
    InvalidIdempotencyKey,
    StoredResponse,
    parse_idempotency_key,
    request_digest,
)
from memvault.store.idempotency_records import TTL_SECONDS

log = logging.getLogger("memvault.api.idempotency")

METHODS = frozenset({"POST", "PATCH", "DELETE"})

_HEADER_BYTES = HEADER.lower().encode()
# Headers recomputed on replay or meaningless in a replay; everything else is replayed.
_UNSTORED_HEADERS = frozenset(
    {
        b"content-length",
        b"date",
        b"server",
        b"set-cookie",
        b"connection",
        b"transfer-encoding",
        REPLAYED_HEADER.lower().encode(),
    }
)


def _error(status: int, code: str, message: str) -> StoredResponse:
    body = json.dumps({"error": {"code": code, "message": message}}).encode()
    headers: tuple[tuple[bytes, bytes], ...] = ((b"content-type", b"application/json"),)
    if code == "idempotency_key_in_progress":
        headers += ((b"retry-after", b"1"),)
    return StoredResponse(status, headers, body)


async def _send(send: Send, response: StoredResponse, *, replayed: bool = False) -> None:
    headers = [*response.headers, (b"content-length", str(len(response.body)).encode())]
    if replayed:
        headers.append((REPLAYED_HEADER.lower().encode(), b"true"))
    await send({"type": "http.response.start", "status": response.status, "headers": headers})
    await send({"type": "http.response.body", "body": response.body, "more_body": False})


async def _in_thread(func: Callable[..., Any], *args: Any) -> Any:
    """Run blocking database work off the event loop, even while the request is cancelled."""
    with anyio.CancelScope(shield=True):
        return await to_thread.run_sync(func, *args)


def _session_of(headers: list[tuple[bytes, bytes]]) -> bytes | None:
    """The request's `X-Session-Id` values (NUL-joined, in order), or None without one."""
    values = [v for k, v in headers if k.lower() == SESSION_HEADER]
    return b"\x00".join(values) if values else None


class _Capture:
    """The app's `send`: holds the response until it is complete (or too large to store)."""

    def __init__(self, send: Send, limit: int, on_passthrough: Callable[[], Any]) -> None:
        self._send = send
        self._limit = limit
        self._on_passthrough = on_passthrough
        self.start: Message | None = None
        self.chunks: list[bytes] = []
        self.size = 0
        self.complete = False
        self.passthrough = False

    async def __call__(self, message: Message) -> None:
        if self.passthrough:
            await self._send(message)
            return
        kind = message["type"]
        if kind == "http.response.start":
            self.start = message
            return
        if kind == "http.response.body":
            body = bytes(message.get("body", b""))
            self.chunks.append(body)
            self.size += len(body)
            if not message.get("more_body", False):
                self.complete = True
            elif self.size > self._limit:
                await self._stream(None)
            return
        await self._stream(message)  # anything else (trailers, pathsend): stop holding

    async def _stream(self, message: Message | None) -> None:
        self.passthrough = True
        await self._on_passthrough()
        if self.start is not None:
            await self._send(self.start)
        await self._send(
            {"type": "http.response.body", "body": b"".join(self.chunks), "more_body": True}
        )
        if message is not None:
            await self._send(message)

    def response(self) -> StoredResponse | None:
        if self.start is None or not self.complete:
            return None
        headers = tuple(
            (bytes(k).lower(), bytes(v))
            for k, v in self.start.get("headers", ())
            if bytes(k).lower() not in _UNSTORED_HEADERS
        )
        return StoredResponse(int(self.start["status"]), headers, b"".join(self.chunks))


class IdempotencyMiddleware:
    """Pure ASGI middleware; install it with `install_idempotency(app)`."""

    def __init__(self, app: ASGIApp, state: Any) -> None:
        self.app = app
        self._state = state  # `app.state`: a later `install_idempotency` may reconfigure

    @property
    def engine(self) -> IdempotencyEngine:
        """The engine `install_idempotency` put on `app.state` last."""
        engine: IdempotencyEngine = self._state.idempotency
        return engine

    async def __call__(self, scope: AsgiScope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] not in METHODS:
            await self.app(scope, receive, send)
            return
        headers: list[tuple[bytes, bytes]] = scope["headers"]
        values = [v for k, v in headers if k.lower() == _HEADER_BYTES]
        if not values:
            await self.app(scope, receive, send)
            return
        authorization = next(
            (v.decode("latin-1") for k, v in headers if k.lower() == b"authorization"), ""
        )
        principal = await _in_thread(self.engine.authenticate, authorization)
        if principal is None:  # unauthenticated: the route answers 401, nothing is stored
            await self.app(scope, receive, send)
            return
        # The route's `get_principal` reuses this for the very same Authorization header.
        scope.setdefault("state", {})[AUTHENTICATED] = (authorization, principal)
        try:
            key = parse_idempotency_key(values)
        except InvalidIdempotencyKey as exc:
            await _send(send, _error(422, "invalid_request", str(exc)))
            return
        if principal.tenant is None or principal.user is None or principal.agent is None:
            await self.app(scope, receive, send)  # the operator key: executed, never stored
            return
        body, complete = await self._read_body(receive)
        if body is None:
            if complete:
                limit = self.engine.max_request_bytes
                message = f"a request with {HEADER} may carry at most {limit} bytes"
                await _send(send, _error(413, "body_too_large", message))
            return  # the client went away
        call = Call(
            principal.tenant,
            principal.user,
            principal.agent,
            principal.key_id,
            key,
            request_digest(
                scope["method"],
                scope["path"],
                bytes(scope.get("query_string", b"")),
                body,
                _session_of(headers),
            ),
        )
        await self._run(scope, receive, send, call, body)

    async def _read_body(self, receive: Receive) -> tuple[bytes | None, bool]:
        """(body, True); (None, True) when over the limit; (None, False) on disconnect."""
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return None, False
            if message["type"] != "http.request":
                continue
            chunk = bytes(message.get("body", b""))
            size += len(chunk)
            if size > self.engine.max_request_bytes:
                return None, True
            chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks), True

    async def _run(
        self, scope: AsgiScope, receive: Receive, send: Send, call: Call, body: bytes
    ) -> None:
        engine = self.engine
        token = engine.new_token()
        try:
            call, begun = await _in_thread(engine.begin, call, token)
        except BaseException:
            engine.forget(token)
            raise
        if begun.kind != "execute":
            engine.forget(token)
            if begun.kind == "replay":
                assert begun.response is not None
                await _send(send, begun.response, replayed=True)
            elif begun.kind == "reused":
                message = f"this {HEADER} was used with a different request"
                await _send(send, _error(409, "idempotency_key_reused", message))
            else:
                message = f"a request with this {HEADER} is still in progress; retry later"
                await _send(send, _error(409, "idempotency_key_in_progress", message))
            return

        released = False

        async def release() -> None:
            nonlocal released
            if not released:
                released = True
                await _in_thread(engine.release, call, token)

        capture = _Capture(send, engine.max_response_bytes, release)
        heartbeat = asyncio.get_running_loop().create_task(self._heartbeat(call, token))
        try:
            try:
                await self.app(scope, replay_body(body, receive), capture)
            finally:
                heartbeat.cancel()
                await asyncio.wait([heartbeat])  # never raises the beat's own cancellation
            response = capture.response()
            if capture.passthrough:
                return
            if response is None or len(response.body) > engine.max_response_bytes:
                await release()
            else:
                try:
                    await _in_thread(engine.finish, call, token, response)
                except Exception:
                    log.exception("storing an idempotent response failed; key released")
                    await release()
            if response is not None:
                await _send(send, response)
        except BaseException:
            await release()
            raise
        finally:
            engine.forget(token)

    async def _heartbeat(self, call: Call, token: str) -> None:
        while True:
            await asyncio.sleep(self.engine.heartbeat)
            try:
                await to_thread.run_sync(self.engine.touch, call, token)
            except Exception:  # the next beat, or the lease, settles it
                log.warning("idempotency lease renewal failed", exc_info=True)


def install_idempotency(
    app: FastAPI,
    *,
    clock: Callable[[], float] = time.time,
    ttl_seconds: float = TTL_SECONDS,
    lease_seconds: float = LEASE_SECONDS,
    heartbeat_seconds: float = HEARTBEAT_SECONDS,
    max_request_bytes: int = MAX_REQUEST_BYTES,
    max_response_bytes: int = MAX_RESPONSE_BYTES,
    single_process: bool | None = None,
) -> None:
    """Honour `Idempotency-Key` on POST, PATCH and DELETE of `app` (call before it serves).

    Added as the outermost user middleware, so a replay skips the routes entirely. Installing
    again (before the app serves) replaces the settings; the middleware is added once.
    `single_process` (default: True on SQLite, False on PostgreSQL) says that no other server
    shares the database, so a retry after a restart takes over a dead attempt at once instead
    of after its lease (`lease_seconds`).
    """
    installed = getattr(app.state, "idempotency", None) is not None
    engine = IdempotencyEngine(
        app,
        clock=clock,
        ttl_seconds=ttl_seconds,
        lease_seconds=lease_seconds,
        heartbeat_seconds=heartbeat_seconds,
        max_request_bytes=max_request_bytes,
        max_response_bytes=max_response_bytes,
        single_process=single_process,
    )
    app.state.idempotency = engine
    if not installed:
        app.add_middleware(IdempotencyMiddleware, state=app.state)
