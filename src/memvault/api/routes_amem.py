"""A-MEM endpoints for the caller's own scope: the dialogue gate, consolidation, the quality
scan and its review batch. Each runs on the caller's decrypted scoped view only."""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter, Depends, Response
from pydantic import BaseModel, Field

from memvault.amem.dialogue import MAX_CONTENT_CHARS, MAX_MESSAGES
from memvault.amem.service import Amem
from memvault.amem.wiring import installed
from memvault.api.deps import AgentDep, ScopedVaultDep, ServicesDep, only_query_params
from memvault.api.routes_sessions import UntrustedDep, WriteSessionHeader, write_provenance
from memvault.api.schemas import Strict, Text
from memvault.errors import Conflict
from memvault.runtime.factory import Services

router = APIRouter(tags=["a-mem"])


class DialogueMessage(Strict):
    role: Literal["user", "assistant", "system", "tool"]
    content: Text = Field(max_length=MAX_CONTENT_CHARS)


class DialogueIn(Strict):
    messages: list[DialogueMessage] = Field(min_length=1, max_length=MAX_MESSAGES)
    dry_run: bool = False


class DialogueDecisionOut(BaseModel):
    action: Literal["NEW", "UPDATE", "DELETE", "NONE", "REFUSED"]
    fact_index: int
    note_id: str | None = Field(
        description="The note created (NEW, and UPDATE: the new note holding the fact), "
        "invalidated (DELETE) or restated (NONE)."
    )
    reason: str | None = Field(
        description="A short code: the detector for REFUSED, `judge_rejected`, "
        "`judge_unavailable`, `not_writable`, `not_found`, or `uncorroborated` / `not_related` "
        "when an UPDATE or DELETE lacked corroboration and the fact was stored as NEW "
        "(`provenance`: the dialogue and the note differ in provenance)."
    )
    target_id: str | None = Field(
        default=None, description="UPDATE: the older note the new one supersedes."
    )


class DialogueOut(BaseModel):
    decisions: list[DialogueDecisionOut]
    dry_run: bool


class ConsolidationOut(BaseModel):
    groups: int = Field(description="Groups of near-duplicates found.")
    related: int = Field(
        description="Relations written between a group's later notes and its oldest one "
        "(`duplicate_of`, `supersedes`, `expands`, `conflicts_with`); no note is changed."
    )


class QualityFlagOut(BaseModel):
    id: str
    reasons: list[Literal["too_short", "expired_ephemeral", "pending_conflict"]]


class QualityScanOut(BaseModel):
    flagged: list[QualityFlagOut]


def _amem(services: Services) -> Amem:
    amem = installed(services)
    if amem is None:
        raise Conflict("A-MEM is off on this server (MEMVAULT_AMEM=off)")
    return amem


@router.post("/v1/dialogues", dependencies=[Depends(only_query_params())])
def dialogue(
    body: DialogueIn,
    vault: ScopedVaultDep,
    caller: AgentDep,
    services: ServicesDep,
    marks: UntrustedDep,
    x_session_id: WriteSessionHeader = None,
) -> DialogueOut:
    """Extract facts from the user and assistant turns and decide, for each, NEW / UPDATE /
    DELETE / NONE against the caller's notes (tool and system output is never stored). In a
    session marked untrusted the facts are stored `untrusted` and never end or replace a
    trusted note (`provenance`)."""
    from memvault.amem.dialogue import DOWNGRADE_REASONS, DialogueGate

    amem = _amem(services)
    provenance = write_provenance(marks, caller, x_session_id)
    gate = DialogueGate(vault, amem.judge_for(vault.scope.tenant), provenance=provenance)
    decisions = gate.process([(m.role, m.content) for m in body.messages], dry_run=body.dry_run)
    services.audit.record(
        vault.scope.tenant,
        caller.key_id,
        "dialogue.processed",
        subject={"user_id": vault.scope.user, "agent_id": vault.scope.agent},
        facts=len(decisions),
        dry_run=int(body.dry_run),
        downgraded=sum(d.reason in DOWNGRADE_REASONS for d in decisions),
        **({"provenance": provenance} if provenance == "untrusted" else {}),
    )
    return DialogueOut(
        decisions=[
            DialogueDecisionOut(
                action=d.action,
                fact_index=d.fact_index,
                note_id=d.note_id,
                reason=d.reason,
                target_id=d.target_id,
            )
            for d in decisions
        ],
        dry_run=body.dry_run,
    )


@router.post("/v1/consolidate", dependencies=[Depends(only_query_params())])
def consolidate_scope(
    vault: ScopedVaultDep, caller: AgentDep, services: ServicesDep
) -> ConsolidationOut:
    """Consolidate the caller's own notes now (what the daily run does at 02:30)."""
    from memvault.amem.maintenance import consolidate

    report = consolidate(_amem(services), vault)
    services.audit.record(
        vault.scope.tenant,
        caller.key_id,
        "notes.consolidated",
        subject={"user_id": vault.scope.user, "agent_id": vault.scope.agent},
        groups=report.groups,
        related=report.related,
    )
    return ConsolidationOut(groups=report.groups, related=report.related)


@router.post("/v1/quality/scan", dependencies=[Depends(only_query_params())])
def quality_scan(vault: ScopedVaultDep, services: ServicesDep) -> QualityScanOut:
    """Flag the caller's too-short, expired-ephemeral and conflicting notes as low quality."""
    from memvault.amem.maintenance import quality_scan as scan

    _amem(services)
    found = scan(vault)
    return QualityScanOut(
        flagged=[QualityFlagOut(id=f.note_id, reasons=list(f.reasons)) for f in found]  # type: ignore[arg-type]
    )


@router.get(
    "/v1/quality/review",
    dependencies=[Depends(only_query_params())],
    response_class=Response,
    responses={200: {"content": {"text/markdown": {}}}},
)
def quality_review(vault: ScopedVaultDep, services: ServicesDep) -> Response:
    """The caller's flagged notes as an Obsidian-compatible markdown review batch."""
    from memvault.amem.maintenance import review

    _amem(services)
    return Response(review(vault), media_type="text/markdown; charset=utf-8")
