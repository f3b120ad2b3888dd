"""`make_judge(settings)`: the judge a deployment uses, chosen by `MEMVAULT_LLM`.

- `off` (the default): `HeuristicJudge`, offline and deterministic.
- `anthropic`: `GuardedJudge(AnthropicJudge(...), HeuristicJudge())`, so a model that is down,
  slow or wrong falls back to the heuristic.

Settings read (from the `Settings` object when it has the field, else the environment):
`llm`, `llm_base_url` (`MEMVAULT_LLM_BASE_URL`), `llm_model` (`MEMVAULT_LLM_MODEL`),
`anthropic_api_key` (`ANTHROPIC_API_KEY`), `llm_timeout_s` (`MEMVAULT_LLM_TIMEOUT_S`),
`llm_max_retries` (`MEMVAULT_LLM_MAX_RETRIES`).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from memvault.amem.anthropic_judge import DEFAULT_MODEL, AnthropicJudge
from memvault.amem.guard import CircuitBreaker, GuardedJudge
from memvault.amem.heuristic import HeuristicJudge
from memvault.amem.judge import Judge
from memvault.errors import InvalidRequest

DEFAULT_TIMEOUT_S = 20.0
DEFAULT_MAX_RETRIES = 2


def _setting(settings: Any, field: str, env: str) -> str | None:
    """`settings.<field>` when set (a `SecretStr` is revealed), else the environment `env`."""
    value = getattr(settings, field, None)
    if value is not None and hasattr(value, "get_secret_value"):
        value = value.get_secret_value()
    if value is None or value == "":
        value = os.environ.get(env) or None
    return None if value is None else str(value)


def _number(raw: str | None, default: float, name: str) -> float:
    if raw is None:
        return default
    try:
        return float(raw)
    except ValueError:
        raise InvalidRequest(f"{name} must be a number") from None


def make_judge(settings: Any, *, on_event: Callable[[str, str], None] | None = None) -> Judge:
    """The judge for `settings.llm`; fails here (not on first use) when it cannot be built."""
    kind = (_setting(settings, "llm", "MEMVAULT_LLM") or "off").strip().lower()
    if kind == "off":
        return HeuristicJudge()
    if kind != "anthropic":
        raise InvalidRequest(f"unknown MEMVAULT_LLM {kind!r}: expected 'off' or 'anthropic'")
    api_key = _setting(settings, "anthropic_api_key", "ANTHROPIC_API_KEY")
    if not api_key:
        raise InvalidRequest("MEMVAULT_LLM=anthropic needs ANTHROPIC_API_KEY")
    timeout_s = _number(
        _setting(settings, "llm_timeout_s", "MEMVAULT_LLM_TIMEOUT_S"),
        DEFAULT_TIMEOUT_S,
        "MEMVAULT_LLM_TIMEOUT_S",
    )
    retries = _number(
        _setting(settings, "llm_max_retries", "MEMVAULT_LLM_MAX_RETRIES"),
        DEFAULT_MAX_RETRIES,
        "MEMVAULT_LLM_MAX_RETRIES",
    )
    primary = AnthropicJudge.from_settings(
        api_key=api_key,
        model=_setting(settings, "llm_model", "MEMVAULT_LLM_MODEL") or DEFAULT_MODEL,
        base_url=_setting(settings, "llm_base_url", "MEMVAULT_LLM_BASE_URL"),
        timeout_s=timeout_s,
        max_retries=int(retries),
    )
    return GuardedJudge(primary, HeuristicJudge(), breaker=CircuitBreaker(), on_event=on_event)
