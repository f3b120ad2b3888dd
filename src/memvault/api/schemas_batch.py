"""The schemas of `POST /v1/memories/batch` (shared with the SDK, like `api/schemas.py`)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from memvault.api.schemas import NoteOut, Strict

MAX_BATCH_ITEMS = 256
"""The most items one batch may carry (`memvault.vault.batch_add.MAX_BATCH_ITEMS` too)."""


class AddMemoryBatch(Strict):
    items: list[Any] = Field(
        min_length=1,
        max_length=MAX_BATCH_ITEMS,
        description=f"1-{MAX_BATCH_ITEMS} notes, each with the fields of `POST /v1/memories`. "
        "An item that breaks that schema is answered in its place (`invalid_request`); the "
        "others are stored.",
        json_schema_extra={"items": {"$ref": "#/components/schemas/AddMemory"}},
    )


class ItemError(BaseModel):
    code: str = Field(description="`credential_refused`, `invalid_request`, `too_short`, ...")
    message: str = Field(description="Names the field or detector, never the value.")


class BatchItemError(BaseModel):
    error: ItemError


class BatchResponse(BaseModel):
    results: list[NoteOut | BatchItemError] = Field(
        description="One per item, in order: the note as `POST /v1/memories` returns it, or "
        "the error that refused that item alone."
    )
