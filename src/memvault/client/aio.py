"""`AsyncClient`: the asyncio memvault SDK (httpx), the same calls as `Client`."""

from __future__ import annotations

import asyncio
import builtins
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from datetime import datetime
from types import TracebackType
from typing import Any, TypeVar

import httpx

from memvault.client import _calls
from memvault.client._retry import RetryPolicy
from memvault.client.errors import ErasureTimeout, TransportError
from memvault.client.models import (
    AuditExport,
    Consolidation,
    DialogueResult,
    Erasure,
    IssuedKey,
    Link,
    Note,
    Page,
    Policy,
    QualityFlag,
    SearchHit,
)

T = TypeVar("T")


class AsyncClient:
    """An asyncio client for one API key (agent, tenant admin, auditor or operator).

    `base_url` defaults to env `MEMVAULT_URL` (else `http://127.0.0.1:8700`) and `api_key` to env
    `MEMVAULT_API_KEY`. Every POST, PATCH and DELETE carries an `Idempotency-Key` (a UUIDv4 unless
    given) that its retries reuse, so a retry never stores a note twice. Errors raise subclasses
    of `memvault.client.MemvaultError`. Use it as an async context manager, or await `aclose()`.
    """

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        timeout: float = 30.0,
        retries: int = 3,
        backoff: float = 0.2,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.base_url, api_key = _calls.resolve(base_url, api_key)
        self._policy = RetryPolicy(retries, backoff)
        self._http = httpx.AsyncClient(
            base_url=self.base_url,
            headers=_calls.default_headers(api_key),
            timeout=timeout,
            transport=transport,
        )

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

    # --- plumbing -------------------------------------------------------------------------

    async def _send(self, call: _calls.Call[Any]) -> httpx.Response:
        attempt = 0
        while True:
            try:
                response = await self._http.request(
                    call.method,
                    call.path,
                    content=call.body,
                    params=dict(call.params),
                    headers=call.headers(),
                )
            except httpx.TransportError as exc:
                if attempt >= self._policy.retries:
                    raise TransportError(
                        f"no answer from the server ({type(exc).__name__}) after "
                        f"{attempt + 1} attempts"
                    ) from exc
                await asyncio.sleep(self._policy.delay(attempt))
                attempt += 1
                continue
            if attempt < self._policy.retries and self._policy.retry_response(response):
                await asyncio.sleep(self._policy.delay(attempt, response))
                attempt += 1
                continue
            return response

    async def _run(self, call: _calls.Call[T]) -> T:
        response = await self._send(call)
        _calls.raise_for_error(response)
        return call.parse(response)

    # --- agent calls ----------------------------------------------------------------------

    async def add(
        self,
        text: str,
        *,
        visibility: str = "private",
        readers: Sequence[str] | None = None,
        note_type: str = "memory",
        topics: Sequence[str] | None = None,
        source: str | None = None,
        ttl_days: float | None = None,
        session_id: str | None = None,
        occurred_at: str | datetime | None = None,
        idempotency_key: str | None = None,
    ) -> Note:
        """Store a memory (screened by the server; an exact duplicate returns the existing
        note). Raises `ScreenRefusedError` (with `.detector`) when the screen refuses it.
        `session_id` groups a conversation's notes; `occurred_at` (RFC 3339 or an aware
        datetime) is when the remembered event happened."""
        return await self._run(
            _calls.add(
                text,
                visibility=visibility,
                readers=readers,
                note_type=note_type,
                topics=topics,
                source=source,
                ttl_days=ttl_days,
                session_id=session_id,
                occurred_at=occurred_at,
                idempotency_key=idempotency_key,
            )
        )

    async def search(
        self,
        query: str,
        *,
        limit: int = 5,
        topics: Sequence[str] | None = None,
        mode: str = "full",
        fusion: str | None = None,
        as_of: str | None = None,
        include_history: bool = False,
    ) -> builtins.list[SearchHit]:
        """Search the memories this key may read (`mode`: dense, sparse, hybrid or full;
        `fusion`: `score` or `rrf` for the hybrid modes, the server's default when None).
        Current notes only by default; `as_of` (RFC 3339): what was valid then;
        `include_history`: superseded and invalidated notes too. Each hit carries
        `valid_from`, `valid_to` and `relations`."""
        return await self._run(
            _calls.search(
                query,
                limit=limit,
                topics=topics,
                mode=mode,
                fusion=fusion,
                as_of=as_of,
                include_history=include_history,
            )
        )

    async def get(self, note_id: str) -> Note:
        """One memory by id (`NotFoundError` outside the key's readable scopes)."""
        return await self._run(_calls.get(note_id))

    async def list(self, limit: int = 50, offset: int = 0, cursor: str | None = None) -> Page:
        """One page of memories, newest first: `items`, `total` and `next_cursor` (null on
        the last page). Pass a page's `next_cursor` as `cursor` for the next one (stable
        while notes are written and deleted); `offset` is kept for compatibility and moves
        under writes. Not both."""
        return await self._run(_calls.list_notes(limit, offset, cursor))

    async def iter_notes(self, page_size: int = 100) -> AsyncIterator[Note]:
        """Every memory, newest first, page by page by cursor: a note alive for the whole walk
        is yielded exactly once, even while notes are deleted or written during it."""
        seen: set[str] = set()
        cursor: str | None = None
        offset = 0
        while True:
            page = await self.list(limit=page_size, offset=offset, cursor=cursor)
            for note in page.items:
                if note.id not in seen:
                    seen.add(note.id)
                    yield note
            step = _calls.next_page(page, offset)
            if step is None:
                return
            cursor, offset = step

    async def update(
        self,
        note_id: str,
        *,
        text: str | None = None,
        topics: Sequence[str] | None = None,
        readers: Sequence[str] | None = None,
        source: str | None = None,
    ) -> Note:
        """Change a memory's text, topics, readers or source (screened like a new write)."""
        return await self._run(
            _calls.update(note_id, text=text, topics=topics, readers=readers, source=source)
        )

    async def delete(self, note_id: str, *, purge: bool = False) -> None:
        """Soft-delete a memory, or with `purge=True` remove its row and vector."""
        await self._run(_calls.delete(note_id, purge=purge))

    async def link(self, source_id: str, target_id: str) -> None:
        """Link a memory this key may write to one it may read (feeds `full` search)."""
        await self._run(_calls.link(source_id, target_id))

    async def links(self, note_id: str) -> builtins.list[Link]:
        """The notes linked to a memory (both directions) that this key may read."""
        return await self._run(_calls.links(note_id))

    # --- A-MEM calls (`ConflictError` when the server runs with MEMVAULT_AMEM=off) ---------

    async def dialogue(
        self,
        messages: Sequence[Mapping[str, str]],
        *,
        dry_run: bool = False,
        idempotency_key: str | None = None,
    ) -> DialogueResult:
        """Run a conversation (`[{"role", "content"}]`) through the dialogue gate: one
        NEW / UPDATE / DELETE / NONE / REFUSED decision per fact from the user and assistant
        turns (tool and system turns are dropped). `dry_run` decides and writes nothing."""
        return await self._run(
            _calls.dialogue(messages, dry_run=dry_run, idempotency_key=idempotency_key)
        )

    async def consolidate(self, *, idempotency_key: str | None = None) -> Consolidation:
        """Merge this key's near-duplicate notes into their oldest now (the daily run)."""
        return await self._run(_calls.consolidate(idempotency_key=idempotency_key))

    async def quality_scan(self) -> builtins.list[QualityFlag]:
        """Flag this key's too-short, expired-ephemeral and conflicting notes `low_quality`."""
        return await self._run(_calls.quality_scan())

    async def quality_review(self) -> str:
        """The flagged notes as an Obsidian-compatible markdown review batch."""
        return await self._run(_calls.quality_review())

    # --- tenant admin and auditor calls ---------------------------------------------------

    async def issue_key(self, user_id: str, agent_id: str, role: str = "agent") -> IssuedKey:
        """Issue an API key for a user and agent of this admin's tenant (secret shown once)."""
        return await self._run(_calls.issue_key(user_id, agent_id, role))

    async def revoke_key(self, key_id: str) -> None:
        """Revoke a key of this admin's tenant; it stops working at once."""
        await self._run(_calls.revoke_key(key_id))

    async def erase(
        self,
        user_id: str,
        agent_id: str | None = None,
        *,
        wait: bool = True,
        verify: bool = True,
        timeout: float = 300.0,
        poll_interval: float = 0.5,
    ) -> Erasure:
        """Erase a user (or one agent of a user) and return the job.

        With `wait`, a `202` job is polled until done (`ErasureTimeout` after `timeout`
        seconds); with `verify`, the signed receipt is checked against `receipt_keys()` and a
        bad one raises `VerificationError`.
        """
        job = await self._run(_calls.erase(user_id, agent_id))
        deadline = time.monotonic() + timeout
        while wait and not job.done:
            if time.monotonic() > deadline:
                raise ErasureTimeout(job.id)
            await asyncio.sleep(poll_interval)
            job = await self._run(_calls.erasure(job.id))
        if verify and job.done:
            job = _calls.verified_receipt(job, await self.receipt_keys())
        return job

    async def erasure(self, job_id: str) -> Erasure:
        """An erase job's progress, or its receipt once done."""
        return await self._run(_calls.erasure(job_id))

    async def erasures(self, limit: int = 100) -> builtins.list[dict[str, Any]]:
        """The tenant's erase jobs, newest first."""
        return await self._run(_calls.erasures(limit))

    async def inventory(self, user_id: str, agent_id: str | None = None) -> dict[str, Any]:
        """Per store of the deletion inventory: what it holds about the user, and how much."""
        return await self._run(_calls.inventory(user_id, agent_id))

    async def refusals(self) -> dict[str, int]:
        """Refused writes per detector."""
        return await self._run(_calls.refusals())

    async def audit_export(
        self, since_seq: int = 0, verify: bool = True, *, previous_hash: str | None = None
    ) -> AuditExport:
        """The tenant's audit events after `since_seq` and the signed head. With `verify`, the
        hash chain and the head signature are checked (`VerificationError` otherwise)."""
        path, params = _calls.audit_export_path(since_seq)
        text = await self._run(_calls.call("GET", path, lambda r: r.text, params=params))
        keys = await self.receipt_keys() if verify else None
        return _calls.audit_from_lines(text.splitlines(), keys, previous_hash)

    async def dsar_export(self, user_id: str) -> AsyncIterator[dict[str, Any]]:
        """One user's data as records (`subject`, `note`…, `link`…, `end`), streamed. Raises
        `MemvaultError` when the stream ends without its `end` record."""
        path, params = _calls.dsar_export_path(user_id)
        check = _calls.DsarCheck()
        async with self._http.stream("GET", path, params=params) as response:
            if not response.is_success:
                await response.aread()
                _calls.raise_for_error(response)
            async for raw in response.aiter_lines():
                record = check.line(raw)
                if record is not None:
                    yield record
        check.finish()

    async def set_policy(
        self,
        pii: Mapping[str, str] | None = None,
        *,
        allow_suspicious_shared: bool = False,
        ttl_days: Mapping[str, float | None] | None = None,
    ) -> Policy:
        """Replace the tenant policy: PII actions per type, shared-note screening, TTLs."""
        return await self._run(
            _calls.set_policy(
                pii, allow_suspicious_shared=allow_suspicious_shared, ttl_days=ttl_days
            )
        )

    async def get_policy(self) -> Policy:
        """The tenant policy."""
        return await self._run(_calls.get_policy())

    async def receipt_keys(self) -> builtins.list[dict[str, Any]]:
        """The deployment's Ed25519 public keys (no API key needed)."""
        return await self._run(_calls.receipt_keys())

    # --- operator calls -------------------------------------------------------------------

    async def create_tenant(self, tenant_id: str) -> IssuedKey:
        """Create a tenant; the result holds its first tenant-admin key."""
        return await self._run(_calls.create_tenant(tenant_id))

    async def delete_tenant(self, tenant_id: str, *, verify: bool = True) -> Erasure:
        """Delete a tenant and return its signed receipt (checked with `verify`)."""
        job = await self._run(_calls.delete_tenant(tenant_id))
        return _calls.verified_receipt(job, await self.receipt_keys()) if verify else job
