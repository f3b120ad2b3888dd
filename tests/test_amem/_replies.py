"""Replies of a scripted Messages API for the A-MEM judge's prompts."""

from __future__ import annotations

import json
from typing import Any

CONSTRUCT = "Describe this new memory note"
"""A phrase of the prompt that asks the model to describe (construct) a new note."""


def prompt_of(body: Any) -> str:
    """The text of the first message of a Messages API request body."""
    return str(body["messages"][0]["content"])


def construct_reply(keywords: list[str], tags: list[str], context: str) -> str:
    """The model's description of a new note: a personal memory with these attributes."""
    return json.dumps(
        {
            "keywords": keywords,
            "tags": tags,
            "context": context,
            "category": "Personal",
            "note_type": "memory",
            "topics": [],
        }
    )
