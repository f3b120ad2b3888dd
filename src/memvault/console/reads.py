"""Read helpers the console needs and the REST API has no route for: ids and counts only.

Users and their note counts (a grouped count through `scoped_select`, the one place that builds
note queries), the tenant's API keys (never their secret hashes), and the audit log with its
chain verified the way an auditor verifies an export.
"""

from __future__ import annotations

import json
from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlalchemy import distinct, func, select

from memvault.canonical import rfc3339
from memvault.compliance.audit_export import records, snapshot
from memvault.compliance.verify import Verdict, verify_audit_export
from memvault.store.models import ApiKeyRow, NoteRow
from memvault.store.scoping import OwnedBy, scoped_select

if TYPE_CHECKING:
    from memvault.runtime.factory import Services

MAX_KEYS_SHOWN = 500
MAX_EVENTS_SHOWN = 200


@dataclass(frozen=True, slots=True)
class UserSummary:
    """One user of a tenant: live notes, agents holding notes, live API keys."""

    user_id: str
    notes: int
    agents: int
    keys: int


@dataclass(frozen=True, slots=True)
class KeySummary:
    """An API key as the console lists it: ids, role and dates, never the secret or its hash."""

    key_id: str
    user_id: str
    agent_id: str
    role: str
    created_at: str
    revoked_at: str | None


def users(services: Services, tenant: str) -> list[UserSummary]:
    """Every user of `tenant` with notes or live keys, by user id."""
    notes_of = scoped_select(OwnedBy(tenant), NoteRow.is_active == 1).subquery()
    with services.db.session(tenant) as sess:
        notes = sess.execute(
            select(notes_of.c.user_id, func.count(), func.count(distinct(notes_of.c.agent_id)))
            .select_from(notes_of)
            .group_by(notes_of.c.user_id)
        ).all()
        keys = sess.execute(
            select(ApiKeyRow.user_id, func.count())
            .where(ApiKeyRow.tenant_id == tenant, ApiKeyRow.revoked_at.is_(None))
            .group_by(ApiKeyRow.user_id)
        ).all()
    by_user: dict[str, list[int]] = {}
    for user, count, agents in notes:
        by_user[str(user)] = [int(count), int(agents), 0]
    for user, count in keys:
        by_user.setdefault(str(user), [0, 0, 0])[2] = int(count)
    return [UserSummary(user, *counts) for user, counts in sorted(by_user.items())]


def api_keys(services: Services, tenant: str) -> list[KeySummary]:
    """The tenant's keys, live first, newest first (at most `MAX_KEYS_SHOWN`)."""
    with services.db.session(tenant) as sess:
        rows = sess.execute(
            select(
                ApiKeyRow.key_id,
                ApiKeyRow.user_id,
                ApiKeyRow.agent_id,
                ApiKeyRow.role,
                ApiKeyRow.created_at,
                ApiKeyRow.revoked_at,
            )
            .where(ApiKeyRow.tenant_id == tenant)
            .order_by(
                ApiKeyRow.revoked_at.is_not(None), ApiKeyRow.created_at.desc(), ApiKeyRow.key_id
            )
            .limit(MAX_KEYS_SHOWN)
        ).all()
    return [
        KeySummary(
            key_id,
            user,
            agent,
            role,
            rfc3339(created),
            None if revoked is None else rfc3339(revoked),
        )
        for key_id, user, agent, role, created, revoked in rows
    ]


@dataclass(frozen=True, slots=True)
class AuditView:
    """The newest events (after the filter), every action seen, and the chain's verdict."""

    events: list[dict[str, Any]]
    actions: list[str]
    total: int
    verdict: Verdict


def audit_view(services: Services, tenant: str, action: str | None) -> AuditView:
    """Read the whole log once: verify it as a signed export would be verified (chain from the
    genesis hash, head signed with the deployment key and checked against the published keys),
    and keep the newest `MAX_EVENTS_SHOWN` events with `action` (all when None)."""
    snap = snapshot(services, tenant)
    lines: list[str] = []
    newest: deque[dict[str, Any]] = deque(maxlen=MAX_EVENTS_SHOWN)
    actions: set[str] = set()
    events = 0
    for record in records(services, snap):
        lines.append(json.dumps(record, ensure_ascii=False, separators=(",", ":")))
        if "type" in record:  # a checkpoint or the head
            continue
        events += 1
        actions.add(str(record["action"]))
        if action is None or record["action"] == action:
            newest.append(record)
    verdict = verify_audit_export(lines, services.keyring.signing_keys().public_keys())
    return AuditView(list(reversed(newest)), sorted(actions), events, verdict)
