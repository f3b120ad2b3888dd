"""The current request: its id and the time it spent per stage, in a context variable.

Starlette runs sync endpoints in a worker thread with a copy of the request's context, so the
vault code called from an endpoint sees the same `RequestContext` object and adds to it.
"""

from __future__ import annotations

import re
import uuid
from contextvars import ContextVar, Token
from dataclasses import dataclass, field

_REQUEST_ID = re.compile(r"[A-Za-z0-9._:-]{1,64}")


@dataclass(slots=True)
class RequestContext:
    """One request's id and its seconds per stage (embed, index, sql, screen)."""

    request_id: str
    stages: dict[str, float] = field(default_factory=dict)

    def add(self, stage: str, seconds: float) -> None:
        """Add `seconds` to `stage` (called from the thread that ran the stage)."""
        self.stages[stage] = self.stages.get(stage, 0.0) + seconds


_current: ContextVar[RequestContext | None] = ContextVar("memvault_request", default=None)


def current_request() -> RequestContext | None:
    """The request being served in this context, or None (a CLI command, a background job)."""
    return _current.get()


def current_request_id() -> str | None:
    """The id of the request being served, or None outside a request."""
    ctx = _current.get()
    return None if ctx is None else ctx.request_id


def begin_request(request_id: str | None) -> tuple[RequestContext, Token[RequestContext | None]]:
    """Start a request context; the id is the caller's if well formed, else a new one."""
    ctx = RequestContext(request_id_or_new(request_id))
    return ctx, _current.set(ctx)


def end_request(token: Token[RequestContext | None]) -> None:
    """Leave the request context started by `begin_request`."""
    _current.reset(token)


def request_id_or_new(candidate: str | None) -> str:
    """`candidate` when it is 1-64 characters of `[A-Za-z0-9._:-]`, else a fresh random id.

    A client's id is echoed into logs and a response header, so anything else (spaces, quotes,
    newlines, a long value that could carry text) is replaced rather than cleaned.
    """
    if candidate and _REQUEST_ID.fullmatch(candidate):
        return candidate
    return uuid.uuid4().hex
