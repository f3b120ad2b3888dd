"""The `Judge` protocol: the decisions A-MEM asks of a model, and what it answers.

A judge works inside one scope. It sees note texts and candidates numbered 1..n (never an id:
the caller keeps the number → id map and applies the answer), and answers with those numbers.
Every decision is a small typed value; an answer that cannot be trusted (a number that was never
shown, malformed JSON, an unknown action) raises `JudgeRejected`, and a judge that cannot be
reached raises `JudgeUnavailable`. `GuardedJudge` (amem/guard.py) turns both into the offline
`HeuristicJudge`'s answer, so the write path never fails because a model did.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable

from memvault.amem.views import Candidate, Category, DialogueAction, EvolutionAction
from memvault.errors import VaultError

NoteType = Literal["memory", "knowledge"]

MAX_KEYWORDS = 8
MAX_TAGS = 5
MAX_TOPICS = 5


class JudgeRejected(VaultError):
    """A judge's answer failed validation; nothing of it is used.

    `reason` is a short code (`unknown_candidate`, `malformed_json`, `schema`, `missing_text`,
    `no_text`, ...). The message never carries note text or the model's answer: only the code
    and, at most, a field name.
    """

    code = "judge_rejected"

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"judge answer rejected: {reason}" + (f" ({detail})" if detail else ""))
        self.reason = reason


class JudgeUnavailable(VaultError):
    """The judge could not answer: timeout, connection refused, rate limit, server error.

    `reason` is a short code (`timeout`, `connection`, `rate_limited`, `overloaded`,
    `server_error`, `status_<code>`); never any text of a note.
    """

    code = "judge_unavailable"

    def __init__(self, reason: str) -> None:
        super().__init__(f"judge unavailable: {reason}")
        self.reason = reason


@dataclass(frozen=True, slots=True)
class Construction:
    """What note construction adds to a note's text.

    `topics` holds 1-5 subject labels for a knowledge note and is empty for a memory note.
    """

    keywords: tuple[str, ...]
    tags: tuple[str, ...]
    context: str
    category: Category
    note_type: NoteType
    topics: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class LinkVerdict:
    """Link the new note to candidate `number`, with `strength` in [0, 1]."""

    number: int
    strength: float


@dataclass(frozen=True, slots=True)
class Evolution:
    """How a new note relates to an old one.

    - EVOLVE: the new note deepens or updates the old one; `merged_text` replaces the old text.
    - CONFLICT: they contradict; both are kept and marked conflicting.
    - EXPAND: the new note adds detail; `merged_text` is the old note with the detail merged in.
    - NEW: unrelated; both are kept as they are.

    `merged_text` is set exactly for EVOLVE and EXPAND.
    """

    action: EvolutionAction
    merged_text: str | None = None


@dataclass(frozen=True, slots=True)
class NeighbourUpdate:
    """New context and tags for a note linked to a new one (its text never changes)."""

    context: str | None
    tags: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class FactDecision:
    """The dialogue gate's decision for one extracted fact.

    - NEW: store `text` as a new note (`number` is None).
    - UPDATE: replace candidate `number`'s text with `text`.
    - DELETE: candidate `number` is no longer true.
    - NONE: nothing to do; `number` names the duplicate candidate when there is one.
    """

    action: DialogueAction
    number: int | None = None
    text: str | None = None


DocumentFrequency = Callable[[str], float]
"""The fraction (0..1) of the scope's notes that contain a (stemmed) token."""


@runtime_checkable
class Judge(Protocol):
    """The decisions A-MEM asks of a model, all synchronous and inside one scope."""

    name: str

    def construct(
        self, text: str, *, document_frequency: DocumentFrequency | None = None
    ) -> Construction:
        """Keywords (≤8), tags (≤5), a one-sentence context, category, note type, topics."""
        ...

    def verify_links(self, text: str, candidates: Sequence[Candidate]) -> list[LinkVerdict]:
        """Which candidates the note at `text` should be linked to, and how strongly."""
        ...

    def evolve(self, new_text: str, old: Candidate) -> Evolution:
        """EVOLVE / CONFLICT / EXPAND / NEW for a new note against an old, similar one."""
        ...

    def evolve_neighbour(self, new_text: str, neighbour: Candidate) -> NeighbourUpdate | None:
        """New context and tags for a linked note after `new_text` arrived; None = unchanged."""
        ...

    def extract_facts(self, messages: Sequence[tuple[str, str]]) -> list[str]:
        """Facts worth remembering from (role, content) turns; only user/assistant are read."""
        ...

    def decide_fact(self, fact: str, candidates: Sequence[Candidate]) -> FactDecision:
        """NEW / UPDATE / DELETE / NONE for one fact against the scope's similar notes."""
        ...


def check_number(number: int, candidates: Sequence[Candidate]) -> int:
    """`number` if it was shown among `candidates`, else `JudgeRejected("unknown_candidate")`."""
    shown = {c.number for c in candidates}
    if isinstance(number, bool) or not isinstance(number, int) or number not in shown:
        raise JudgeRejected("unknown_candidate")
    return number
