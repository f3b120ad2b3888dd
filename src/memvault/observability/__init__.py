"""Metrics, request-scoped JSON logs and optional tracing for memvault's parts.

A layer beneath the vault: the vault, the screen and the index import it; it imports none of
them and nothing of the API. What it measures:

- `timed(stage, operation)` / `timed_call` / `timed_methods`: seconds in the embedder, the
  vector index and the screen, as `memvault_<stage>_seconds{operation}`;
- `instrument_engine(engine)`: seconds per SQL statement, `memvault_sql_seconds{operation}`;
- `count_refusal`, `count_judge_fallback`, `count_repairs`, `count_amem_jobs`: counters by
  detector, judge, reason, repair kind and A-MEM job event; `count_group_commit`:
  group-commit batch sizes and leader waits; `count_query_batch`: search queries per
  embedding model call; `count_audit_batch`: audit events per append transaction;
- `RequestObserver` (installed by the API): request latency by route template and status class,
  per-request totals per stage, the `X-Request-ID` header, and one access log line.

Nothing here records text: label values and span attributes are bounded names and numbers.
See docs/observability.md.
"""

from memvault.observability._asgi import RequestObserver, install_request_observer
from memvault.observability._context import (
    RequestContext,
    begin_request,
    current_request,
    current_request_id,
    end_request,
    request_id_or_new,
)
from memvault.observability._logging import (
    JsonFormatter,
    LogFormat,
    RequestIdFilter,
    TextFormatter,
    configure_logging,
)
from memvault.observability._metrics import (
    REGISTRY,
    STAGES,
    ProcessMetrics,
    count_amem_jobs,
    count_audit_batch,
    count_gate_downgrade,
    count_group_commit,
    count_judge_fallback,
    count_query_batch,
    count_read_alert,
    count_refusal,
    count_repairs,
)
from memvault.observability._timing import (
    instrument_engine,
    record,
    timed,
    timed_call,
    timed_methods,
)
from memvault.observability._tracing import (
    configure_tracing_from_env,
    disable_tracing,
    enable_tracing,
    tracing_enabled,
)

__all__ = [
    "REGISTRY",
    "STAGES",
    "JsonFormatter",
    "LogFormat",
    "ProcessMetrics",
    "RequestContext",
    "RequestIdFilter",
    "RequestObserver",
    "TextFormatter",
    "begin_request",
    "configure_logging",
    "configure_tracing_from_env",
    "count_amem_jobs",
    "count_audit_batch",
    "count_gate_downgrade",
    "count_group_commit",
    "count_judge_fallback",
    "count_query_batch",
    "count_read_alert",
    "count_refusal",
    "count_repairs",
    "current_request",
    "current_request_id",
    "disable_tracing",
    "enable_tracing",
    "end_request",
    "install_request_observer",
    "instrument_engine",
    "record",
    "request_id_or_new",
    "timed",
    "timed_call",
    "timed_methods",
    "tracing_enabled",
]
