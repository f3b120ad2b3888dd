"""`AnthropicJudge`: the `Judge` decisions asked of a Claude model through the anthropic SDK.

The model's answer is untrusted input. It must be one JSON object of the requested shape (strict
pydantic models: no unknown keys, no coerced types, no unknown action), and every candidate
number must be one that was shown; anything else raises `JudgeRejected` with a short reason code.
SDK failures (timeout, connection, rate limit, 5xx) become `JudgeUnavailable`. Neither error
carries note text. Wrap this judge in `GuardedJudge` so that both fall back to the heuristic.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, TypeVar

import anthropic
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from memvault.amem import prompts
from memvault.amem.judge import (
    MAX_KEYWORDS,
    MAX_TAGS,
    MAX_TOPICS,
    Construction,
    DocumentFrequency,
    Evolution,
    FactDecision,
    JudgeRejected,
    JudgeUnavailable,
    LinkVerdict,
    NeighbourUpdate,
    NoteType,
    check_number,
)
from memvault.amem.views import Candidate, Category, DialogueAction, EvolutionAction

DEFAULT_MODEL = "claude-sonnet-5-5"
DEFAULT_MAX_TOKENS = 1024
MAX_FACTS = 20
_TEXT_LIMIT = 8000  # characters of any one text the model returns (context, merged text, fact)


class _Strict(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)


class _ConstructAnswer(_Strict):
    keywords: list[str] = Field(max_length=MAX_KEYWORDS)
    tags: list[str] = Field(max_length=MAX_TAGS)
    context: str = Field(min_length=1, max_length=_TEXT_LIMIT)
    category: Category
    note_type: NoteType
    topics: list[str] = Field(default_factory=list, max_length=MAX_TOPICS)


class _Link(_Strict):
    n: int
    strength: float = Field(ge=0.0, le=1.0)


class _LinksAnswer(_Strict):
    links: list[_Link]


class _EvolveAnswer(_Strict):
    action: EvolutionAction
    merged_text: str | None = Field(default=None, max_length=_TEXT_LIMIT)


class _NeighbourAnswer(_Strict):
    changed: bool
    context: str | None = Field(default=None, max_length=_TEXT_LIMIT)
    tags: list[str] = Field(default_factory=list, max_length=MAX_TAGS)


class _FactsAnswer(_Strict):
    facts: list[str] = Field(max_length=MAX_FACTS)


class _DecideAnswer(_Strict):
    action: DialogueAction
    n: int | None = None
    text: str | None = Field(default=None, max_length=_TEXT_LIMIT)


_Answer = TypeVar("_Answer", bound=_Strict)


def parse_answer(message: Any, schema: type[_Answer]) -> _Answer:
    """The first text block of an SDK `Message`, as `schema`, or `JudgeRejected`.

    A single ```json fence around the object is tolerated; anything else around it is not.
    """
    text = next(
        (block.text for block in getattr(message, "content", None) or [] if block.type == "text"),
        None,
    )
    if text is None:
        raise JudgeRejected("no_text")
    body = text.strip()
    if body.startswith("```"):
        body = body.removeprefix("```json").removeprefix("```").removesuffix("```").strip()
    try:
        data = json.loads(body)
    except ValueError:
        raise JudgeRejected("malformed_json") from None
    if not isinstance(data, dict):
        raise JudgeRejected("schema", "not an object")
    try:
        return schema.model_validate(data)
    except ValidationError as exc:
        # Name the first failing field only: the error's input would echo the model's text.
        errors = exc.errors(include_input=False, include_url=False)
        field = ".".join(str(p) for p in errors[0]["loc"]) if errors else ""
        raise JudgeRejected("schema", field) from None


def _clean(items: Sequence[str]) -> tuple[str, ...]:
    out: list[str] = []
    for item in items:
        item = " ".join(item.split())
        if item and item.lower() not in {o.lower() for o in out}:
            out.append(item)
    return tuple(out)


def _text(value: str | None, action: str) -> str:
    if value is None or not value.strip():
        raise JudgeRejected("missing_text", action)
    return value.strip()


