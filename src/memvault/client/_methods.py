"""The SDK's methods, defined once: `Client` runs them blocking, `AsyncClient` awaits them.

Each method returns what to send (`_calls`: a `Call` with its parser) or a flow of calls
(`_plan`); the decorators bind it as a plain method on `Client` and as a coroutine (or an async
iterator) on `AsyncClient`, with this signature and docstring.
"""

from __future__ import annotations

import builtins
import time
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from memvault.client import _calls
from memvault.client._calls import Call
from memvault.client._plan import Emit, Flow, Items, Sleep, StreamLines, call, flow, items
from memvault.client.errors import ErasureTimeout
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


class Methods:
    """The API calls both clients offer (the transport is theirs)."""

    # --- agent calls ----------------------------------------------------------------------

    @call
    def add(
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
    ) -> Call[Note]:
        """Store a memory (screened by the server; an exact duplicate returns the existing
        note). Raises `ScreenRefusedError` (with `.detector`) when the screen refuses it.
        `session_id` groups a conversation's notes; `occurred_at` (RFC 3339 or an aware
        datetime) is when the remembered event happened."""
        return _calls.add(
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

    @call
    def search(
        self,
        query: str,
        *,
        limit: int = 5,
        topics: Sequence[str] | None = None,
        mode: str = "full",
        fusion: str | None = None,
        as_of: str | None = None,
        include_history: bool = False,
    ) -> Call[builtins.list[SearchHit]]:
        """Search the memories this key may read (`mode`: dense, sparse, hybrid or full;
        `fusion`: `score` or `rrf` for the hybrid modes, the server's default when None).
        Current notes only by default; `as_of` (RFC 3339): what was valid then;
        `include_history`: superseded and invalidated notes too. Each hit carries
        `valid_from`, `valid_to` and `relations`."""
        return _calls.search(
            query,
            limit=limit,
            topics=topics,
            mode=mode,
            fusion=fusion,
            as_of=as_of,
            include_history=include_history,
        )

    @call
    def get(self, note_id: str) -> Call[Note]:
        """One memory by id (`NotFoundError` outside the key's readable scopes)."""
        return _calls.get(note_id)

    @call
    def list(self, limit: int = 50, offset: int = 0, cursor: str | None = None) -> Call[Page]:
        """One page of memories, newest first: `items`, `total` and `next_cursor` (null on
        the last page). Pass a page's `next_cursor` as `cursor` for the next one (stable
        while notes are written and deleted); `offset` is kept for compatibility and moves
        under writes. Not both."""
        return _calls.list_notes(limit, offset, cursor)

    @items
    def iter_notes(self, page_size: int = 100) -> Items[Note]:
        """Every memory, newest first, page by page by cursor: a note alive for the whole walk
        is yielded exactly once, even while notes are deleted or written during it."""
        seen: set[str] = set()
        cursor: str | None = None
        offset = 0
        while True:
            page: Page = yield _calls.list_notes(page_size, offset, cursor)
            for note in page.items:
                if note.id not in seen:
                    seen.add(note.id)
                    yield Emit(note)
            step = _calls.next_page(page, offset)
            if step is None:
                return
            cursor, offset = step

    @call
    def update(
        self,
        note_id: str,
        *,
        text: str | None = None,
        topics: Sequence[str] | None = None,
        readers: Sequence[str] | None = None,
        source: str | None = None,
    ) -> Call[Note]:
        """Change a memory's text, topics, readers or source (screened like a new write)."""
        return _calls.update(note_id, text=text, topics=topics, readers=readers, source=source)

    @call
    def delete(self, note_id: str, *, purge: bool = False) -> Call[None]:
        """Soft-delete a memory, or with `purge=True` remove its row and vector."""
        return _calls.delete(note_id, purge=purge)

    @call
    def link(self, source_id: str, target_id: str) -> Call[None]:
        """Link a memory this key may write to one it may read (feeds `full` search)."""
        return _calls.link(source_id, target_id)

    @call
    def links(self, note_id: str) -> Call[builtins.list[Link]]:
        """The notes linked to a memory (both directions) that this key may read."""
        return _calls.links(note_id)

    # --- A-MEM calls (`ConflictError` when the server runs with MEMVAULT_AMEM=off) ---------

    @call
    def dialogue(
        self,
        messages: Sequence[Mapping[str, str]],
        *,
        dry_run: bool = False,
        idempotency_key: str | None = None,
    ) -> Call[DialogueResult]:
        """Run a conversation (`[{"role", "content"}]`) through the dialogue gate: one
        NEW / UPDATE / DELETE / NONE / REFUSED decision per fact from the user and assistant
        turns (tool and system turns are dropped). `dry_run` decides and writes nothing."""
        return _calls.dialogue(messages, dry_run=dry_run, idempotency_key=idempotency_key)

    @call
    def consolidate(self, *, idempotency_key: str | None = None) -> Call[Consolidation]:
        """Merge this key's near-duplicate notes into their oldest now (the daily run)."""
        return _calls.consolidate(idempotency_key=idempotency_key)

    @call
    def quality_scan(self) -> Call[builtins.list[QualityFlag]]:
        """Flag this key's too-short, expired-ephemeral and conflicting notes `low_quality`."""
        return _calls.quality_scan()

    @call
    def quality_review(self) -> Call[str]:
        """The flagged notes as an Obsidian-compatible markdown review batch."""
        return _calls.quality_review()

    # --- tenant admin and auditor calls ---------------------------------------------------

    @call
    def issue_key(self, user_id: str, agent_id: str, role: str = "agent") -> Call[IssuedKey]:
        """Issue an API key for a user and agent of this admin's tenant (secret shown once)."""
        return _calls.issue_key(user_id, agent_id, role)

    @call
    def revoke_key(self, key_id: str) -> Call[None]:
        """Revoke a key of this admin's tenant; it stops working at once."""
        return _calls.revoke_key(key_id)

    @flow
    def erase(
        self,
        user_id: str,
        agent_id: str | None = None,
        *,
        wait: bool = True,
        verify: bool = True,
        timeout: float = 300.0,
        poll_interval: float = 0.5,
    ) -> Flow[Erasure]:
        """Erase a user (or one agent of a user) and return the job.

        With `wait`, a `202` job is polled until done (`ErasureTimeout` after `timeout`
        seconds); with `verify`, the signed receipt is checked against `receipt_keys()` and a
        bad one raises `VerificationError`.
        """
        job: Erasure = yield _calls.erase(user_id, agent_id)
        deadline = time.monotonic() + timeout
        while wait and not job.done:
            if time.monotonic() > deadline:
                raise ErasureTimeout(job.id)
            yield Sleep(poll_interval)
            job = yield _calls.erasure(job.id)
        if verify and job.done:
            job = _calls.verified_receipt(job, (yield _calls.receipt_keys()))
        return job

    @call
    def erasure(self, job_id: str) -> Call[Erasure]:
        """An erase job's progress, or its receipt once done."""
        return _calls.erasure(job_id)

    @call
    def erasures(self, limit: int = 100) -> Call[builtins.list[dict[str, Any]]]:
        """The tenant's erase jobs, newest first."""
        return _calls.erasures(limit)

    @call
    def inventory(self, user_id: str, agent_id: str | None = None) -> Call[dict[str, Any]]:
        """Per store of the deletion inventory: what it holds about the user, and how much."""
        return _calls.inventory(user_id, agent_id)

    @call
    def refusals(self) -> Call[dict[str, int]]:
        """Refused writes per detector."""
        return _calls.refusals()

    @flow
    def audit_export(
        self, since_seq: int = 0, verify: bool = True, *, previous_hash: str | None = None
    ) -> Flow[AuditExport]:
        """The tenant's audit events after `since_seq` and the signed head. With `verify`, the
        hash chain and the head signature are checked (`VerificationError` otherwise)."""
        text: str = yield _calls.audit_export(since_seq)
        keys = (yield _calls.receipt_keys()) if verify else None
        return _calls.audit_from_lines(text.splitlines(), keys, previous_hash)

    @items
    def dsar_export(self, user_id: str) -> Items[dict[str, Any]]:
        """One user's data as records (`subject`, `note`…, `link`…, `end`), streamed. Raises
        `MemvaultError` when the stream ends without its `end` record."""
        check = _calls.DsarCheck()
        yield StreamLines(_calls.dsar_export(user_id), check.line)
        check.finish()

    @call
    def set_policy(
        self,
        pii: Mapping[str, str] | None = None,
        *,
        allow_suspicious_shared: bool = False,
        ttl_days: Mapping[str, float | None] | None = None,
    ) -> Call[Policy]:
        """Replace the tenant policy: PII actions per type, shared-note screening, TTLs."""
        return _calls.set_policy(
            pii, allow_suspicious_shared=allow_suspicious_shared, ttl_days=ttl_days
        )

    @call
    def get_policy(self) -> Call[Policy]:
        """The tenant policy."""
        return _calls.get_policy()

    @call
    def receipt_keys(self) -> Call[builtins.list[dict[str, Any]]]:
        """The deployment's Ed25519 public keys (no API key needed)."""
        return _calls.receipt_keys()

    # --- operator calls -------------------------------------------------------------------

    @call
    def create_tenant(self, tenant_id: str) -> Call[IssuedKey]:
        """Create a tenant; the result holds its first tenant-admin key."""
        return _calls.create_tenant(tenant_id)

    @flow
    def delete_tenant(self, tenant_id: str, *, verify: bool = True) -> Flow[Erasure]:
        """Delete a tenant and return its signed receipt (checked with `verify`)."""
        job: Erasure = yield _calls.delete_tenant(tenant_id)
        return _calls.verified_receipt(job, (yield _calls.receipt_keys())) if verify else job
