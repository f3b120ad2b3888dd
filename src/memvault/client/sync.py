"""`Client`: the synchronous memvault SDK (httpx)."""

from __future__ import annotations

import time
from collections.abc import Generator, Iterator
from contextlib import contextmanager
from types import TracebackType
from typing import Any, TypeVar

import httpx

from memvault.client import _calls
from memvault.client._methods import Methods
from memvault.client._plan import Emit, Plan, Send, Sleep, StreamLines, SyncTransport, response

T = TypeVar("T")


class Client(Methods, SyncTransport):
    """A synchronous client for one API key (agent, tenant admin, auditor or operator).

    `base_url` defaults to env `MEMVAULT_URL` (else `http://127.0.0.1:8700`) and `api_key` to env
    `MEMVAULT_API_KEY`. Every POST, PATCH and DELETE carries an `Idempotency-Key` (a UUIDv4 unless
    given) that its retries reuse, so a retry never stores a note twice. Errors raise subclasses
    of `memvault.client.MemvaultError`. Use it as a context manager, or call `close()`.
    """

    _http: httpx.Client

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()

    @contextmanager
    def untrusted(self, session_id: str, *, reason: str, ttl_s: int = 300) -> Iterator[Client]:
        """Untrusted-content mode for a block: mark `session_id` untrusted on entry (for at
        most `ttl_s` seconds), send it as `X-Session-Id` on every request inside (so memory
        reads raise `SessionUntrustedError`), and unmark it on exit, even on an exception."""
        self.mark_untrusted(session_id, reason=reason, ttl_s=ttl_s)
        before, self.session_id = self.session_id, session_id
        try:
            yield self
        finally:
            self.session_id = before
            self.unmark_untrusted(session_id)

    def _send(self, call: _calls.Call[Any]) -> httpx.Response:
        """`call` with its retries; the last response, not yet mapped to an error."""
        return self._drive(response(call))

    # --- the transport: blocking -----------------------------------------------------------

    def _step(self, step: Send | Sleep, plan: Plan) -> None:
        if isinstance(step, Sleep):
            time.sleep(step.seconds)
            return
        try:
            plan.reply = self._http.request(**self._request(step))
        except httpx.TransportError as exc:
            plan.reply = exc

    def _drive(self, flow: Generator[Any, Any, T]) -> T:
        plan = Plan(flow, self._policy)
        for step in plan:
            self._step(step, plan)  # type: ignore[arg-type]  # a result flow emits nothing
        result: T = plan.result
        return result

    def _iterate(self, flow: Generator[Any, Any, None]) -> Iterator[Any]:
        plan = Plan(flow, self._policy)
        for step in plan:
            if isinstance(step, Emit):
                yield step.item
            elif isinstance(step, StreamLines):
                yield from self._lines(step)
            else:
                self._step(step, plan)

    def _lines(self, step: StreamLines) -> Iterator[Any]:
        with self._http.stream(**self._request(Send(step.call))) as response:
            if not response.is_success:
                response.read()
                _calls.raise_for_error(response)
            for raw in response.iter_lines():
                item = step.line(raw)
                if item is not None:
                    yield item
