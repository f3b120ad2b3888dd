"""Installs A-MEM on running services: the vault's write hooks, the job worker, and the daily
consolidation scheduler. `memvault serve` (through `create_app`), the embedded MCP server and
the benchmarks call `install`; with `MEMVAULT_AMEM=off` the vault stores plain notes."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from memvault.amem.jobs import AmemJobs, AmemWorker
from memvault.amem.service import Amem

if TYPE_CHECKING:
    from memvault.amem.judge import Judge
    from memvault.runtime.factory import Services

log = logging.getLogger(__name__)

_ATTRIBUTE = "_memvault_amem"


def installed(services: Services) -> Amem | None:
    """The A-MEM of `services`, if installed."""
    found: Amem | None = getattr(services, _ATTRIBUTE, None)
    return found


def install(
    services: Services,
    *,
    judge: Judge | None = None,
    llm_client: Any = None,
    worker: bool = True,
    scheduler: bool = True,
) -> Amem:
    """A-MEM on `services` (once): hooks, jobs and, unless told otherwise, the background
    worker and the 02:30 consolidation scheduler.

    By default the LLM judge comes from the settings (`MEMVAULT_LLM`, none when `off`).
    `llm_client` (an `anthropic.Anthropic`, e.g. on the fake Messages API) builds the same
    guarded, audited judge on that client; `judge` replaces it outright.
    """
    existing = installed(services)
    if existing is not None:
        return existing
    factory = (
        (lambda _tenant: judge) if judge is not None else _deployment_judges(services, llm_client)
    )
    amem = Amem(services.vault, factory)
    amem.defer_when_busy = services.settings.amem_defer_when_busy
    amem.jobs = AmemJobs(amem)
    services.vault.parts.hooks = amem
    setattr(services, _ATTRIBUTE, amem)
    if worker:
        runner = AmemWorker(amem.jobs, services.db.tenant_ids)
        amem.wake = runner.wake
        amem.worker = runner
        runner.start()
        services.on_close.append(runner.stop)
    if scheduler:
        from memvault.amem.schedule import ConsolidationScheduler

        daily = ConsolidationScheduler(services, amem)
        daily.start()
        services.on_close.append(daily.stop)
    return amem


def _deployment_judges(services: Services, client: Any = None) -> Callable[[str], Judge] | None:
    """Per tenant, the deployment's LLM judge (guarded, falling back to the offline one), whose
    rejected answers and outages are audited in that tenant's log; None when `llm` is off."""
    settings = services.settings
    if client is None and settings.llm == "off":
        return None
    from memvault.amem.anthropic_judge import AnthropicJudge
    from memvault.amem.factory import make_judge
    from memvault.amem.guard import CircuitBreaker, GuardedJudge
    from memvault.amem.heuristic import HeuristicJudge

    if client is None:
        make_judge(settings)  # a bad setting fails at startup, not on the first write

    def for_tenant(tenant: str) -> Judge:
        def audited(kind: str, reason: str) -> None:
            services.audit.record(tenant, "amem", "llm.judge_event", kind=kind, reason=reason)

        if client is None:
            return make_judge(settings, on_event=audited)
        primary = AnthropicJudge(client, settings.llm_model)
        return GuardedJudge(primary, HeuristicJudge(), breaker=CircuitBreaker(), on_event=audited)

    return for_tenant
