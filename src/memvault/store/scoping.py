"""The one place that composes scope predicates into SQL.

Every statement that touches memory rows is built by `scoped_select`, `scoped_update` or
`scoped_delete`, each of which requires a `ScopeClause`, or by `scoped_select_bound`, whose
scope is bound at execution. There is no helper that reads notes
without one, so an unscoped read is not expressible through this module.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from sqlalchemy import (
    ColumnElement,
    CompoundSelect,
    Delete,
    Select,
    Update,
    and_,
    bindparam,
    delete,
    or_,
    select,
    update,
)

from memvault.scope import WILDCARD_READER, Scope, validate_id
from memvault.store.models import NoteRow


def member_list(values: list[str] | tuple[str, ...]) -> str:
    """Encode reader/writer ids as `|a|b|` so a LIKE on `|a|` matches exactly one id."""
    return "|" + "|".join(values) + "|" if values else "|"


LIKE_ESCAPE = "/"


def like_containing(value: str) -> str:
    """A LIKE pattern (escape `LIKE_ESCAPE`) matching strings that contain `value`: what
    SQLAlchemy's `contains(value, autoescape=True)` binds."""
    escaped = value.replace("/", "//").replace("%", "/%").replace("_", "/_")
    return f"%{escaped}%"


def parse_member_list(encoded: str) -> list[str]:
    return [v for v in encoded.split("|") if v]


class ScopeClause(Protocol):
    """Something that restricts `notes` rows to one tenant and more."""

    @property
    def tenant(self) -> str: ...

    def clause(self) -> ColumnElement[bool]: ...


_SCOPE_PARAMS = ("scope_tenant", "scope_user", "scope_reader", "scope_any_reader")
"""The parameters of `ReadableBy.bound_clause`, in `_readable_rule`'s order."""


def _readable_rule(
    tenant: Any, user: Any, reader: Any, any_reader: Any, *, by_id: bool
) -> ColumnElement[bool]:
    """Same tenant and user, and `reader` or `any_reader` (LIKE patterns of `like_containing`)
    among the readers: values, or bound parameters."""
    user_column = (NoteRow.user_id + "") if by_id else NoteRow.user_id
    return and_(
        NoteRow.tenant_id == tenant,
        user_column == user,
        or_(
            NoteRow.readers.like(reader, escape=LIKE_ESCAPE),
            NoteRow.readers.like(any_reader, escape=LIKE_ESCAPE),
        ),
    )


@dataclass(frozen=True, slots=True)
class ReadableBy:
    """Rows a principal may read: same tenant and user, and the agent (or `*`) among readers.

    `own_only` (a dedicated, Mode B agent, `store.agent_isolation`): also stored under the
    agent itself, so neither shared notes nor another agent's notes that name it in `readers`
    are readable."""

    scope: Scope
    own_only: bool = False

    @property
    def tenant(self) -> str:
        return self.scope.tenant

    def clause(self, *, by_id: bool = False) -> ColumnElement[bool]:
        """The rule as SQL. `by_id`: the statement also selects by `id IN (...)`, so the user
        test is written so no index can serve it, leaving the primary key as the only plan."""
        values = self.bound_values()
        rule = _readable_rule(*(values[name] for name in _SCOPE_PARAMS), by_id=by_id)
        return and_(rule, NoteRow.agent_id == self.scope.agent) if self.own_only else rule

    @staticmethod
    def bound_clause(own_only: bool = False) -> ColumnElement[bool]:
        """`clause(by_id=True)` with the scope as bound parameters (`bound_values`), for a
        statement compiled once and run for any scope (`own_only`: any Mode B scope)."""
        rule = _readable_rule(*(bindparam(name) for name in _SCOPE_PARAMS), by_id=True)
        return and_(rule, NoteRow.agent_id == bindparam("scope_agent")) if own_only else rule

    def bound_values(self) -> dict[str, str]:
        """The parameters of `bound_clause` for this scope."""
        values = {
            "scope_tenant": self.scope.tenant,
            "scope_user": self.scope.user,
            "scope_reader": like_containing(f"|{self.scope.agent}|"),
            "scope_any_reader": like_containing(f"|{WILDCARD_READER}|"),
        }
        if self.own_only:
            values["scope_agent"] = self.scope.agent
        return values

    def admits(self, tenant: str, user: str, readers: list[str], agent: str | None = None) -> bool:
        """The same rule in Python, for re-checking results on the way out (`agent`: the
        row's storage agent, required by an `own_only` rule)."""
        if self.own_only and agent != self.scope.agent:
            return False
        return (
            tenant == self.scope.tenant
            and user == self.scope.user
            and (self.scope.agent in readers or WILDCARD_READER in readers)
        )


@dataclass(frozen=True, slots=True)
class OwnedBy:
    """Rows stored under a tenant, optionally narrowed to a user and an agent (for erasure)."""

    tenant: str
    user: str | None = None
    agent: str | None = None

    def __post_init__(self) -> None:
        validate_id(self.tenant, "tenant_id")
        if self.user is not None:
            validate_id(self.user, "user_id")
        if self.agent is not None:
            validate_id(self.agent, "agent_id")
        if self.agent is not None and self.user is None:
            raise ValueError("an agent narrows a user: give the user too")

    def clause(self) -> ColumnElement[bool]:
        parts = [NoteRow.tenant_id == self.tenant]
        if self.user is not None:
            parts.append(NoteRow.user_id == self.user)
        if self.agent is not None:
            parts.append(NoteRow.agent_id == self.agent)
        return and_(*parts)


def scoped_select(scope: ScopeClause, *where: ColumnElement[bool]) -> Select[NoteRow]:
    """SELECT notes restricted to `scope`, ANDed with the caller's filters."""
    return select(NoteRow).where(scope.clause(), *where)


def scoped_select_ids(
    scope: ReadableBy, ids: Sequence[str] | CompoundSelect, *where: ColumnElement[bool]
) -> Select[NoteRow]:
    """SELECT the notes with these ids restricted to `scope`, planned as primary-key lookups.

    With a long id list SQLite's planner may prefer the (tenant_id, user_id) prefix of
    `ix_notes_dedup` over the primary key and scan every note of the user: 2.6-3.1 ms for the
    30 candidates of a `full` search in a 1,000-note scope, growing with the scope. The user
    test is kept, in a form no index serves. `ids` is a list or a subquery of ids.
    """
    chosen = ids if isinstance(ids, CompoundSelect) else list(ids)
    return select(NoteRow).where(NoteRow.id.in_(chosen), scope.clause(by_id=True), *where)


def scoped_select_bound(
    *where: ColumnElement[bool], columns: Sequence[Any] = (), own_only: bool = False
) -> Select[Any]:
    """SELECT notes (or `columns`) restricted by `ReadableBy.bound_clause`: the scope is bound
    at execution (`ReadableBy.bound_values`), so the statement is built once for every scope
    (of Mode A, or with `own_only` of Mode B)."""
    return select(*(columns or (NoteRow,))).where(ReadableBy.bound_clause(own_only), *where)


def scoped_update(scope: ScopeClause, *where: ColumnElement[bool], **values: Any) -> Update:
    """UPDATE notes restricted to `scope`."""
    return update(NoteRow).where(scope.clause(), *where).values(**values)


def scoped_delete(scope: ScopeClause, *where: ColumnElement[bool]) -> Delete:
    """DELETE notes restricted to `scope`."""
    return delete(NoteRow).where(scope.clause(), *where)
