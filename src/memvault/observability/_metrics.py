"""The process-wide metrics: one `CollectorRegistry` the vault's parts write to.

The vault, the screen and the index run below the API and outlive any one app, so their
metrics live here, per process; each app's `/metrics` exposes this registry beside its own
request metrics (see `ProcessMetrics`). Label values are bounded names (a stage, an
operation, a detector, a repair kind): never an id, a path or any text of a note.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

REGISTRY = CollectorRegistry(auto_describe=True)
"""Every metric of the vault's parts (not prometheus_client's global default registry)."""

STAGES = ("embed", "index", "sql", "screen")
"""The parts whose time is measured: the embedding model, the vector index, SQL, the screen."""

STAGE_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0)
"""Seconds; finer than prometheus_client's defaults, since SQL statements take well under 5 ms."""

REQUEST_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)

STAGE_SECONDS = {
    "embed": Histogram(
        "memvault_embed_seconds",
        "Time in the embedder (cache included) per call, by operation (document, query)",
        ["operation"],
        buckets=STAGE_BUCKETS,
        registry=REGISTRY,
    ),
    "index": Histogram(
        "memvault_index_seconds",
        "Time in the vector index per call, by operation (upsert, search_dense, delete, ...)",
        ["operation"],
        buckets=STAGE_BUCKETS,
        registry=REGISTRY,
    ),
    "sql": Histogram(
        "memvault_sql_seconds",
        "Time executing SQL per statement, by operation (select, insert, update, delete, other)",
        ["operation"],
        buckets=STAGE_BUCKETS,
        registry=REGISTRY,
    ),
    "screen": Histogram(
        "memvault_screen_seconds",
        "Time in the write screen per call, by operation (note, ids)",
        ["operation"],
        buckets=STAGE_BUCKETS,
        registry=REGISTRY,
    ),
}

REQUEST_STAGE_SECONDS = Histogram(
    "memvault_request_stage_seconds",
    "Time one HTTP request spent in each stage (embed, index, sql, screen), by route template",
    ["route", "stage"],
    buckets=STAGE_BUCKETS,
    registry=REGISTRY,
)

AMEM_JOBS = Counter(
    "memvault_amem_jobs",
    "A-MEM enrichment jobs by event: inline or queued (enqueued), done or failed (finished)",
    ["event"],
    registry=REGISTRY,
)

REFUSALS = Counter(
    "memvault_refusals",
    "Writes refused by the write screen, by detector",
    ["detector"],
    registry=REGISTRY,
)

READ_ALERTS = Counter(
    "memvault_read_alerts",
    "Read alerts fired, by rule (issue 32: unusual memory reads)",
    ["rule"],
    registry=REGISTRY,
)

JUDGE_FALLBACKS = Counter(
    "memvault_judge_fallbacks",
    "LLM judge calls answered by the heuristic fallback instead, by judge and reason",
    ["judge", "reason"],
    registry=REGISTRY,
)

GATE_DOWNGRADES = Counter(
    "memvault_amem_gate_downgrades",
    "Dialogue-gate UPDATE or DELETE decisions stored as NEW for want of corroboration, by reason",
    ["reason"],
    registry=REGISTRY,
)

RECONCILER_REPAIRS = Counter(
    "memvault_reconciler_repairs",
    "Repairs made by the reconciler, by kind",
    ["kind"],
    registry=REGISTRY,
)

GROUP_COMMIT_BATCH_SIZE = Histogram(
    "memvault_group_commit_batch_size",
    "Adds per group-commit micro-batch (its count is the number of batches)",
    buckets=(1, 2, 4, 8, 16, 32, 64, 128),
    registry=REGISTRY,
)

GROUP_COMMIT_WAITS = Counter(
    "memvault_group_commit_waits",
    "Group-commit batches whose leader waited its window for writers still preparing",
    registry=REGISTRY,
)

QUERY_BATCH_SIZE = Histogram(
    "memvault_query_embedding_batch_size",
    "Search queries per embedding model call (concurrent searches share one; its count is the "
    "number of calls)",
    buckets=(1, 2, 4, 8, 16, 32),
    registry=REGISTRY,
)

AUDIT_BATCH_SIZE = Histogram(
    "memvault_audit_batch_size",
    "Audit events per append transaction (a tenant's concurrent events share one; its count is "
    "the number of transactions)",
    buckets=(1, 2, 4, 8, 16, 32, 64),
    registry=REGISTRY,
)

_NAME = re.compile(r"[^a-z0-9_.:-]+")


def label_name(value: str, limit: int = 64) -> str:
    """A label value from a detector, reason or kind name: lower case, safe characters only."""
    return _NAME.sub("_", value.lower())[:limit] or "unknown"


def count_refusal(detector: str) -> None:
    """Count a write refused by `detector` (a detector name, never the refused value)."""
    REFUSALS.labels(label_name(detector)).inc()


def count_read_alert(rule: str) -> None:
    """One read alert fired under `rule`."""
    READ_ALERTS.labels(label_name(rule)).inc()


def count_judge_fallback(judge: str, reason: str) -> None:
    """Count a judge call that fell back to the heuristic (`reason`: timeout, error, invalid)."""
    JUDGE_FALLBACKS.labels(label_name(judge), label_name(reason)).inc()


def count_gate_downgrade(reason: str) -> None:
    """Count a dialogue-gate UPDATE or DELETE downgraded to NEW (`uncorroborated`: the pair's
    similarity is under the model's threshold; `not_related`: the offline judge calls it NEW)."""
    GATE_DOWNGRADES.labels(label_name(reason)).inc()


def count_amem_jobs(event: str, n: int = 1) -> None:
    """Count `n` A-MEM enrichment jobs at `event`: `inline` (enqueued and run by the add
    itself), `queued` (left to the worker), `done` or `failed` (finished)."""
    if n > 0:
        AMEM_JOBS.labels(label_name(event)).inc(n)


def count_repairs(kind: str, n: int = 1) -> None:
    """Count `n` reconciler repairs of `kind` (completed, removed, orphan_deleted, ...)."""
    if n > 0:
        RECONCILER_REPAIRS.labels(label_name(kind)).inc(n)


def count_group_commit(size: int, waited: bool) -> None:
    """Count one group-commit micro-batch of `size` adds (and whether its leader waited)."""
    GROUP_COMMIT_BATCH_SIZE.observe(size)
    if waited:
        GROUP_COMMIT_WAITS.inc()


def count_query_batch(size: int, _waited: bool = False) -> None:
    """Count one embedding model call for `size` concurrent search queries."""
    QUERY_BATCH_SIZE.observe(size)


def count_audit_batch(size: int, _waited: bool = False) -> None:
    """Count one audit append transaction of `size` events."""
    AUDIT_BATCH_SIZE.observe(size)


class ProcessMetrics(Collector):
    """Exposes `REGISTRY` through another registry (an app's), so one scrape returns both."""

    def __init__(self, source: CollectorRegistry = REGISTRY) -> None:
        self._source = source

    def collect(self) -> Iterable[Metric]:
        """The source registry's metrics, as collected now."""
        return self._source.collect()

    def describe(self) -> Iterable[Metric]:
        """Nothing: the app registry then never checks these names against its own."""
        return ()
