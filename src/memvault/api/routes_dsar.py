"""The data subject access export, `GET /v1/admin/export?user_id=U` (tenant admins only).

The response streams JSON lines, one batch of notes at a time (never the whole export in memory):
1. `{"type": "subject", "tenant_id", "user_id", "exported_at", "notes": N, "links": M}`;
2. one `{"type": "note", ...}` per note: the note as the memories API returns it, plus
   `agent_id` (`shared` for shared notes), `active` (false: soft-deleted, still held) and
   `expires_at` (null: no expiry);
3. one `{"type": "link", "source_id", "target_id", "kind", "created_at"}` per link or typed
   A-MEM relation (`supersedes`, `duplicate_of`, `expands`, `conflicts_with`, ...: the notes'
   validity follows from them, and each note line carries `valid_from` and `valid_to`);
4. `{"type": "end", "notes": n, "links": m}`: what was written. A stream without it was cut off.

The export is audited (`dsar.export`, with the counts) before its first byte is sent.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query
from fastapi.responses import StreamingResponse

from memvault.api.deps import AdminDep, ServicesDep, only_query_params
from memvault.api.schemas import ID_PATTERN, NoteOut, iso
from memvault.compliance.dsar import DsarExport, ExportedLink, ExportedNote, ExportSummary
from memvault.errors import InvalidRequest
from memvault.scope import validate_id

router = APIRouter(prefix="/v1/admin", tags=["admin"])

NDJSON = "application/x-ndjson"

UserId = Annotated[
    str,
    Query(
        min_length=1,
        max_length=128,
        pattern=ID_PATTERN,
        description="The data subject: a user id of the admin's tenant, matched in full.",
    ),
]


def _line(obj: dict[str, Any]) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n"


def _note_line(item: ExportedNote) -> str:
    note = item.note
    body = NoteOut.of(note).model_dump()
    body.update(
        type="note",
        agent_id=note.agent,
        active=item.active,
        expires_at=None if note.expires_at is None else iso(note.expires_at),
        evolution_history=[
            {
                "at": iso(float(h.get("at", 0.0))),
                "action": h.get("action"),
                "previous_text": h.get("previous"),
            }
            for h in item.history
        ],
    )
    return _line(body)


def _link_line(link: ExportedLink) -> str:
    return _line(
        {
            "type": "link",
            "source_id": link.source_id,
            "target_id": link.target_id,
            "kind": link.kind,
            "created_at": iso(link.created_at),
        }
    )


def _stream(export: DsarExport, summary: ExportSummary) -> Iterator[str]:
    yield _line(
        {
            "type": "subject",
            "tenant_id": summary.tenant,
            "user_id": summary.user,
            "exported_at": iso(summary.at),
            "notes": summary.notes,
            "links": summary.links,
        }
    )
    notes = links = 0
    for notes_batch in export.note_batches():
        notes += len(notes_batch)
        yield "".join(_note_line(n) for n in notes_batch)
    for links_batch in export.link_batches():
        links += len(links_batch)
        yield "".join(_link_line(link) for link in links_batch)
    yield _line({"type": "end", "notes": notes, "links": links})


@router.get(
    "/export",
    response_class=StreamingResponse,
    dependencies=[Depends(only_query_params("user_id"))],
)
def export(user_id: UserId, admin: AdminDep, services: ServicesDep) -> StreamingResponse:
    """Export one user's notes (every agent's and the shared ones) and links, decrypted, as
    JSON lines: a subject line with the counts, one line per note, one per link, an end line."""
    tenant = admin.tenant
    if tenant is None:
        raise InvalidRequest("this key has no tenant")
    validate_id(user_id, "user_id")
    dsar = DsarExport(services.vault, tenant, user_id)
    summary = dsar.summary()
    services.audit.record(
        tenant,
        admin.key_id,
        "dsar.export",
        subject={"user_id": user_id},
        notes=summary.notes,
        links=summary.links,
    )
    return StreamingResponse(_stream(dsar, summary), media_type=NDJSON)
