"""The SDK's methods, defined once: `Client` runs them blocking, `AsyncClient` awaits them.

`Methods` names, for each method, the function that describes it: one request (`_calls`: a
`Call` with its parser), or a flow of them (below: polls, receipt checks, paging, a streamed
export). The decorators of `_plan` bind it as a plain method on `Client` and as a coroutine (or
an async iterator) on `AsyncClient`, with that function's signature and docstring.
"""

from __future__ import annotations

import time
from typing import Any

from memvault.client import _batch, _calls, _verify
from memvault.client._plan import Emit, Flow, Items, Sleep, StreamLines, call, flow, items
from memvault.client.errors import ErasureTimeout
from memvault.client.models import (
    AuditExport,
    Erasure,
    Note,
    Page,
)

# --- the methods that are more than one call ---------------------------------------------


def iter_notes(page_size: int = 100) -> Items[Note]:
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


def erase(
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
    job: Erasure = yield _calls.start_erase(user_id, agent_id)
    deadline = time.monotonic() + timeout
    while wait and not job.done:
        if time.monotonic() > deadline:
            raise ErasureTimeout(job.id)
        yield Sleep(poll_interval)
        job = yield _calls.erasure(job.id)
    if verify and job.done:
        job = _verify.verified_receipt(job, (yield _calls.receipt_keys()))
    return job


def audit_export(
    since_seq: int = 0, verify: bool = True, *, previous_hash: str | None = None
) -> Flow[AuditExport]:
    """The tenant's audit events after `since_seq` and the signed head. With `verify`, the
    hash chain and the head signature are checked (`VerificationError` otherwise)."""
    text: str = yield _calls.audit_lines(since_seq)
    keys = (yield _calls.receipt_keys()) if verify else None
    return _verify.audit_from_lines(text.splitlines(), keys, previous_hash)


def dsar_export(user_id: str) -> Items[dict[str, Any]]:
    """One user's data as records (`subject`, `note`…, `link`…, `end`), streamed. Raises
    `MemvaultError` when the stream ends without its `end` record."""
    check = _verify.DsarCheck()
    yield StreamLines(_calls.dsar_lines(user_id), check.line)
    check.finish()


def delete_tenant(tenant_id: str, *, verify: bool = True) -> Flow[Erasure]:
    """Delete a tenant and return its signed receipt (checked with `verify`)."""
    job: Erasure = yield _calls.start_tenant_deletion(tenant_id)
    return _verify.verified_receipt(job, (yield _calls.receipt_keys())) if verify else job


class Methods:
    """The API calls both clients offer (the transport is theirs): the docstrings and
    signatures are those of the functions named here."""

    add = call(_calls.add)
    add_many = flow(_batch.add_many)
    add_batch = call(_batch.add_batch)
    search = call(_calls.search)
    get = call(_calls.get)
    list = call(_calls.list_notes)
    iter_notes = items(iter_notes)
    update = call(_calls.update)
    delete = call(_calls.delete)
    link = call(_calls.link)
    links = call(_calls.links)
    mark_untrusted = call(_calls.mark_untrusted)
    unmark_untrusted = call(_calls.unmark_untrusted)
    dialogue = call(_calls.dialogue)
    consolidate = call(_calls.consolidate)
    quality_scan = call(_calls.quality_scan)
    quality_review = call(_calls.quality_review)
    issue_key = call(_calls.issue_key)
    revoke_key = call(_calls.revoke_key)
    erase = flow(erase)
    erasure = call(_calls.erasure)
    erasures = call(_calls.erasures)
    inventory = call(_calls.inventory)
    refusals = call(_calls.refusals)
    audit_export = flow(audit_export)
    dsar_export = items(dsar_export)
    set_policy = call(_calls.set_policy)
    get_policy = call(_calls.get_policy)
    receipt_keys = call(_calls.receipt_keys)
    create_tenant = call(_calls.create_tenant)
    delete_tenant = flow(delete_tenant)
