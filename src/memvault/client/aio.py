"""`AsyncClient`: the asyncio memvault SDK (httpx), the same calls as `Client`."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Generator
from contextlib import asynccontextmanager
from types import TracebackType
from typing import Any, TypeVar

import httpx

from memvault.client import _calls
from memvault.client._methods import Methods
from memvault.client._plan import AsyncTransport, Emit, Plan, Send, Sleep, StreamLines, response

T = TypeVar("T")


class AsyncClient(Methods, AsyncTransport):
    """An asyncio client for one API key (agent, tenant admin, auditor or operator).

    `base_url` defaults to env `MEMVAULT_URL` (else `http://127.0.0.1:8700`) and `api_key` to env
    `MEMVAULT_API_KEY`. Every POST, PATCH and DELETE carries an `Idempotency-Key` (a UUIDv4 unless
    given) that its retries reuse, so a retry never stores a note twice. Errors raise subclasses
    of `memvault.client.MemvaultError`. Use it as an async context manager, or await `aclose()`.
    """

    _http: httpx.AsyncClient

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self._http.aclose()

    close = aclose

    @asynccontextmanager
    async def untrusted(
        self, session_id: str, *, reason: str, ttl_s: int = 300
    ) -> AsyncIterator[AsyncClient]:
        """`async with`: untrusted-content mode for a block, as `Client.untrusted` (mark on
        entry, `X-Session-Id` on every request inside, unmark on exit)."""
        await self.mark_untrusted(session_id, reason=reason, ttl_s=ttl_s)
        before, self.session_id = self.session_id, session_id
        try:
            yield self
        finally:
            self.session_id = before
            await self.unmark_untrusted(session_id)

    async def _send(self, call: _calls.Call[Any]) -> httpx.Response:
        """`call` with its retries; the last response, not yet mapped to an error."""
        return await self._drive(response(call))

    # --- the transport: awaited ------------------------------------------------------------

    async def _step(self, step: Send | Sleep, plan: Plan) -> None:
        if isinstance(step, Sleep):
            await asyncio.sleep(step.seconds)
            return
        try:
            plan.reply = await self._http.request(**self._request(step))
        except httpx.TransportError as exc:
            plan.reply = exc

    async def _drive(self, flow: Generator[Any, Any, T]) -> T:
        plan = Plan(flow, self._policy)
        for step in plan:
            await self._step(step, plan)  # type: ignore[arg-type]  # a result flow emits nothing
        result: T = plan.result
        return result

    async def _iterate(self, flow: Generator[Any, Any, None]) -> AsyncIterator[Any]:
        plan = Plan(flow, self._policy)
        for step in plan:
            if isinstance(step, Emit):
                yield step.item
            elif isinstance(step, StreamLines):
                async for item in self._lines(step):
                    yield item
            else:
                await self._step(step, plan)

    async def _lines(self, step: StreamLines) -> AsyncIterator[Any]:
        async with self._http.stream(**self._request(Send(step.call))) as response:
            if not response.is_success:
                await response.aread()
                _calls.raise_for_error(response)
            async for raw in response.aiter_lines():
                item = step.line(raw)
                if item is not None:
                    yield item
