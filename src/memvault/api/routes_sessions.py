"""Untrusted-content mode over REST: an agent's runtime marks a session untrusted, and memory
reads that name it (`X-Session-Id`) answer 423 `session_untrusted` (`memvault.vault.untrusted`);
writes that name it are stored `provenance: untrusted` and never shared
(`memvault.vault.provenance`).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Header, Request, Response
from pydantic import BaseModel, Field

from memvault.api.deps import AgentDep, ServicesDep, only_query_params
from memvault.api.lanes import in_write_pool
from memvault.api.schemas import ID_PATTERN, Strict, Text
from memvault.errors import SessionUntrusted, UntrustedShare
from memvault.runtime.factory import Services
from memvault.scope import validate_new_id
from memvault.tenancy.principals import Principal
from memvault.vault.provenance import TRUSTED, UNTRUSTED, Provenance
from memvault.vault.untrusted import MAX_TTL_S, UntrustedSessions

router = APIRouter(prefix="/v1/sessions", tags=["sessions"])

MAX_REASON_CHARS = 1_000

SESSION_HEADER = "X-Session-Id"


def _session_header(description: str) -> Any:
    """The optional `X-Session-Id` header (id grammar), documented for reads or writes."""
    return Header(
        alias=SESSION_HEADER,
        min_length=1,
        max_length=128,
        pattern=ID_PATTERN,
        description=description,
    )


SessionHeader = Annotated[
    str | None,
    _session_header(
        "The session this read is made in. While the session is marked untrusted "
        "(`POST /v1/sessions/{session_id}/untrusted`) the read answers 423 `session_untrusted` "
        "and returns no memory."
    ),
]

WriteSessionHeader = Annotated[
    str | None,
    _session_header(
        "The session this write is made in. While the session is marked untrusted the memory "
        "is stored with `provenance: untrusted` and can never be shared: `visibility: shared` "
        "or `readers` answer 422."
    ),
]


class MarkUntrusted(Strict):
    reason: Text = Field(
        min_length=1,
        max_length=MAX_REASON_CHARS,
        description="Why (screened like any field: a credential refuses the mark, PII is "
        "redacted; never stored, only its keyed tag in the audit event).",
    )
    ttl_s: int = Field(default=300, ge=1, le=MAX_TTL_S, description="Seconds the mark lasts.")


class MarkOut(BaseModel):
    session_id: str
    untrusted: bool
    expires_at: float | None = Field(default=None, description="Unix time the mark runs out.")


async def untrusted_sessions(request: Request) -> UntrustedSessions:
    """The app's untrusted-session marks (`create_app` builds them); async: no thread hop."""
    marks: UntrustedSessions = request.app.state.untrusted
    return marks


UntrustedDep = Annotated[UntrustedSessions, Depends(untrusted_sessions)]


def refuse_untrusted(
    marks: UntrustedSessions, services: Services, caller: Principal, session_id: str | None
) -> None:
    """Refuse (423) and audit a read that names a marked session; no lookup without a header."""
    try:
        marks.refuse_if_marked(caller.scope, session_id)
    except SessionUntrusted:
        _audit(services, caller, "session.read_refused")
        raise


def _audit(services: Services, caller: Principal, action: str, **details: object) -> None:
    """Record `action` of the calling agent, its user and agent as the subject."""
    scope = caller.scope
    subject = {"user_id": scope.user, "agent_id": scope.agent}
    services.audit.record(scope.tenant, caller.key_id, action, subject=subject, **details)


def write_provenance(
    marks: UntrustedSessions, caller: Principal, session_id: str | None
) -> Provenance:
    """`untrusted` when a write names a session marked untrusted now (one primary-key lookup),
    else `trusted` (no lookup without a header). A write is never refused for the mark."""
    if session_id is not None and marks.is_marked(caller.scope, session_id):
        return UNTRUSTED
    return TRUSTED


def audit_share_refused(
    services: Services, caller: Principal, refused: UntrustedShare, **details: object
) -> None:
    """Audit an untrusted write refused for asking to share (the field, never a value)."""
    _audit(services, caller, "note.share_refused", field=refused.field, **details)


@router.post("/{session_id}/untrusted", dependencies=[Depends(only_query_params())])
@in_write_pool
def mark_untrusted(
    session_id: str,
    body: MarkUntrusted,
    caller: AgentDep,
    services: ServicesDep,
    marks: UntrustedDep,
) -> MarkOut:
    """Mark a session of the calling agent untrusted: until `DELETE` or `ttl_s` runs out,
    every memory read that names it in `X-Session-Id` answers 423 `session_untrusted`."""
    validate_new_id(session_id, "session_id")
    mark = marks.mark(caller.scope, session_id, reason=body.reason, ttl_s=body.ttl_s)
    _audit(
        services, caller, "session.marked_untrusted", ttl_s=body.ttl_s, reason_tag=mark.reason_tag
    )
    services.alerts.note_session_marked(caller.scope.tenant, caller.key_id, session_id)
    return MarkOut(session_id=session_id, untrusted=True, expires_at=mark.expires_at)


@router.delete(
    "/{session_id}/untrusted", status_code=204, dependencies=[Depends(only_query_params())]
)
@in_write_pool
def unmark_untrusted(
    session_id: str, caller: AgentDep, services: ServicesDep, marks: UntrustedDep
) -> Response:
    """End a session's untrusted mark (204 whether or not it was marked)."""
    validate_new_id(session_id, "session_id")
    ended = marks.unmark(caller.scope, session_id)
    _audit(services, caller, "session.unmarked", ended=ended)
    return Response(status_code=204)
