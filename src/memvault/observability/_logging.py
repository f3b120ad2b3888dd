"""Log records as one JSON object per line (or text), each with the current request id.

The formatters write the record's message and a fixed set of fields; they never format an
exception's message or traceback text (either can quote a note or a secret): an exception is
logged as its type and code locations only. The messages themselves are memvault's own, which
name fields, detectors and ids, never values.
"""

from __future__ import annotations

import json
import logging
import sys
import traceback
from datetime import UTC, datetime
from typing import Any, Literal

from memvault.observability._context import current_request_id

LogFormat = Literal["json", "text"]

_STANDARD = frozenset(logging.makeLogRecord({}).__dict__) | {
    "message",
    "asctime",
    "request_id",
    "color_message",  # uvicorn's copy of the message with terminal colours
}


class RequestIdFilter(logging.Filter):
    """Stamp `record.request_id` with the current request's id (`-` outside a request)."""

    def filter(self, record: logging.LogRecord) -> bool:
        """Always keeps the record; only adds the attribute."""
        if not getattr(record, "request_id", None):
            record.request_id = current_request_id() or "-"
        return True


def _exception(record: logging.LogRecord) -> str | None:
    """`Type at fn@file:line <- ...` for a record's exception: never the exception's message."""
    if not record.exc_info or record.exc_info[1] is None:
        return None
    exc = record.exc_info[1]
    frames = traceback.extract_tb(exc.__traceback__)[-6:]
    where = " <- ".join(
        f"{f.name}@{f.filename.rsplit('/', 1)[-1]}:{f.lineno}" for f in reversed(frames)
    )
    return f"{type(exc).__name__} at {where}" if where else type(exc).__name__


class JsonFormatter(logging.Formatter):
    """One JSON object per record: ts, level, logger, message, request_id, and extras.

    Extras are the record attributes a caller passed with `extra=` whose values are numbers,
    booleans or short strings (route templates, statuses, durations).
    """

    def format(self, record: logging.LogRecord) -> str:
        """The record as a single line of JSON."""
        out: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
            "request_id": getattr(record, "request_id", None) or current_request_id() or "-",
        }
        for key, value in record.__dict__.items():
            if key in _STANDARD or key.startswith("_"):
                continue
            short = isinstance(value, str) and len(value) < 200
            if short or isinstance(value, bool | int | float):
                out[key] = value
        error = _exception(record)
        if error is not None:
            out["exception"] = error
        return json.dumps(out, ensure_ascii=False, separators=(",", ":"))


class TextFormatter(logging.Formatter):
    """`time level logger [request id] message`, with exceptions as type and location only."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s [%(request_id)s] %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        """The record as one line of text."""
        if not getattr(record, "request_id", None):
            record.request_id = current_request_id() or "-"
        saved = record.exc_info, record.exc_text
        record.exc_info, record.exc_text = None, None
        try:
            line = super().format(record)
        finally:
            record.exc_info, record.exc_text = saved
        error = _exception(record)
        return f"{line} exception={error}" if error else line


def configure_logging(fmt: LogFormat = "text", level: int = logging.INFO) -> logging.Handler:
    """Send every log record (uvicorn's too) to stderr in `fmt`, with request ids.

    Replaces the root logger's handlers; uvicorn's own loggers propagate to it. memvault's and
    uvicorn's loggers log from `level`, other libraries from WARNING. Returns the handler.
    """
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else TextFormatter())
    handler.addFilter(RequestIdFilter())
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    # Other libraries speak at WARNING and above only: their INFO lines are not ours to vet.
    root.setLevel(max(level, logging.WARNING))
    logging.getLogger("memvault").setLevel(level)
    logging.getLogger("uvicorn").setLevel(level)
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        named = logging.getLogger(name)
        named.handlers.clear()
        named.propagate = True
    # uvicorn's access line quotes the raw path and query; memvault.access logs the route.
    logging.getLogger("uvicorn.access").disabled = True
    return handler
