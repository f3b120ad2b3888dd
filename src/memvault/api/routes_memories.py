"""Memory endpoints for agent keys. The scope comes from the key; the vault enforces it."""

from __future__ import annotations

import time
from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Query, Request, Response
from pydantic import BaseModel, Field

from memvault.api.deps import (
    AdminDep,
    AgentDep,
    ScopedVaultDep,
    ServicesDep,
    only_query_params,
    tenant_of,
)
from memvault.api.lanes import in_read_lane, in_write_pool
from memvault.api.note_events import added_details, audit_note, provenance_details
from memvault.api.read_alerts import observe_read
from memvault.api.routes_sessions import (
    SessionHeader,
    UntrustedDep,
    WriteSessionHeader,
    audit_share_refused,
    refuse_untrusted,
    write_provenance,
)
from memvault.api.schemas import (
    AddMemory,
    LinkMemories,
    NoteList,
    NoteOut,
    SearchMemories,
    SearchResponse,
    SearchResult,
    UpdateMemory,
)
from memvault.errors import UntrustedShare
from memvault.vault.fields import MAX_LIST_LIMIT, MAX_OFFSET
from memvault.vault.paging import MAX_CURSOR_CHARS

router = APIRouter(prefix="/v1/memories", tags=["memories"])


@router.post("", status_code=201, dependencies=[Depends(only_query_params())])
@in_write_pool
def add_memory(
    body: AddMemory,
    vault: ScopedVaultDep,
    caller: AgentDep,
    services: ServicesDep,
    marks: UntrustedDep,
    x_session_id: WriteSessionHeader = None,
) -> NoteOut:
    """Screen, encrypt and store a memory. Returns it as stored (after PII redaction).
    In a session marked untrusted (`X-Session-Id`) it is stored `untrusted`, never shared."""
    provenance = write_provenance(marks, caller, x_session_id)
    try:
        note = vault.add(
            body.text,
            visibility=body.visibility,
            readers=body.readers,
            note_type=body.note_type,
            topics=body.topics,
            source=body.source,
            ttl_days=body.ttl_days,
            session_id=body.session_id,
            occurred_at=body.occurred_at,
            provenance=provenance,
        )
    except UntrustedShare as refused:
        audit_share_refused(services, caller, refused)
        raise
    audit_note(services, caller, "note.added", note.id, **added_details(note))
    return NoteOut.of(note)


@router.post("/search", dependencies=[Depends(only_query_params())])
@in_read_lane
def search_memories(
    body: SearchMemories,
    request: Request,
    vault: ScopedVaultDep,
    caller: AgentDep,
    services: ServicesDep,
    marks: UntrustedDep,
    x_session_id: SessionHeader = None,
) -> SearchResponse:
    """Search the caller's readable memories (its own, plus the shared ones of its user)."""
    refuse_untrusted(marks, services, caller, x_session_id)
    hits = vault.search(
        body.query,
        limit=body.limit,
        topics=body.topics,
        mode=body.mode,
        fusion=body.fusion,
        as_of=body.as_of,
        include_history=body.include_history,
    )
    audit_note(services, caller, "note.searched", None, results=len(hits), limit=body.limit)
    observe_read(services, caller, request, (h.note for h in hits))
    now = time.time()
    return SearchResponse(results=[SearchResult.of(h, now) for h in hits])


@router.get("", dependencies=[Depends(only_query_params("limit", "offset", "cursor"))])
@in_read_lane
def list_memories(
    request: Request,
    vault: ScopedVaultDep,
    caller: AgentDep,
    services: ServicesDep,
    marks: UntrustedDep,
    limit: Annotated[int, Query(ge=1, le=MAX_LIST_LIMIT)] = 50,
    offset: Annotated[
        int,
        Query(
            ge=0,
            le=MAX_OFFSET,
            description="Skip this many notes. Unstable under writes (a delete shifts later "
            "notes forward, so a walk by offset can skip notes): walk with `cursor`.",
        ),
    ] = 0,
    cursor: Annotated[
        str | None,
        Query(
            min_length=1,
            max_length=MAX_CURSOR_CHARS,
            description="The `next_cursor` of the previous page, unchanged: the page starts "
            "just after that page's last note (stable under writes). Not with `offset`.",
        ),
    ] = None,
    x_session_id: SessionHeader = None,
) -> NoteList:
    """List readable memories, newest first, with the total count and `next_cursor` (null
    on the last page)."""
    refuse_untrusted(marks, services, caller, x_session_id)
    page = vault.list_page(limit=limit, offset=offset, cursor=cursor)
    observe_read(services, caller, request, page.notes)
    return NoteList(
        items=[NoteOut.of(n) for n in page.notes],
        total=page.total,
        limit=limit,
        offset=offset,
        next_cursor=page.next_cursor,
    )


