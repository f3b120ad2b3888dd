"""Each agent's isolation mode: `shared` (Mode A) or `dedicated` (Mode B), one row per agent.

Mode A (`shared`, the default): the agents of a user share one index partition; per-note
visibility (private, `readers`, shared) decides who reads what. Mode B (`dedicated`): the agent's
notes live in an index partition of their own, it reads only its own notes (never shared notes
or notes naming it in `readers`), and it cannot share.

The mode is fixed when the agent gets its first agent key (`record`) and never changes: a later
key that asks for the other mode is refused with `IsolationConflict` (409). An agent that
already has keys or notes without a row (issued before revision 0017) is Mode A. The row is
deleted when the agent or its user is erased; a new agent of the same id may then choose again.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import delete, func, select
from sqlalchemy.exc import IntegrityError

from memvault.errors import InvalidRequest, IsolationConflict
from memvault.store.database import Database
from memvault.store.models import AgentIsolationRow, ApiKeyRow, NoteRow

SHARED = "shared"
"""Mode A: one partition per user, visibility filters per reader (the default)."""
DEDICATED = "dedicated"
"""Mode B: a partition of the agent's own; no shared notes, in or out."""
MODES = (SHARED, DEDICATED)


def check_mode(isolation: str | None) -> str | None:
    """`isolation` if it is a known mode (or None); `InvalidRequest` naming the field otherwise."""
    if isolation is not None and isolation not in MODES:
        raise InvalidRequest("isolation must be 'shared' or 'dedicated'")
    return isolation


def current(db: Database, tenant: str, user: str, agent: str) -> str | None:
    """The agent's recorded mode; `SHARED` for an agent with keys or notes but no record
    (issued before revision 0017); None for an agent memvault has never seen."""
    with db.session(tenant) as sess:
        found = sess.execute(
            select(AgentIsolationRow.isolation).where(
                AgentIsolationRow.tenant_id == tenant,
                AgentIsolationRow.user_id == user,
                AgentIsolationRow.agent_id == agent,
            )
        ).scalar_one_or_none()
        if found is not None:
            return str(found)
        keys = sess.execute(
            select(func.count())
            .select_from(ApiKeyRow)
            .where(
                ApiKeyRow.tenant_id == tenant,
                ApiKeyRow.user_id == user,
                ApiKeyRow.agent_id == agent,
                ApiKeyRow.role == "agent",
            )
        ).scalar_one()
        notes = sess.execute(
            select(NoteRow.id)
            .where(NoteRow.tenant_id == tenant, NoteRow.user_id == user, NoteRow.agent_id == agent)
            .limit(1)
        ).first()
    return SHARED if keys or notes is not None else None


def record(
    db: Database, clock: Callable[[], float], tenant: str, user: str, agent: str, wanted: str | None
) -> str:
    """Fix the agent's mode on its first key, or check a later key against it; returns the mode.

    `wanted` None: the agent's mode (`SHARED` for a new agent). A mode other than the agent's is
    refused with `IsolationConflict`: isolation never changes while the agent exists (erase it
    first). Two concurrent first keys race on the primary key; the loser re-reads and compares.
    """
    check_mode(wanted)
    for _attempt in range(2):
        known = current(db, tenant, user, agent)
        mode = wanted or known or SHARED
        if known is not None and mode != known:
            raise IsolationConflict(
                f"isolation: this agent is already {known!r}; an agent's isolation never "
                "changes (erase the agent to start again)"
            )
        try:
            with db.session(tenant) as sess:
                exists = sess.get(AgentIsolationRow, (tenant, user, agent))
                if exists is None:
                    sess.add(
                        AgentIsolationRow(
                            tenant_id=tenant,
                            user_id=user,
                            agent_id=agent,
                            isolation=mode,
                            created_at=clock(),
                        )
                    )
            return mode
        except IntegrityError:
            continue  # another key of the same agent recorded its mode first: compare with it
    raise IsolationConflict("isolation: the agent's mode changed while this key was issued")


def is_dedicated(db: Database, tenant: str, user: str, agent: str) -> bool:
    """Whether the agent is Mode B (a database read: for background work, not requests)."""
    return dedicated_agents(db, tenant, user, agent) != []


def dedicated_agents(db: Database, tenant: str, user: str, agent: str | None = None) -> list[str]:
    """The dedicated agents of a user (or `[agent]` when that one is dedicated), sorted."""
    where = [
        AgentIsolationRow.tenant_id == tenant,
        AgentIsolationRow.user_id == user,
        AgentIsolationRow.isolation == DEDICATED,
    ]
    if agent is not None:
        where.append(AgentIsolationRow.agent_id == agent)
    with db.session(tenant) as sess:
        found = sess.execute(
            select(AgentIsolationRow.agent_id).where(*where).order_by(AgentIsolationRow.agent_id)
        ).scalars()
        return [str(a) for a in found]


def delete_records(sess: object, tenant: str, user: str, agent: str | None = None) -> int:
    """Delete the records of a user's agents (or one agent) in `sess` (erasure)."""
    where = [AgentIsolationRow.tenant_id == tenant, AgentIsolationRow.user_id == user]
    if agent is not None:
        where.append(AgentIsolationRow.agent_id == agent)
    result = sess.execute(delete(AgentIsolationRow).where(*where))  # type: ignore[attr-defined]
    return int(result.rowcount)


def count_records(sess: object, tenant: str, user: str, agent: str | None = None) -> int:
    """How many records a user (or one agent) still has (erase verification)."""
    where = [AgentIsolationRow.tenant_id == tenant, AgentIsolationRow.user_id == user]
    if agent is not None:
        where.append(AgentIsolationRow.agent_id == agent)
    query = select(func.count()).select_from(AgentIsolationRow).where(*where)
    return int(sess.execute(query).scalar_one())  # type: ignore[attr-defined]
