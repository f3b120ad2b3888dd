"""`Scope`: who a memory belongs to. It comes from the authenticated key, never from a body."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from memvault.errors import InvalidRequest, ScreenRefused

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


def validate_new_id(value: str, field: str) -> str:
    """`validate_id` for an id that is about to be stored (a key's user and agent, a tenant, a
    note's readers, a session): it must also not be a credential.

    The write screen's credential format detectors run first (see
    `memvault.screening.id_credential`), so `ghp_…` is refused as a credential rather than for
    its `_`: `ScreenRefused("credential_refused", detector)` with a message naming the field and
    the detector, never the value. Ids already stored are read with `validate_id` only, so an old
    id can still be erased.
    """
    from memvault.screening import id_credential  # the screen loads its detectors lazily

    if isinstance(value, str):
        detector = id_credential(value)
        if detector is not None:
            raise ScreenRefused(
                "credential_refused",
                detector,
                f"{field} refused by {detector}: the id has the form of a credential, and ids "
                "are stored in clear; choose an id that is not a secret",
            )
    return validate_id(value, field)


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
