"""What the A-MEM layer sees of a note: a decrypted view inside one scope, and a candidate
shown to a judge under a small integer (never its id)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

Category = Literal["Technical", "Business", "Personal", "Project", "Research", "System", "General"]
CATEGORIES: tuple[Category, ...] = (
    "Technical",
    "Business",
    "Personal",
    "Project",
    "Research",
    "System",
    "General",
)
EvolutionAction = Literal["EVOLVE", "CONFLICT", "EXPAND", "NEW"]
EVOLUTION_ACTIONS: tuple[EvolutionAction, ...] = ("EVOLVE", "CONFLICT", "EXPAND", "NEW")
DialogueAction = Literal["NEW", "UPDATE", "DELETE", "NONE"]
DIALOGUE_ACTIONS: tuple[DialogueAction, ...] = ("NEW", "UPDATE", "DELETE", "NONE")


@dataclass(frozen=True, slots=True)
class NoteView:
    """One decrypted note of the caller's scope, as the A-MEM layer works on it.

    `vector` is its embedding (unit length) when the caller has it; `shared` marks a note of
    the shared scope; `writable` says whether the caller may change it (a readable-only note is
    linked, never changed).
    """

    id: str
    text: str
    created_at: float
    note_type: Literal["memory", "knowledge"] = "memory"
    category: str | None = None
    keywords: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    context: str | None = None
    shared: bool = False
    writable: bool = True
    ephemeral: bool = False
    conflict: bool = False
    vector: Sequence[float] | None = field(default=None, compare=False, repr=False)
    untrusted: bool = False
    """Written in a session marked untrusted: grouped only with notes of the same provenance."""


@dataclass(frozen=True, slots=True)
class Candidate:
    """A note shown to a judge as number `number` (1-based); the caller maps it back to an id."""

    number: int
    text: str
    similarity: float
    context: str | None = None
    tags: tuple[str, ...] = ()
