"""What the read routes tell the read alerts: which notes a key was returned, in which session.

`X-Session-Id` names the caller's session (the untrusted-content mode's header); a value that
is not a plain id is not counted per session. In memory only: no SQL on a read
(`memvault.webhooks.alerts.ReadAlerts.observe`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING

from starlette.requests import Request

if TYPE_CHECKING:
    from memvault.runtime.factory import Services
    from memvault.tenancy.principals import Principal
    from memvault.vault.notes import Note

SESSION_HEADER = "x-session-id"
_SESSION_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,127}")


def session_of(request: Request) -> str | None:
    """The request's `X-Session-Id`, when it is a plain id."""
    value = request.headers.get(SESSION_HEADER)
    return value if value is not None and _SESSION_ID.fullmatch(value) else None


def observe_read(
    services: Services, caller: Principal, request: Request, notes: Iterable[Note]
) -> None:
    """Count the notes a read returned against the tenant's read alert thresholds."""
    if caller.tenant is None:
        return
    ids: list[str] = []
    topics: set[str] = set()
    for note in notes:
        ids.append(note.id)
        topics.add("type:" + note.note_type)
        topics.update(note.topics)
    services.alerts.observe(caller.tenant, caller.key_id, session_of(request), ids, topics)
