"""The outermost request guard: methods, body limits, JSON depth, and a JSON 500 for the rest.

It runs before routing:
- A method the path does not support is a 405 whose `Allow` lists every method of that path
  (Starlette names only the first route it tried). A literal path outranks a parameter:
  `PATCH /v1/memories/search` is a 405, not a PATCH of the note called "search".
- An oversized or over-deep body is refused before anything parses it (Python's JSON parser raises
  `RecursionError` on ~1,000 nested arrays).
- An exception nothing else handled still leaves in the documented error shape, with a
  correlation id that is also logged. Logs carry the exception type and the code location, never
  its message or request values.
"""

from __future__ import annotations

import json
import logging
import re
import traceback
from collections.abc import Callable
from typing import Any

from fastapi import FastAPI
from fastapi.routing import iter_route_contexts
from starlette.middleware import Middleware
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from memvault.api.errors import correlation_id, error_body

log = logging.getLogger("memvault.api")

MAX_BODY_BYTES = 2 * 1024 * 1024
"""Request bodies above this are refused with 413 (the largest valid body is well under 1 MiB)."""
MAX_JSON_DEPTH = 32
"""JSON bodies nested deeper than this are refused with 400 (valid bodies nest 2 levels)."""

_JSON_STRING = re.compile(rb'"(?:[^"\\]++|\\.)*+"', re.DOTALL)
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")

_KNOWN_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})

Observer = Callable[[Scope, int], None]
"""Called once per HTTP request with the (routed) scope and the response status."""


def json_depth(body: bytes) -> int:
    """The bracket nesting depth of a JSON document (strings skipped). Linear time."""
    brackets = _JSON_STRING.sub(b'""', body).translate(None, _NOT_BRACKETS)
    depth = deepest = 0
    for byte in brackets:
        if byte in b"[{":
            depth += 1
            deepest = max(deepest, depth)
        else:
            depth -= 1
    return deepest


def _is_json(scope: Scope) -> bool:
    for name, value in scope.get("headers", ()):
        if name == b"content-type":
            media = value.split(b";", 1)[0].strip().lower()
            return media == b"application/json" or media.endswith(b"+json")
    return False


def _content_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


def replay_body(body: bytes, receive: Receive) -> Receive:
    """A `receive` that gives the buffered `body` as one message, then defers to `receive`.

    For a middleware that read the whole request body before passing the request on.
    """
    replayed = False

    async def replay() -> Message:
        nonlocal replayed
        if not replayed:
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


async def _send_error(send: Send, status: int, code: str, message: str, **headers: str) -> None:
    body = json.dumps(error_body(code, message), separators=(",", ":")).encode()
    raw = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        *((k.lower().replace("_", "-").encode(), v.encode()) for k, v in headers.items()),
    ]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})


_REGEX_SPECIAL = frozenset(".^$*+?{}[]|()\\")


def literal_prefix(pattern: str) -> tuple[str, bool]:
    """The literal start of a route's regex, and whether the regex is that string exactly.

    Every path the regex matches starts with the prefix (`^/v1/memories/(?P<note_id>...)$`
    gives `/v1/memories/`); `^/v1/memories$` is exactly `/v1/memories`.
    """
    out: list[str] = []
    i = 1 if pattern.startswith("^") else 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\" and i + 1 < len(pattern) and not pattern[i + 1].isalnum():
            out.append(pattern[i + 1])  # an escaped literal character
            i += 2
            continue
        if ch in _REGEX_SPECIAL:
            break
        out.append(ch)
        i += 1
    return "".join(out), pattern[i:] == "$"


class MethodTable:
    """Which methods each routed path supports, from the app's routes (built once).

    A literal route's path is looked up in a dict; only the routes whose literal prefix the
    path starts with run their regex (matching every route's regex cost a per-request scan).
    """

    def __init__(self, routes: list[Any]) -> None:
        self._exact: dict[str, set[str]] = {}
        self._scanned: list[tuple[str, re.Pattern[str], bool, frozenset[str]]] = []
        for context in iter_route_contexts(routes):
            regex = getattr(context, "path_regex", None)
            methods = getattr(context, "methods", None)
            if regex is None or not methods:
                continue  # mounts (static assets) answer for themselves
            literal = not getattr(context, "param_convertors", None)
            prefix, exact = literal_prefix(regex.pattern)
            if literal and exact:
                self._exact.setdefault(prefix, set()).update(methods)
            else:
                self._scanned.append((prefix, regex, literal, frozenset(methods)))

    def allowed(self, path: str) -> frozenset[str] | None:
        """The methods of `path`, or None when no route matches it (a 404 for the router).

        Literal routes win over templated ones (`/v1/memories/search` is not a note id)."""
        literal: set[str] = set(self._exact.get(path, ()))
        templated: set[str] = set()
        for prefix, regex, is_literal, methods in self._scanned:
            if path.startswith(prefix) and regex.match(path):
                (literal if is_literal else templated).update(methods)
        if literal:
            return frozenset(literal)
        return frozenset(templated) if templated else None


