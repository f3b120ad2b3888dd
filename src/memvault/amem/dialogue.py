"""`DialogueGate`: A-MEM's CRUD gate over a finished dialogue, inside one caller's scope.

The gate reads the user and assistant turns of a dialogue (tool and system turns are validated,
then dropped: tool output is never stored, never shown to a judge), asks the judge for the facts
worth remembering, and decides each fact against the caller's own notes:

0. screen each turn whole, before the judge sees it: a turn holding a credential is dropped
   (one REFUSED decision with the detector's name), PII is redacted;
1. screen the fact (credentials refuse it: REFUSED with the detector's name; PII is redacted
   before anything else sees it, the judge and the search included);
2. show the judge the caller's most similar notes (`ScopedVault.search`, so only notes the
   caller may read) numbered 1..n, and map its answer back to a note id;
3. apply it: NEW → `add`; UPDATE → `add` of the fact, related to the note it replaces
   (`supersedes`: the older note keeps its text and gets a `valid_to`); DELETE → `invalidate`
   (the note keeps its text, and is no longer current); NONE → nothing. An admin reverses an
   UPDATE or DELETE with `POST /v1/memories/{id}/restore`.

An UPDATE or DELETE takes effect only when corroborated: the pair's cosine is at least the
embedding model's relatedness threshold (`link`) and the offline judge does not call the pair NEW.
Otherwise the fact is stored as NEW with the reason `uncorroborated` or `not_related`, counted
(`memvault_amem_gate_downgrades`) and audited by the caller; a model's answer alone can never
end an unrelated note. Likewise `provenance` when the dialogue came from a session marked
untrusted and the note did not, or the other way round: such a fact never ends or replaces a
note of the other provenance (`memvault.vault.provenance`).

An answer that cannot be trusted (a number never shown, an unknown action, an exception) is
replaced by the offline `HeuristicJudge`'s answer and marked `judge_rejected`
(`judge_unavailable` when the model could not be reached). A note the caller may read but not
write (another agent's shared note) is never changed: the decision becomes NONE `not_writable`.
Facts are applied in order, so a later fact sees what an earlier one wrote. `dry_run` decides
everything and writes nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from memvault.amem.guard import GuardedJudge
from memvault.amem.heuristic import HeuristicJudge
from memvault.amem.judge import FactDecision, Judge, JudgeRejected, JudgeUnavailable
from memvault.amem.relating import relate, words
from memvault.amem.thresholds import thresholds_for
from memvault.amem.views import DIALOGUE_ACTIONS, Candidate
from memvault.errors import InvalidRequest, NotFound, PermissionDenied, ScreenRefused
from memvault.observability import count_gate_downgrade
from memvault.scope import may_write
from memvault.vault.fields import MAX_QUERY_CHARS, MAX_SEARCH_LIMIT, MAX_TEXT_CHARS, check_string
from memvault.vault.notes import Note
from memvault.vault.provenance import TRUSTED, Provenance, check_provenance, same_provenance
from memvault.vault.service import ScopedVault
from memvault.vault.validity import invalidate

ROLES = ("user", "assistant", "system", "tool")
READ_ROLES = ("user", "assistant")
MAX_MESSAGES = 200
MAX_CONTENT_CHARS = 32_000
MAX_FACTS = 100
"""A dialogue yielding more facts is refused before anything is written (send it in parts)."""

TURN_REFUSALS = ("credential_refused", "pii_refused")
"""Screen refusals that drop a whole turn (`DialogueGate._screen_turns`)."""

DOWNGRADE_REASONS = ("uncorroborated", "not_related", "provenance")
"""Why an UPDATE or DELETE was stored as NEW instead (`DialogueDecision.reason`);
`provenance`: the dialogue and the target note differ in provenance (one of them came from a
session marked untrusted), and A-MEM never lets the one end or replace the other."""

GateAction = Literal["NEW", "UPDATE", "DELETE", "NONE", "REFUSED"]


@dataclass(frozen=True, slots=True)
class DialogueDecision:
    """What the gate did with one extracted fact.

    `fact_index` is the fact's position among the extracted facts; the turns the screen
    refused whole come first, one REFUSED decision each. `note_id` is the note
    created, updated or deleted, or the duplicate for NONE (the target, and None for NEW, in a
    dry run). `reason` is a short code, never note text or a secret: the detector for REFUSED,
    `judge_rejected` / `judge_unavailable` when the fallback decided, `not_writable` /
    `not_found` when the target could not be changed.
    """

    action: GateAction
    fact_index: int
    note_id: str | None = None
    reason: str | None = None
    target_id: str | None = None
    """UPDATE: the note the new one supersedes (`note_id` is the new note holding the fact)."""


def validate_messages(messages: object) -> list[tuple[str, str]]:
    """The dialogue as (role, content) pairs, or `InvalidRequest` naming the bad field."""
    if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence):
        raise InvalidRequest("messages must be a list of {role, content}")
    if not messages:
        raise InvalidRequest("messages must hold at least one message")
    if len(messages) > MAX_MESSAGES:
        raise InvalidRequest(f"messages holds at most {MAX_MESSAGES} entries")
    checked: list[tuple[str, str]] = []
    for i, item in enumerate(messages):
        if isinstance(item, (str, bytes)) or not isinstance(item, Sequence) or len(item) != 2:
            raise InvalidRequest(f"messages[{i}] must be a {{role, content}} pair")
        role, content = item
        if not isinstance(role, str) or role not in ROLES:
            raise InvalidRequest(f"messages[{i}].role must be one of {', '.join(ROLES)}")
        text = check_string(content, f"messages[{i}].content", max_chars=MAX_CONTENT_CHARS)
        checked.append((role, text))
    return checked


class DialogueGate:
    """Extract facts from a dialogue and apply NEW / UPDATE / DELETE / NONE to `view`'s notes.

    `judge` answers extraction and decisions; its untrustworthy answers are replaced by a
    `HeuristicJudge` (the guarded judge's own fallback when `judge` is a `GuardedJudge`).
    `candidates` is how many similar notes the judge sees for each fact.
    """

    def __init__(
        self,
        view: ScopedVault,
        judge: Judge,
        *,
        candidates: int = 5,
        provenance: Provenance = TRUSTED,
    ) -> None:
        if isinstance(candidates, bool) or not 1 <= candidates <= MAX_SEARCH_LIMIT:
            raise ValueError(f"candidates must be 1-{MAX_SEARCH_LIMIT}")
        self.view = view
        self.provenance = check_provenance(provenance)
        """`untrusted`: the dialogue came from a session marked untrusted; its facts are
        stored so, and never end or replace a trusted note."""
        self.judge = judge
        self.candidates = candidates
        self.fallback: Judge
        if isinstance(judge, GuardedJudge):
            self.fallback = judge.fallback
        else:  # the heuristic itself, or a fresh one behind any other judge
            self.fallback = judge if type(judge) is HeuristicJudge else HeuristicJudge()

    def process(
        self, messages: Sequence[tuple[str, str]], *, dry_run: bool = False
    ) -> list[DialogueDecision]:
        """Decide (and unless `dry_run`, apply) every fact of `messages`, in order.

        Raises `InvalidRequest` for a malformed dialogue, or one with more than `MAX_FACTS`
        facts, before anything is written.
        """
        readable = [(r, c) for r, c in validate_messages(messages) if r in READ_ROLES]
        readable, refused = self._screen_turns(readable)
        decisions = [DialogueDecision("REFUSED", i, None, d) for i, d in enumerate(refused)]
        if not readable:
            return decisions
        facts, extraction_reason = self._extract(readable)
        if len(facts) > MAX_FACTS:
            raise InvalidRequest(f"the dialogue holds more than {MAX_FACTS} facts")
        for index, fact in enumerate(facts, start=len(refused)):
            decision = self._process_fact(index, fact, dry_run)
            if decision.reason is None and extraction_reason is not None:
                decision = DialogueDecision(
                    decision.action, index, decision.note_id, extraction_reason
                )
            decisions.append(decision)
        return decisions

    # -- extraction and decision ---------------------------------------------------------------

    def _screen_turns(
        self, readable: list[tuple[str, str]]
    ) -> tuple[list[tuple[str, str]], list[str]]:
        """Each turn screened whole, before the judge or the extractor sees it: a turn holding
        a credential (or PII the policy refuses) is dropped, its detector kept for a REFUSED
        decision; PII is redacted. A keyword and its value that the extractor would cut into
        two facts ("my pass" / "word is …", "… on the whiteboard." / "It is …") are seen
        together here. Refusals about a note's shape (`too_short`) do not apply to a turn."""
        kept: list[tuple[str, str]] = []
        refused: list[str] = []
        for role, content in readable:
            try:
                kept.append((role, self._screen(content)))
            except ScreenRefused as refusal:
                if refusal.code in TURN_REFUSALS:
                    refused.append(refusal.detector)
                else:
                    kept.append((role, content))
        return kept, refused

    def _extract(self, readable: list[tuple[str, str]]) -> tuple[list[str], str | None]:
        try:
            facts = _clean_facts(self.judge.extract_facts(readable))
        except Exception:  # a misbehaving model never fails the gate: the heuristic extracts
            if self.judge is self.fallback:
                raise
            facts = _clean_facts(self.fallback.extract_facts(readable))
            return facts, "extraction_fallback"
        return facts, None

    def _decide(self, fact: str, shown: Sequence[Candidate]) -> tuple[FactDecision, str | None]:
        """The judge's validated decision, else the fallback's with the reason code."""
        reason: str | None = None
        try:
            return _checked(self.judge.decide_fact(fact, shown), len(shown)), None
        except JudgeUnavailable:
            reason = "judge_unavailable"
        except Exception:  # JudgeRejected, a bad number, or a judge that broke otherwise
            if self.judge is self.fallback:
                raise
            reason = "judge_rejected"
        try:
            return _checked(self.fallback.decide_fact(fact, shown), len(shown)), reason
        except JudgeRejected:  # never expected of the heuristic: write nothing
            return FactDecision("NONE"), reason

    def _process_fact(self, index: int, fact: str, dry_run: bool) -> DialogueDecision:
        try:
            fact = self._screen(fact)
        except ScreenRefused as refused:
            return DialogueDecision("REFUSED", index, None, refused.detector)
        hits = self.view.search(fact[:MAX_QUERY_CHARS], limit=self.candidates, mode="hybrid")
        notes = [hit.note for hit in hits]
        shown = [
            Candidate(number=i + 1, text=hit.note.text, similarity=float(hit.score))
            for i, hit in enumerate(hits)
        ]
        decision, reason = self._decide(fact, shown)
        target = notes[decision.number - 1] if decision.number is not None else None
        if target is not None and decision.action in ("UPDATE", "DELETE"):
            downgrade = (
                "provenance"
                if not same_provenance(target.provenance, self.provenance)
                else self._uncorroborated(fact, target)
            )
            if downgrade is not None:
                count_gate_downgrade(downgrade)
                decision, reason, target = FactDecision("NEW", None, fact), downgrade, None
        if decision.action == "NEW":
            if dry_run:
                return DialogueDecision("NEW", index, None, reason)
            return self._apply(index, "NEW", None, fact, reason)
        if target is None:  # NONE without a duplicate
            return DialogueDecision("NONE", index, None, reason)
        if decision.action == "NONE":
            return DialogueDecision("NONE", index, target.id, reason)
        if not self._writable(target):
            return DialogueDecision("NONE", index, target.id, "not_writable")
        if dry_run:
            return DialogueDecision(decision.action, index, target.id, reason)
        return self._apply(index, decision.action, target.id, fact, reason)

    def _apply(
        self, index: int, action: GateAction, note_id: str | None, text: str, reason: str | None
    ) -> DialogueDecision:
        """Write one decision; a refusal or a lost race becomes REFUSED / NONE, never an error."""
        try:
            if note_id is None:
                note_id = self.view.add(text, provenance=self.provenance).id
            elif action == "UPDATE":
                newer = self.view.add(text, provenance=self.provenance).id
                relate(self.view, newer, note_id, "UPDATE")
                return DialogueDecision(action, index, newer, reason, note_id)
            else:
                invalidate(self.view, note_id)
        except PermissionDenied:
            return DialogueDecision("NONE", index, note_id, "not_writable")
        except NotFound:  # gone since the search (a concurrent delete)
            return DialogueDecision("NONE", index, None, "not_found")
        except ScreenRefused as refused:  # a merged text the screen refuses: nothing changes
            return DialogueDecision("REFUSED", index, None, refused.detector)
        return DialogueDecision(action, index, note_id, reason)

    # -- helpers -------------------------------------------------------------------------------

    def _screen(self, fact: str) -> str:
        """The fact as the write screen lets it through (PII redacted); `ScreenRefused` else."""
        parts = self.view.vault.parts
        screened = parts.gate.screen_note(
            self.view.scope,
            text=fact,
            source=None,
            topics=None,
            shared=False,
            pseudonym=self.view.pii_pseudonym(),
        )
        return screened.text

    def _uncorroborated(self, fact: str, target: Note) -> str | None:
        """Why an UPDATE or DELETE of `target` lacks corroboration (None: it has it)."""
        parts = self.view.vault.parts
        vectors = parts.embedder.embed_documents(self.view.scope, [fact, target.text])
        a, b = (np.asarray(v, dtype=np.float64) for v in vectors)
        norm = float(np.linalg.norm(a) * np.linalg.norm(b))
        cosine = float(a @ b) / norm if norm else 0.0
        if cosine < thresholds_for(parts.embedder.model_id).link:
            return "uncorroborated"
        shown = Candidate(number=1, text=target.text, similarity=cosine)
        if self.fallback.evolve(fact, shown).action == "NEW" and not _negates(fact, target.text):
            return "not_related"
        return None

    def _writable(self, note: Note) -> bool:
        return may_write(self.view.scope.agent, note.writers)


_NEGATIONS = frozenset({"not", "no", "never", "don't", "doesn't", "isn't", "won't", "stopped"})


def _negates(fact: str, old: str) -> bool:
    """A fact that negates most of an older note's words ("I no longer like green tea")."""
    f, o = set(words(fact)), set(words(old))
    return bool(f & _NEGATIONS) and len(f & o) * 2 >= len(o - _NEGATIONS)


def _clean_facts(facts: object) -> list[str]:
    """The extracted facts if they are a list of non-empty strings, else `JudgeRejected`."""
    if not isinstance(facts, list):
        raise JudgeRejected("schema", "facts")
    clean: list[str] = []
    for fact in facts:
        if not isinstance(fact, str) or not fact.strip() or len(fact) > MAX_TEXT_CHARS:
            raise JudgeRejected("schema", "facts")
        clean.append(fact.strip())
    return clean


def _checked(decision: object, shown: int) -> FactDecision:
    """`decision` if it is a well-formed answer about candidates 1..`shown`, else rejected."""
    if not isinstance(decision, FactDecision) or decision.action not in DIALOGUE_ACTIONS:
        raise JudgeRejected("schema")
    number = None if decision.action == "NEW" else decision.number
    needs_number = number is not None or decision.action in ("UPDATE", "DELETE")
    valid = isinstance(number, int) and not isinstance(number, bool) and 1 <= number <= shown
    if needs_number and not valid:
        raise JudgeRejected("unknown_candidate")
    if decision.text is not None and (
        not isinstance(decision.text, str) or not decision.text.strip()
    ):
        raise JudgeRejected("missing_text")
    return FactDecision(decision.action, number, decision.text)
