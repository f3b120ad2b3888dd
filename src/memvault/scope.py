"""`Scope`: who a memory belongs to. It comes from the authenticated key, never from a body."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from memvault.errors import InvalidRequest

SHARED_AGENT = "shared"
"""The explicit agent id of a (tenant, user)'s shared scope."""

WILDCARD_READER = "*"

ID_GRAMMAR = r"[A-Za-z0-9][A-Za-z0-9._@-]{0,127}"
"""Tenant, user, agent and reader ids. Matched whole (`fullmatch`): `$` would admit `"acme\n"`."""

_ID_PATTERN = re.compile(ID_GRAMMAR)


def is_valid_id(value: object) -> bool:
    """True when `value` is a string that matches the id grammar in full."""
    return isinstance(value, str) and _ID_PATTERN.fullmatch(value) is not None


def validate_id(value: str, field: str) -> str:
    """Return `value` if it is a well-formed tenant/user/agent id, else raise `InvalidRequest`.

    Ids can never carry a secret or a newline: the grammar is ASCII letters, digits and `._@-`,
    at most 128 characters, and it must match the whole value.
    """
    if not is_valid_id(value):
        raise InvalidRequest(f"{field} must match ^{ID_GRAMMAR}$ (the whole value)")
    return value


@dataclass(frozen=True, slots=True)
class Scope:
    """A (tenant, user, agent) triple. Validated on construction, so a bad scope never exists."""

    tenant: str
    user: str
    agent: str

    def __post_init__(self) -> None:
        validate_id(self.tenant, "tenant_id")
        validate_id(self.user, "user_id")
        validate_id(self.agent, "agent_id")

    @property
    def shared(self) -> Scope:
        """The shared scope of the same tenant and user."""
        return Scope(self.tenant, self.user, SHARED_AGENT)

    @property
    def is_shared(self) -> bool:
        return self.agent == SHARED_AGENT


def may_write(agent: str, writers: Iterable[str]) -> bool:
    """The one "writable by" rule: `agent` may change a note whose writers list it or `*`.
    (The caller has already established that the note is readable in its scope.)"""
    members = set(writers)
    return agent in members or WILDCARD_READER in members
