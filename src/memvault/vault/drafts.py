"""What a write is made of before it is stored: drafts, row states, keyed hashes and tags."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from memvault.scope import Scope
from memvault.vault.notes import Visibility

PENDING = "pending"
"""A new row whose vector may not be written yet (the reconciler completes it)."""
ACTIVE = "active"


def namespace_for(tenant: str) -> str:
    """Mode A: one vector namespace per tenant."""
    return tenant


@dataclass(frozen=True, slots=True)
class NoteDraft:
    """A note to add: what a caller may say about it (never its scope)."""

    text: str
    visibility: Visibility = "private"
    readers: Sequence[str] | None = None
    note_type: str = "memory"
    topics: Sequence[str] | None = None
    source: str | None = None
    ttl_days: float | None = None


def content_hash(tag: Callable[[str], str], storage: Scope, text: str) -> str:
    """Keyed hash for exact-duplicate checks within one storage scope."""
    return tag(f"note|{storage.user}|{storage.agent}|{text}")


def user_tag(tag: Callable[[str], str], user: str) -> str:
    """Blind tag of a user id in the vector index (the partition key of its points)."""
    return tag("user:" + user)


def agent_tag(tag: Callable[[str], str], agent: str) -> str:
    """Blind tag of an agent or reader id (`*` included) in the vector index."""
    return tag("agent:" + agent)


def topic_tag(tag: Callable[[str], str], topic: str) -> str:
    """Blind tag of a topic: case-insensitive, keyed per tenant."""
    return tag("topic:" + topic.strip().casefold())