@router.get("/{note_id}", dependencies=[Depends(only_query_params())])
@in_read_lane
def get_memory(
    note_id: str,
    request: Request,
    vault: ScopedVaultDep,
    caller: AgentDep,
    services: ServicesDep,
    marks: UntrustedDep,
    x_session_id: SessionHeader = None,
) -> NoteOut:
    """One memory; 404 for anything outside the caller's readable scopes."""
    refuse_untrusted(marks, services, caller, x_session_id)
    note = vault.get(note_id)
    observe_read(services, caller, request, (note,))
    return NoteOut.of(note)


@router.patch("/{note_id}", dependencies=[Depends(only_query_params())])
@in_write_pool
def update_memory(
    note_id: str,
    body: UpdateMemory,
    vault: ScopedVaultDep,
    caller: AgentDep,
    services: ServicesDep,
    marks: UntrustedDep,
    x_session_id: WriteSessionHeader = None,
) -> NoteOut:
    """Update a memory the caller may write (403 `permission_denied` for a reader only). In a
    session marked untrusted the note becomes `untrusted` (422 if it is shared or has readers)."""
    provenance = write_provenance(marks, caller, x_session_id)
    try:
        note = vault.update(
            note_id,
            text=body.text,
            topics=body.topics,
            readers=body.readers,
            source=body.source,
            provenance=provenance,
        )
    except UntrustedShare as refused:
        audit_share_refused(services, caller, refused, note_id=note_id)
        raise
    changed = [
        name for name in ("text", "topics", "readers", "source") if name in body.model_fields_set
    ]
    details = provenance_details(note)
    audit_note(services, caller, "note.updated", note.id, fields=changed, **details)
    return NoteOut.of(note)


@router.delete("/{note_id}", status_code=204, dependencies=[Depends(only_query_params("purge"))])
def delete_memory(
    note_id: str,
    vault: ScopedVaultDep,
    caller: AgentDep,
    services: ServicesDep,
    purge: bool = False,
) -> Response:
    """Soft delete (hidden from search), or `?purge=true` to remove the vector and the row."""
    vault.delete(note_id, purge=purge)
    audit_note(services, caller, "note.deleted", note_id, purge=purge)
    return Response(status_code=204)


class RestoreOut(BaseModel):
    id: str
    invalidation: int = Field(description="1 when an invalidation was cleared.")
    superseded: int = Field(description="`supersedes` relations to the note removed.")


@router.post("/{note_id}/restore", dependencies=[Depends(only_query_params())])
def restore_memory(note_id: str, admin: AdminDep, services: ServicesDep) -> RestoreOut:
    """A tenant admin makes a note current again: reverses the dialogue gate's DELETE (an
    invalidation) and UPDATE (a newer note superseding it). The note's text never changed;
    possible until retention removes the note."""
    from memvault.vault.validity import restore

    tenant = tenant_of(admin)
    undone = restore(services.vault, tenant, note_id)
    services.audit.record(
        tenant,
        admin.key_id,
        "note.restored",
        note_id=note_id,
        invalidation=undone["invalidation"],
        superseded=undone["superseded"],
    )
    return RestoreOut(id=note_id, **undone)


@router.post("/{note_id}/links", status_code=204, dependencies=[Depends(only_query_params())])
def link_memories(
    note_id: str,
    body: LinkMemories,
    vault: ScopedVaultDep,
    caller: AgentDep,
    services: ServicesDep,
) -> Response:
    """Link a memory the caller may write to another it may read."""
    vault.link(note_id, body.target_id)
    audit_note(services, caller, "note.linked", note_id, target_id=body.target_id)
    return Response(status_code=204)


class LinkOut(BaseModel):
    id: str = Field(description="The linked note (readable by the caller).")
    kind: Literal[
        "link",
        "sequence",
        "supersedes",
        "duplicate_of",
        "expands",
        "conflicts_with",
        "derived_from",
    ] = Field(
        description="`link`: made by A-MEM or a client; `sequence`: its session predecessor "
        "or successor; a typed A-MEM relation otherwise (docs/amem.md, 'Relations and "
        "validity'), read from the note that was written later."
    )
    strength: float | None = None


class LinksOut(BaseModel):
    links: list[LinkOut]


@router.get("/{note_id}/links", dependencies=[Depends(only_query_params())])
@in_read_lane
def memory_links(
    note_id: str,
    vault: ScopedVaultDep,
    caller: AgentDep,
    services: ServicesDep,
    marks: UntrustedDep,
    x_session_id: SessionHeader = None,
) -> LinksOut:
    """The notes linked to a memory, both directions, that the caller may read."""
    refuse_untrusted(marks, services, caller, x_session_id)
    return LinksOut(
        links=[
            LinkOut(id=other, kind="sequence" if kind == "sequence" else "link", strength=strength)
            for other, kind, strength in vault.links(note_id)
        ]
    )
