"""`Amem`: A-MEM for one deployment, hooked into the vault's write path.

- **Construction** runs as a note is prepared (before it is sealed), with the tenant's judge
  when that judge answers offline; its keywords, tags, context and category are sealed with the
  note, and its keywords and context join the note's BM25 tokens and embedding text.
- **After the add is durable**, every new note gets a job (`amem/jobs.py`). With the offline
  judge the job runs inline, so the add's answer carries `evolution: {action, target_id}`,
  unless other adds are in flight and a worker runs (`defer_inline`); with an LLM judge, or
  so deferred, it runs in the background and the note says `enrichment: pending`.
- The tenant's policy `llm` (`off` | `anthropic`) picks the judge: a tenant that may not send
  text to a processor gets the offline judge whatever the deployment offers.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from memvault.amem.heuristic import HeuristicJudge
from memvault.amem.judge import Judge
from memvault.amem.pipeline import AmemPipeline, Outcome
from memvault.amem.thresholds import thresholds_for
from memvault.scope import Scope
from memvault.vault.notes import Note

if TYPE_CHECKING:
    from memvault.amem.jobs import AmemJobs
    from memvault.vault.service import ScopedVault, Vault

log = logging.getLogger(__name__)


class Amem:
    """A-MEM on a vault: the write hooks, enrichment, and the judges per tenant."""

    def __init__(self, vault: Vault, llm: Callable[[str], Judge] | None = None) -> None:
        self.vault = vault
        self.offline = HeuristicJudge()
        self._llm_factory = llm
        self._llm: dict[str, Judge] = {}
        self._lock = threading.Lock()
        self.jobs: AmemJobs | None = None
        self.wake: Any = None  # the worker's wake(), once it runs
        self.worker: Any = None
        self.defer_when_busy = True
        """Leave inline work to the worker while other adds are in flight (`defer_inline`)."""

    # -- judges -----------------------------------------------------------------------------

    def judge_for(self, tenant: str) -> Judge:
        """The tenant's judge: the LLM only when the deployment has one and the tenant allows."""
        if self._llm_factory is None:
            return self.offline
        policy = self.vault.parts.gate.tenant_policy(tenant)
        if policy.llm == "off":
            return self.offline
        with self._lock:
            judge = self._llm.get(tenant)
            if judge is None:
                judge = self._llm[tenant] = self._llm_factory(tenant)
        return judge

    def inline(self, tenant: str) -> bool:
        """Whether A-MEM runs inside the add (offline judge) or in the background (LLM)."""
        return self.judge_for(tenant) is self.offline

    def defer_inline(self) -> bool:
        """Whether an add leaves its (offline) pipeline to the job worker: only when a worker
        runs and other adds are in flight, since inline work lengthens every concurrent add
        (under 8 HTTP clients it cut adds/s by 4x). A lone add still runs it inline."""
        return (
            self.defer_when_busy and self.worker is not None and self.vault.adds_in_flight.count > 1
        )

    # -- the vault's write hooks -----------------------------------------------------------------

    def construct(self, scope: Scope, text: str, note_type: str) -> dict[str, Any]:
        """Sealed attributes of a new note (empty when construction waits for the LLM)."""
        if not self.inline(scope.tenant):
            return {}
        return construction_attrs(self.offline, text)

    def after_add(
        self,
        view: ScopedVault,
        notes: Sequence[Note],
        new_ids: set[str],
        *,
        background: bool = False,
    ) -> list[Note]:
        """Queue every new note's enrichment; run it inline with the offline judge.

        `new_ids` are the notes this add stored (the others are live twins it returned).
        `background` (a batch write): leave it to the job worker when one runs."""
        assert self.jobs is not None, "Amem.jobs is set by amem.wiring.install"
        fresh = [n for n in notes if n.id in new_ids]
        tenant = view.scope.tenant
        inline = (
            self.inline(tenant)
            and not self.defer_inline()
            and not (background and self.worker is not None)
        )
        self.jobs.enqueue(
            tenant, [(n.id, n.user, n.agent, view.scope.agent) for n in fresh], claimed=inline
        )
        if not inline:
            if self.wake is not None:
                self.wake()
            return [replace(n, enrichment="pending") if n in fresh else n for n in notes]
        out = []
        outcomes: dict[str, Outcome] = {}
        for note in notes:
            if note not in fresh:
                out.append(note)
                continue
            try:
                outcomes[note.id] = self.enrich(view, note)
            except Exception as exc:  # left queued: the worker retries it
                log.warning("inline A-MEM failed: %s", type(exc).__name__)
                self.jobs.release(tenant, note.id)
                out.append(replace(note, enrichment="pending"))
                continue
            self.jobs.finish(tenant, note.id)
            out.append(replace(note, enrichment="done", evolution=outcomes[note.id].as_dict()))
        return out

    def enrich(self, view: ScopedVault, note: Note) -> Outcome:
        """Construction (if it waited for the LLM), then the pipeline, as the note's writer."""
        judge = self.judge_for(view.scope.tenant)
        if not note.keywords and not note.context:
            from memvault.amem.attrs import update_attrs

            attrs = construction_attrs(judge, note.text)
            update_attrs(view, note.id, lambda a: {**a, **attrs}, screen=True)
            from memvault.vault.session_index import SessionIndexer

            SessionIndexer(self.vault).rebuild([view.writable_row(note.id)])  # index it now
            note = view.get(note.id)
        model = self.vault.parts.embedder.model_id
        return AmemPipeline(view, judge, thresholds_for(model)).run(note)


def construction_attrs(judge: Judge, text: str) -> dict[str, Any]:
    """The sealed attributes construction adds: keywords, tags, context and category."""
    made = judge.construct(text)
    return {
        "keywords": list(made.keywords),
        "tags": list(made.tags),
        "context": made.context,
        "category": made.category,
    }