class AnthropicJudge:
    """A `Judge` backed by `client.messages.create`, asking for JSON answers only."""

    name = "anthropic"

    def __init__(
        self,
        client: anthropic.Anthropic,
        model: str = DEFAULT_MODEL,
        max_tokens: int = DEFAULT_MAX_TOKENS,
    ) -> None:
        if not model:
            raise ValueError("AnthropicJudge needs a model name")
        self._client = client
        self.model = model
        self.max_tokens = max_tokens

    @classmethod
    def from_settings(
        cls,
        api_key: str | None,
        model: str | None = None,
        base_url: str | None = None,
        timeout_s: float = 20.0,
        max_retries: int = 2,
    ) -> AnthropicJudge:
        """A judge with its own SDK client: `timeout_s` per request, `max_retries` retries with
        the SDK's exponential backoff (429, 5xx, 529, connection errors)."""
        if not api_key:
            raise ValueError("the anthropic judge needs ANTHROPIC_API_KEY")
        client = anthropic.Anthropic(
            api_key=api_key, base_url=base_url, timeout=timeout_s, max_retries=max_retries
        )
        return cls(client, model or DEFAULT_MODEL)

    def _ask(self, prompt: str, schema: type[_Answer]) -> _Answer:
        try:
            message = self._client.messages.create(
                model=self.model,
                max_tokens=self.max_tokens,
                system=prompts.SYSTEM_PROMPT,
                messages=[{"role": "user", "content": prompt}],
            )
        except anthropic.APITimeoutError:
            raise JudgeUnavailable("timeout") from None
        except anthropic.APIConnectionError:
            raise JudgeUnavailable("connection") from None
        except anthropic.APIStatusError as exc:
            raise JudgeUnavailable(_status_reason(exc.status_code)) from None
        except anthropic.AnthropicError:
            raise JudgeUnavailable("sdk_error") from None
        return parse_answer(message, schema)

    def construct(
        self, text: str, *, document_frequency: DocumentFrequency | None = None
    ) -> Construction:
        """Note construction by the model (`document_frequency` is not needed and ignored)."""
        answer = self._ask(prompts.construct_prompt(text), _ConstructAnswer)
        topics = _clean(answer.topics) if answer.note_type == "knowledge" else ()
        if answer.note_type == "knowledge" and not topics:
            raise JudgeRejected("schema", "topics")
        return Construction(
            keywords=_clean(answer.keywords),
            tags=_clean(answer.tags),
            context=" ".join(answer.context.split()),
            category=answer.category,
            note_type=answer.note_type,
            topics=topics,
        )

    def verify_links(self, text: str, candidates: Sequence[Candidate]) -> list[LinkVerdict]:
        """Links the model confirms; a number it was not shown rejects the whole answer."""
        if not candidates:
            return []
        answer = self._ask(prompts.links_prompt(text, candidates), _LinksAnswer)
        verdicts: dict[int, LinkVerdict] = {}
        for link in answer.links:
            number = check_number(link.n, candidates)
            if number in verdicts:
                raise JudgeRejected("duplicate_candidate")
            verdicts[number] = LinkVerdict(number, float(link.strength))
        return list(verdicts.values())

    def evolve(self, new_text: str, old: Candidate) -> Evolution:
        """The model's EVOLVE/CONFLICT/EXPAND/NEW; EVOLVE and EXPAND must carry the text."""
        answer = self._ask(prompts.evolve_prompt(new_text, old), _EvolveAnswer)
        if answer.action in ("EVOLVE", "EXPAND"):
            return Evolution(answer.action, _text(answer.merged_text, answer.action))
        return Evolution(answer.action)

    def evolve_neighbour(self, new_text: str, neighbour: Candidate) -> NeighbourUpdate | None:
        """The model's new context/tags for a linked note, or None when it keeps them."""
        answer = self._ask(prompts.neighbour_prompt(new_text, neighbour), _NeighbourAnswer)
        if not answer.changed:
            return None
        context = " ".join(answer.context.split()) if answer.context else None
        return NeighbourUpdate(context=context or neighbour.context, tags=_clean(answer.tags))

    def extract_facts(self, messages: Sequence[tuple[str, str]]) -> list[str]:
        """Facts from user/assistant turns only; tool and system turns are never sent."""
        if not any(role in ("user", "assistant") for role, _ in messages):
            return []
        answer = self._ask(prompts.facts_prompt(messages), _FactsAnswer)
        return list(_clean(answer.facts))

    def decide_fact(self, fact: str, candidates: Sequence[Candidate]) -> FactDecision:
        """The model's NEW/UPDATE/DELETE/NONE, with numbers checked against `candidates`."""
        answer = self._ask(prompts.decide_prompt(fact, candidates), _DecideAnswer)
        action = answer.action
        if action == "NEW":
            return FactDecision("NEW", None, _text(answer.text, action))
        if action == "NONE":
            number = None if answer.n is None else check_number(answer.n, candidates)
            return FactDecision("NONE", number)
        if answer.n is None:
            raise JudgeRejected("missing_candidate", action)
        number = check_number(answer.n, candidates)
        if action == "DELETE":
            return FactDecision("DELETE", number)
        return FactDecision("UPDATE", number, _text(answer.text, action))


def _status_reason(status: int) -> str:
    if status == 429:
        return "rate_limited"
    if status == 529:
        return "overloaded"
    if status >= 500:
        return "server_error"
    return f"status_{status}"


__all__ = ["DEFAULT_MODEL", "AnthropicJudge", "parse_answer"]
