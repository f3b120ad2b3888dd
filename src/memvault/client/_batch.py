"""`add_many`: many notes through `POST /v1/memories/batch`, defined once for both clients.

The items are sent in chunks (at most `chunk_size` items, and at most `MAX_CHUNK_BYTES` of JSON
so a chunk stays under the server's 2 MiB body limit); each chunk is one call with its own
`Idempotency-Key`, which its retries reuse, so a retried chunk replays its first answer.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any

import httpx

from memvault.api.schemas_batch import MAX_BATCH_ITEMS
from memvault.client._calls import Call, call, rfc3339
from memvault.client._plan import Flow
from memvault.client.errors import InvalidRequestError, MemvaultError, error_from_response
from memvault.client.models import Note

MAX_CHUNK_BYTES = 1_500_000
"""A chunk's JSON stays under this many bytes (the server takes bodies up to 2 MiB)."""

ITEM_FIELDS = frozenset(
    {
        "text",
        "visibility",
        "readers",
        "note_type",
        "topics",
        "source",
        "ttl_days",
        "session_id",
        "occurred_at",
    }
)
"""The fields an item may have: those of `add` (and of `POST /v1/memories`)."""

Item = str | Mapping[str, Any]
"""A note to add: its text, or a mapping of `add`'s fields (`text`, `visibility`, `readers`,
`note_type`, `topics`, `source`, `ttl_days`, `session_id`, `occurred_at`)."""

Progress = Callable[[int, int], object]


def batch_item(item: Item) -> dict[str, Any]:
    """An item as the API takes it (`InvalidRequestError`, nothing sent, for an unknown field
    or a value that is neither text nor a mapping)."""
    if isinstance(item, str):
        return {"text": item}
    if not isinstance(item, Mapping):
        raise InvalidRequestError("an item is a text or a mapping of add()'s fields")
    unknown = sorted(str(k) for k in item if k not in ITEM_FIELDS)
    if unknown:
        raise InvalidRequestError(f"unknown item fields: {', '.join(unknown[:5])}")
    body: dict[str, Any] = {}
    for name, value in item.items():
        if value is None:
            continue
        if name == "occurred_at" and isinstance(value, datetime):
            value = rfc3339(value)
        body[name] = list(value) if isinstance(value, list | tuple) else value
    return body


def _results(response: httpx.Response) -> list[Note | MemvaultError]:
    out: list[Note | MemvaultError] = []
    for result in response.json()["results"]:
        if isinstance(result, dict) and isinstance(result.get("error"), dict):
            out.append(error_from_response(422, result))
        else:
            out.append(Note.model_validate(result))
    return out


def add_batch(
    items: Sequence[Item], *, idempotency_key: str | None = None
) -> Call[list[Note | MemvaultError]]:
    """Store 1-256 notes in one request (`POST /v1/memories/batch`); per item, in order, the
    note or the error (not raised) that refused that item alone."""
    body = {"items": [batch_item(i) for i in items]}
    return call("POST", "/v1/memories/batch", _results, body=body, idempotency_key=idempotency_key)


def chunks(bodies: Sequence[dict[str, Any]], chunk_size: int) -> Iterator[list[dict[str, Any]]]:
    """Consecutive runs of at most `chunk_size` items and about `MAX_CHUNK_BYTES` of JSON (an
    item larger than that goes alone; the server answers it 413)."""
    chunk: list[dict[str, Any]] = []
    size = 0
    for body in bodies:
        length = len(json.dumps(body, ensure_ascii=False).encode()) + 1
        if chunk and (len(chunk) >= chunk_size or size + length > MAX_CHUNK_BYTES):
            yield chunk
            chunk, size = [], 0
        chunk.append(body)
        size += length
    if chunk:
        yield chunk


def add_many(
    items: Sequence[Item],
    *,
    chunk_size: int = MAX_BATCH_ITEMS,
    on_progress: Progress | None = None,
    idempotency_key: str | None = None,
) -> Flow[list[Note | MemvaultError]]:
    """Store many notes, `chunk_size` (1-256) per request; returns one result per item, in order.

    Each result is the stored `Note` (exactly what `add` returns: an exact duplicate of a live
    note returns that note) or, for an item refused alone, the `MemvaultError` subclass that
    `add` would have raised for it, returned and not raised: `CredentialRefusedError` (with
    `.detector` and `.field`), `InvalidRequestError`, `TooShortError`, ... One refused item never
    stops the others. `on_progress(done, total)` is called after each chunk (in the client's
    thread, or on its event loop for `AsyncClient`). An item is a text, or a mapping of `add`'s
    keyword arguments. Each chunk carries an `Idempotency-Key` its retries reuse (chunk `n` of
    a given `idempotency_key` K gets `K.n`, so rerunning the same items with the same K replays
    every chunk); an error about the whole request (a wrong key, the server away, 409
    `scope_erasing`) is raised and the chunks before it stay stored.
    """
    if isinstance(chunk_size, bool) or not 1 <= chunk_size <= MAX_BATCH_ITEMS:
        raise InvalidRequestError(f"chunk_size must be 1-{MAX_BATCH_ITEMS}")
    bodies = [batch_item(item) for item in items]
    results: list[Note | MemvaultError] = []
    for n, chunk in enumerate(chunks(bodies, chunk_size)):
        key = None if idempotency_key is None else f"{idempotency_key}.{n}"
        got: list[Note | MemvaultError] = yield add_batch(chunk, idempotency_key=key)
        results.extend(got)
        if on_progress is not None:
            on_progress(len(results), len(bodies))
    return results
