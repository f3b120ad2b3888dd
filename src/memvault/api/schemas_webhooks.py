"""Request and response bodies of the webhook, read alert and key-resume routes (issue 32)."""

from __future__ import annotations

from pydantic import BaseModel, Field

from memvault.api.schemas import Strict
from memvault.webhooks.hub import EventType


class WebhookIn(Strict):
    """An endpoint: an HTTPS URL (plain HTTP only to a loopback address) and its event types."""

    url: str = Field(max_length=2048)
    events: list[EventType] = Field(min_length=1, max_length=6)


class WebhookOut(BaseModel):
    """An endpoint as stored (never its secret)."""

    id: str
    url: str
    events: list[str]
    created_at: str


class WebhookCreated(WebhookOut):
    """A new endpoint and its signing secret, shown once."""

    secret: str
