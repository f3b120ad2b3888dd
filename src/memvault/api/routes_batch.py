"""`POST /v1/memories/batch`: up to 256 independent adds in one request.

Each item has exactly the fields of `POST /v1/memories` (validated with its schema, `AddMemory`,
one item at a time), so one bad item is reported in its place and never fails the others. The
stored items share one embedding call, one transaction and one index upsert
(`memvault.vault.batch_add`); each stored note gets its own `note.added` audit event, written
together. With an `Idempotency-Key`, the whole answer is stored under the key (the middleware in
`api/idempotency`), so a retry of the same batch replays every item in its place: item `i` of a
batch is answered by (key, `i`). See docs/api.md.
"""

from __future__ import annotations

from fastapi import APIRouter, Depends
from pydantic import ValidationError

from memvault.api.deps import AgentDep, ScopedVaultDep, ServicesDep, only_query_params
from memvault.api.errors import bounded, describe_validation_errors
from memvault.api.lanes import in_write_pool
from memvault.api.note_events import added_details
from memvault.api.routes_sessions import (
    UntrustedDep,
    WriteSessionHeader,
    write_provenance,
)
from memvault.api.schemas import AddMemory, NoteOut
from memvault.api.schemas_batch import AddMemoryBatch, BatchItemError, BatchResponse, ItemError
from memvault.errors import InvalidRequest, ScreenRefused, UntrustedShare, VaultError
from memvault.vault.batch_add import add_each
from memvault.vault.drafts import NoteDraft
from memvault.vault.notes import Note, Provenance

router = APIRouter(prefix="/v1/memories", tags=["memories"])


def _error(exc: VaultError) -> BatchItemError:
    return BatchItemError(error=ItemError(code=exc.code, message=bounded(exc.message)))


def _draft(item: object, provenance: Provenance) -> NoteDraft | VaultError:
    """One item as a draft, validated like the body of `POST /v1/memories`, or its error."""
    if not isinstance(item, dict):
        return InvalidRequest("an item must be an object with the fields of POST /v1/memories")
    try:
        body = AddMemory.model_validate(item)
    except ValidationError as exc:
        return InvalidRequest(describe_validation_errors(exc.errors()))
    except (InvalidRequest, ScreenRefused) as exc:  # raised by a field's own check
        return exc
    return NoteDraft(
        body.text,
        body.visibility,
        body.readers,
        body.note_type,
        body.topics,
        body.source,
        body.ttl_days,
        body.session_id,
        body.occurred_at,
        provenance,
    )


@router.post("/batch", dependencies=[Depends(only_query_params())])
@in_write_pool
def add_memories(
    body: AddMemoryBatch,
    vault: ScopedVaultDep,
    caller: AgentDep,
    services: ServicesDep,
    marks: UntrustedDep,
    x_session_id: WriteSessionHeader = None,
) -> BatchResponse:
    """Screen, encrypt and store up to 256 memories; answers one result per item, in order.

    Same scope and rules as `POST /v1/memories` for every item. An item refused by the screen
    or invalid is answered with its error; the others are stored (200 either way). In a session
    marked untrusted every item is stored `untrusted`, and an item asking to share is refused.
    """
    provenance = write_provenance(marks, caller, x_session_id)
    drafts = [_draft(item, provenance) for item in body.items]
    valid = [d for d in drafts if isinstance(d, NoteDraft)]
    stored = iter(add_each(vault, valid) if valid else [])
    outcomes = [next(stored) if isinstance(d, NoteDraft) else d for d in drafts]
    scope = caller.scope
    events = [
        (
            {"user_id": scope.user, "agent_id": scope.agent, "note_id": o.id},
            added_details(o),
        )
        for o in outcomes
        if isinstance(o, Note)
    ]
    if events:
        services.audit.record_many(scope.tenant, caller.key_id, "note.added", events)
    refused = [
        ({"user_id": scope.user, "agent_id": scope.agent}, {"field": o.field, "item": i})
        for i, o in enumerate(outcomes)
        if isinstance(o, UntrustedShare)
    ]
    if refused:  # as `audit_share_refused` records one, for each item refused
        services.audit.record_many(scope.tenant, caller.key_id, "note.share_refused", refused)
    return BatchResponse(
        results=[NoteOut.of(o) if isinstance(o, Note) else _error(o) for o in outcomes]
    )
