"""`Scope`: who a memory belongs to. It comes from the authenticated key, never from a body."""

from __future__ import annotations

import re
from dataclasses import dataclass

from memvault.errors import InvalidRequest

SHARED_AGENT = "shared"
"""The explicit agent id of a (tenant, user)'s shared scope."""

WILDCARD_READER = "*"

_ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@-]{0,127}$")


def validate_id(value: str, field: str) -> str:
    """Return `value` if it is a well-formed tenant/user/agent id, else raise `InvalidRequest`."""
    if not isinstance(value, str) or not _ID_PATTERN.match(value):
        raise InvalidRequest(f"{field} must match {_ID_PATTERN.pattern}")
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
