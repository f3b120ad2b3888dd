"""A note's provenance: `trusted`, or `untrusted` when it was written in a session its agent's
runtime had marked untrusted (`memvault.vault.untrusted`), i.e. after the agent processed
external content that may have told it what to write.

Provenance is sealed with the note's other attributes (`attrs_ct`, key `provenance`), never a
clear column: the store shows no more than it did. A note without the attribute is `trusted`, so
notes written before provenance existed need no upgrade. It is sticky: a later write from a
trusted session never makes an untrusted note trusted again (rewrite it as a new note).

An untrusted note can never be shared: it is private to its owner agent, with no other reader
(`check_unshared`, 422 naming the field). A-MEM relates an untrusted note to a trusted one only
by a plain link, never by a typed relation (`same_provenance`): an untrusted note can never
supersede, restate, expand or conflict with a trusted one, nor change its context or tags.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from memvault.errors import InvalidRequest, UntrustedShare
from memvault.vault.notes import Provenance

__all__ = ["Provenance"]

TRUSTED: Provenance = "trusted"
UNTRUSTED: Provenance = "untrusted"
PROVENANCES = (TRUSTED, UNTRUSTED)

ATTR = "provenance"
"""The sealed attribute that holds it (absent: trusted)."""


def check_provenance(value: object) -> Provenance:
    """`value` if it is a provenance, else `InvalidRequest`."""
    if value == TRUSTED:
        return TRUSTED
    if value == UNTRUSTED:
        return UNTRUSTED
    raise InvalidRequest("provenance must be 'trusted' or 'untrusted'")


def of_attrs(attrs: Mapping[str, Any]) -> Provenance:
    """The provenance sealed in a note's attributes (absent or unknown: trusted)."""
    return UNTRUSTED if attrs.get(ATTR) == UNTRUSTED else TRUSTED


def seal_into(attrs: dict[str, Any], provenance: Provenance) -> None:
    """Record `provenance` in attributes about to be sealed (trusted leaves no attribute)."""
    if provenance == UNTRUSTED:
        attrs[ATTR] = UNTRUSTED
    else:
        attrs.pop(ATTR, None)


def combined(stored: Provenance, write: Provenance) -> Provenance:
    """A note's provenance after a write to it: untrusted once either is (sticky)."""
    return UNTRUSTED if UNTRUSTED in (stored, write) else TRUSTED


def check_unshared(*, shared: bool, readers: Sequence[str]) -> None:
    """Refuse (422) an untrusted note that would be shared or have readers besides its owner.
    The message names the field, never its value."""
    if shared:
        message = "visibility: a memory written in an untrusted session cannot be shared"
        raise UntrustedShare("visibility", message)
    if readers:
        message = "readers: a memory written in an untrusted session cannot have readers"
        raise UntrustedShare("readers", message)


def same_provenance(a: Provenance, b: Provenance) -> bool:
    """Whether A-MEM may relate two notes by kind (or evolve one from the other)."""
    return a == b
