"""`GuardedJudge`: a model judge that never fails the write path.

Every call goes to the primary judge (the model). When it answers something invalid
(`JudgeRejected`), cannot be reached (`JudgeUnavailable`: timeout, connection, 429, 5xx) or fails
in any other way, the call is answered by the fallback (the `HeuristicJudge`) instead, and the
event is reported: to `on_event(kind, reason)` and to the Prometheus counter
`memvault_llm_judge_events_total{kind, reason}`. A `CircuitBreaker` stops calling a model that
keeps failing: after N consecutive failures every call goes straight to the fallback until
`reset_after_s` has passed, then one trial call is let through (half-open).

Event kinds: `rejected` (invalid answer), `error` (unavailable or unexpected failure),
`short_circuit` (breaker open, primary not called), `breaker` (reason `opened` / `closed`).
Reasons are short codes, never note text.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import Literal, TypeVar

from prometheus_client import Counter

from memvault.amem.judge import (
    Construction,
    DocumentFrequency,
    Evolution,
    FactDecision,
    Judge,
    JudgeRejected,
    JudgeUnavailable,
    LinkVerdict,
    NeighbourUpdate,
)
from memvault.amem.views import Candidate
from memvault.observability import REGISTRY, count_judge_fallback
from memvault.observability._metrics import label_name

log = logging.getLogger(__name__)

JUDGE_EVENTS = Counter(
    "memvault_llm_judge_events",
    "LLM judge events by kind (rejected, error, short_circuit, breaker) and reason code",
    ["kind", "reason"],
    registry=REGISTRY,
)

BreakerState = Literal["closed", "open", "half_open"]
_T = TypeVar("_T")


class CircuitBreaker:
    """Closed → (N consecutive failures) → open → (after `reset_after_s`) → half-open: one trial
    call; its success closes the breaker, its failure opens it again. Thread-safe."""

    def __init__(
        self,
        failures: int = 5,
        reset_after_s: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if failures < 1 or reset_after_s < 0:
            raise ValueError("failures must be ≥ 1 and reset_after_s ≥ 0")
        self.failures = failures
        self.reset_after_s = reset_after_s
        self._clock = clock
        self._lock = threading.Lock()
        self._state: BreakerState = "closed"
        self._consecutive = 0
        self._opened_at = 0.0
        self._trial_in_flight = False

    @property
    def state(self) -> BreakerState:
        """The current state, `open` turning `half_open` once `reset_after_s` has passed."""
        with self._lock:
            if self._state == "open" and self._clock() - self._opened_at >= self.reset_after_s:
                return "half_open"
            return self._state

    def allow(self) -> bool:
        """Whether a call may go to the primary now (half-open lets one trial through)."""
        with self._lock:
            if self._state == "open":
                if self._clock() - self._opened_at < self.reset_after_s:
                    return False
                self._state = "half_open"
                self._trial_in_flight = False
            if self._state == "half_open":
                if self._trial_in_flight:
                    return False
                self._trial_in_flight = True
            return True

    def record_success(self) -> bool:
        """Note a good answer; True when this closed a half-open breaker."""
        with self._lock:
            was_half_open = self._state == "half_open"
            self._state = "closed"
            self._consecutive = 0
            self._trial_in_flight = False
            return was_half_open

    def record_failure(self) -> bool:
        """Note a failure; True when this opened the breaker."""
        with self._lock:
            self._trial_in_flight = False
            if self._state == "half_open":
                self._state, self._opened_at = "open", self._clock()
                return True
            self._consecutive += 1
            if self._state == "closed" and self._consecutive >= self.failures:
                self._state, self._opened_at = "open", self._clock()
                return True
            return False


class GuardedJudge:
    """A `Judge` that asks `primary` and answers with `fallback` whenever `primary` fails.

    Rejected answers count as failures for the breaker too: a model that keeps answering
    garbage is as broken as one that does not answer.
    """

    def __init__(
        self,
        primary: Judge,
        fallback: Judge,
        *,
        breaker: CircuitBreaker | None = None,
        on_event: Callable[[str, str], None] | None = None,
    ) -> None:
        self.primary = primary
        self.fallback = fallback
        self.breaker = breaker or CircuitBreaker()
        self._on_event = on_event
        self.name = primary.name

    def _event(self, kind: str, reason: str) -> None:
        reason = label_name(reason)
        JUDGE_EVENTS.labels(label_name(kind), reason).inc()
        if kind != "breaker":
            count_judge_fallback(self.primary.name, reason)
        log.warning("llm judge %s: %s", kind, reason)
        if self._on_event is not None:
            try:
                self._on_event(kind, reason)
            except Exception:  # a broken observer must not break the write path
                log.exception("judge event observer failed")

    def _call(self, primary: Callable[[], _T], fallback: Callable[[], _T]) -> _T:
        if not self.breaker.allow():
            self._event("short_circuit", "breaker_open")
            return fallback()
        try:
            answer = primary()
        except JudgeRejected as exc:
            kind, reason = "rejected", exc.reason
        except JudgeUnavailable as exc:
            kind, reason = "error", exc.reason
        except Exception as exc:  # an LLM that misbehaves never raises out of here
            kind, reason = "error", f"unexpected_{type(exc).__name__}"
        else:
            if self.breaker.record_success():
                self._event("breaker", "closed")
            return answer
        opened = self.breaker.record_failure()
        self._event(kind, reason)
        if opened:
            self._event("breaker", "opened")
        return fallback()

    def construct(
        self, text: str, *, document_frequency: DocumentFrequency | None = None
    ) -> Construction:
        """Note construction by the primary, else by the fallback."""
        return self._call(
            lambda: self.primary.construct(text, document_frequency=document_frequency),
            lambda: self.fallback.construct(text, document_frequency=document_frequency),
        )

    def verify_links(self, text: str, candidates: Sequence[Candidate]) -> list[LinkVerdict]:
        """Link verification by the primary, else by the fallback."""
        return self._call(
            lambda: self.primary.verify_links(text, candidates),
            lambda: self.fallback.verify_links(text, candidates),
        )

    def evolve(self, new_text: str, old: Candidate) -> Evolution:
        """Evolution by the primary, else by the fallback."""
        return self._call(
            lambda: self.primary.evolve(new_text, old),
            lambda: self.fallback.evolve(new_text, old),
        )

    def evolve_neighbour(self, new_text: str, neighbour: Candidate) -> NeighbourUpdate | None:
        """Neighbour update by the primary, else by the fallback."""
        return self._call(
            lambda: self.primary.evolve_neighbour(new_text, neighbour),
            lambda: self.fallback.evolve_neighbour(new_text, neighbour),
        )

    def extract_facts(self, messages: Sequence[tuple[str, str]]) -> list[str]:
        """Fact extraction by the primary, else by the fallback."""
        return self._call(
            lambda: self.primary.extract_facts(messages),
            lambda: self.fallback.extract_facts(messages),
        )

    def decide_fact(self, fact: str, candidates: Sequence[Candidate]) -> FactDecision:
        """The dialogue gate's decision by the primary, else by the fallback."""
        return self._call(
            lambda: self.primary.decide_fact(fact, candidates),
            lambda: self.fallback.decide_fact(fact, candidates),
        )
