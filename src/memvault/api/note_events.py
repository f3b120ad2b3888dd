"""The audit events of an agent's note activity, as the REST routes and the MCP backend record them.

One definition for both front doors, so a note added over MCP leaves the same event as one added
over REST. Light on purpose: the MCP server imports it without the web app.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memvault.runtime.factory import Services
    from memvault.tenancy.principals import Principal
    from memvault.vault.notes import Note


def audit_note(
    services: Services, caller: Principal, action: str, note_id: str | None, **details: object
) -> None:
    """One audit event of the caller's note activity: ids and counts, never text."""
    scope = caller.scope
    subject = {"user_id": scope.user, "agent_id": scope.agent, "note_id": note_id}
    services.audit.record(scope.tenant, caller.key_id, action, subject=subject, **details)


def provenance_details(note: Note) -> dict[str, object]:
    """`{"provenance": "untrusted"}` for a note written in an untrusted session, else nothing
    (an event without it is of a trusted note, as a note without the attribute is)."""
    return {"provenance": note.provenance} if note.provenance == "untrusted" else {}


def added_details(note: Note) -> dict[str, object]:
    """The details of a `note.added` event: the note's visibility, how many spans the
    screen redacted and flagged (counts, never the spans), and an untrusted provenance."""
    return {
        "visibility": note.visibility,
        "redacted": len(note.redacted),
        "flags": len(note.flags),
        **provenance_details(note),
    }