def _route_path(scope: Scope) -> str:
    path: str = scope.get("path", "")
    root: str = scope.get("root_path", "")
    return path[len(root) :] if root and path.startswith(root) else path


class RequestGuard:
    """Pure ASGI middleware; `install_guard` makes it the outermost one."""

    def __init__(self, app: ASGIApp, observe: Observer | None = None) -> None:
        self.app = app
        self.observe = observe
        self._methods: MethodTable | None = None

    def _allowed(self, scope: Scope) -> frozenset[str] | None:
        if self._methods is None:
            routed = scope.get("app")
            self._methods = MethodTable(list(getattr(routed, "routes", [])))
        return self._methods.allowed(_route_path(scope))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        status: int | None = None
        started = False

        async def send_tracked(message: Message) -> None:
            nonlocal status, started
            if message["type"] == "http.response.start":
                started = True
                status = int(message["status"])
            await send(message)

        try:
            allowed = self._allowed(scope)
            if allowed is not None and scope["method"] not in allowed:
                await _send_error(
                    send_tracked,
                    405,
                    "method_not_allowed",
                    "method not allowed (see the Allow header)",
                    allow=", ".join(sorted(allowed)),
                )
                return
            replay = await self._read_body(scope, receive, send_tracked)
            if replay is not None:
                await self.app(scope, replay, send_tracked)
        except Exception as exc:
            cid = correlation_id()
            frames = traceback.extract_tb(exc.__traceback__)[-8:]
            where = " <- ".join(
                f"{f.name}@{f.filename.rsplit('/', 1)[-1]}:{f.lineno}" for f in reversed(frames)
            )
            # The exception's message may quote a request value: log its type and location only.
            log.error(
                "unhandled %s on %s %s correlation_id=%s at %s",
                type(exc).__name__,
                scope["method"] if scope["method"] in _KNOWN_METHODS else "other",
                getattr(scope.get("route"), "path", "unmatched"),
                cid,
                where,
            )
            if started:
                raise
            await _send_error(
                send_tracked,
                500,
                "internal_error",
                f"internal error (correlation id {cid})",
                x_correlation_id=cid,
            )
        finally:
            if self.observe is not None and status is not None:
                self.observe(scope, status)

    async def _read_body(self, scope: Scope, receive: Receive, send: Send) -> Receive | None:
        """Buffer the body within the limits and return a `receive` that replays it.

        Returns None when the request was refused (the error response is already sent).
        """
        declared = _content_length(scope)
        if declared is not None and declared > MAX_BODY_BYTES:
            await _send_error(
                send, 413, "body_too_large", f"request body exceeds {MAX_BODY_BYTES} bytes"
            )
            return None
        chunks: list[bytes] = []
        size = 0
        more = True
        while more:
            message = await receive()
            if message["type"] != "http.request":  # the client went away
                return None
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > MAX_BODY_BYTES:
                await _send_error(
                    send, 413, "body_too_large", f"request body exceeds {MAX_BODY_BYTES} bytes"
                )
                return None
            chunks.append(chunk)
            more = bool(message.get("more_body", False))
        body = b"".join(chunks)
        if body and _is_json(scope) and json_depth(body) > MAX_JSON_DEPTH:
            await _send_error(
                send, 400, "body_too_deep", f"JSON body nests deeper than {MAX_JSON_DEPTH} levels"
            )
            return None
        return replay_body(body, receive)


def install_guard(app: FastAPI, observe: Observer | None = None) -> None:
    """Make `RequestGuard` the outermost user middleware, whatever is added after this call.

    The stack is built on the first request; the guard is put first then, so a middleware added
    later (idempotency) still runs inside it: its 405s, 413s and 400s come first, and an
    exception anywhere inside leaves as a JSON 500.
    """
    build = app.build_middleware_stack

    def build_with_guard() -> ASGIApp:
        if not any(m.cls is RequestGuard for m in app.user_middleware):
            app.user_middleware.insert(0, Middleware(RequestGuard, observe=observe))
        return build()

    app.build_middleware_stack = build_with_guard  # type: ignore[method-assign]
