"""Reading import files: mem0's `get_all` / export JSON, or JSON lines, into `ImportRecord`s.

A record that cannot be read (not an object, not JSON) does not stop the file: it becomes a
record with a `problem`, which the importer reports as `invalid` by its index.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memvault.api.schemas import ID_PATTERN
from memvault.client.errors import MemvaultError

FORMATS = ("mem0", "jsonl")
MAX_TOPICS = 5
MAX_TOPIC_CHARS = 64
_ID = re.compile(ID_PATTERN)
_NOT_ID_CHAR = re.compile(r"[^A-Za-z0-9._@-]")


class ImportFileError(MemvaultError):
    """The input file is not in the announced format (names the record, never its content)."""

    code = "import_file_invalid"


@dataclass(frozen=True, slots=True)
class ImportRecord:
    """One memory to import. `index` is its 1-based position in the file; `problem` says why a
    record could not be read (it is then reported `invalid`, never written)."""

    index: int
    text: str
    source_id: str | None = None
    user_id: str | None = None
    agent_id: str | None = None
    topics: tuple[str, ...] = ()
    source: str | None = None
    note_type: str = "memory"
    expires_at: datetime | None = None
    problem: str | None = None


def load(path: Path, fmt: str) -> list[ImportRecord]:
    """Read a mem0 export (`fmt="mem0"`) or a JSON lines file (`fmt="jsonl"`)."""
    raw = path.read_text(encoding="utf-8")
    if fmt == "mem0":
        try:
            data = json.loads(raw)
        except ValueError:
            raise ImportFileError("the file is not JSON") from None
        return read_mem0(data)
    if fmt == "jsonl":
        return read_jsonl(raw.splitlines())
    raise ImportFileError(f"unknown format (use one of: {', '.join(FORMATS)})")


def read_mem0(data: Any) -> list[ImportRecord]:
    """mem0's `Memory.get_all()` / `search()` output `{"results": [{"id", "memory", "hash",
    "metadata", "created_at", "updated_at", "user_id", "agent_id", "run_id", ...}]}`, a bare
    list of such items (`MemoryClient.get_all`), or `{"memories": [...]}`."""
    items = data.get("results", data.get("memories")) if isinstance(data, dict) else data
    if not isinstance(items, list):
        raise ImportFileError('expected {"results": [...]} or a list of memories')
    records = []
    for index, item in enumerate(items, start=1):
        if not isinstance(item, dict):
            records.append(ImportRecord(index=index, text="", problem="not an object"))
            continue
        text = item.get("memory", item.get("data", item.get("text")))
        metadata = item.get("metadata")
        meta: dict[str, Any] = metadata if isinstance(metadata, dict) else {}
        categories = (
            item.get("categories")
            or meta.get("categories")
            or meta.get("topics")
            or meta.get("category")
        )
        records.append(
            _record(
                index,
                item,
                text,
                topics=_topics(categories),
                note_type="memory",
                expires_at=_date(item.get("expiration_date")),
            )
        )
    return records


def _record(index: int, item: dict[str, Any], text: object, **fields: Any) -> ImportRecord:
    """A record with what every format carries alike (text, id, user and agent) and `fields`."""
    return ImportRecord(
        index=index,
        text=text if isinstance(text, str) else "",
        source_id=_str(item.get("id")),
        user_id=_str(item.get("user_id")),
        agent_id=_str(item.get("agent_id")),
        **fields,
    )


def read_jsonl(lines: Iterable[str]) -> list[ImportRecord]:
    """One JSON object per line: `text` (or `memory`), and optionally `id`, `user_id`,
    `agent_id`, `topics`, `source`, `note_type`."""
    records = []
    index = 0
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        index += 1
        try:
            item = json.loads(line)
        except ValueError:
            records.append(ImportRecord(index=index, text="", problem=f"line {number}: not JSON"))
            continue
        if not isinstance(item, dict):
            problem = f"line {number}: not an object"
            records.append(ImportRecord(index=index, text="", problem=problem))
            continue
        text = item.get("text", item.get("memory"))
        note_type = "knowledge" if item.get("note_type") == "knowledge" else "memory"
        records.append(
            _record(
                index,
                item,
                text,
                topics=_topics(item.get("topics")),
                source=_str(item.get("source")),
                note_type=note_type,
            )
        )
    return records


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _topics(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        return ()
    topics = [t.strip()[:MAX_TOPIC_CHARS] for t in value if isinstance(t, str) and t.strip()]
    return tuple(dict.fromkeys(topics))[:MAX_TOPICS]


def _date(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def as_id(value: str | None, default: str) -> tuple[str, bool]:
    """`value` if it matches the id grammar, else a rewrite of it that does (and True)."""
    if value is None:
        return default, False
    if _ID.fullmatch(value):
        return value, False
    rewritten = _NOT_ID_CHAR.sub("-", value)
    if not rewritten[:1].isalnum():
        rewritten = "x" + rewritten
    return rewritten[:128], True
