"""Request and response models of the operator and admin routes: tenants, keys, erasure,
the index status, and a tenant's screen policy (with its TTL defaults and read alerts).

The checks on every string a client sends are those of `api.schemas`, which these build on.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, field_validator

from memvault.api.schemas import Id, NewId, Strict
from memvault.vault.fields import MAX_TTL_DAYS


class IssueKey(Strict):
    user_id: NewId
    agent_id: NewId
    role: Literal["agent", "tenant_admin", "auditor"] = "agent"
    isolation: Literal["shared", "dedicated"] | None = Field(
        default=None,
        description=(
            "Agent keys: `shared` (Mode A, the default for a new agent: the user's agents share "
            "one index partition, per-note visibility decides who reads what) or `dedicated` "
            "(Mode B: a partition of the agent's own, no shared notes in or out). Omitted: the "
            "agent's current mode. The first agent key fixes it; a key asking for the other "
            "mode answers 409 `isolation_conflict`."
        ),
    )


class EraseRequest(Strict):
    user_id: Id
    agent_id: Id | None = None


class CreateTenant(Strict):
    tenant_id: NewId


class IndexStatusOut(BaseModel):
    index_version: int = Field(description="The indexing rules this server builds points with.")
    model_id: str = Field(description="The embedding model serving.")
    stale_notes: int = Field(description="Notes whose point was built otherwise (all tenants).")
    stale_by_tenant: dict[str, int]


class IssuedKeyOut(BaseModel):
    key_id: str
    api_key: str
    tenant_id: str
    user_id: str
    agent_id: str
    role: str
    isolation: Literal["shared", "dedicated"] = "shared"


class ErasureOut(BaseModel):
    tenant_id: str
    user_id: str
    agent_id: str | None
    keys_destroyed: int
    vectors_deleted: int
    rows_deleted: int
    links_deleted: int
    remaining: dict[str, int]
    verified: bool


class TtlDefaults(Strict):
    """Days a note of each type lives when its write names no `ttl_days` (null: no expiry)."""

    memory: float | None = Field(default=None, gt=0, le=MAX_TTL_DAYS)
    knowledge: float | None = Field(default=None, gt=0, le=MAX_TTL_DAYS)


class ReadAlertsPolicy(Strict):
    """Read alert thresholds (null turns a rule off; an omitted rule keeps its default) and
    what a firing alert does besides recording it (`suspend_key`: 401 until resumed)."""

    records_per_key_per_minute: int | None = Field(default=500, ge=1, le=1_000_000)
    records_per_session: int | None = Field(default=200, ge=1, le=1_000_000)
    new_topics_per_session: int | None = Field(default=12, ge=1, le=10_000)
    untrusted_after_read_seconds: int | None = Field(default=60, ge=1, le=86_400)
    on_alert: Literal["record", "suspend_key"] = "record"


class ScreenPolicyIn(Strict):
    """A tenant's policy: per PII type redact | refuse | allow, and default TTLs per note type.

    A TTL default applies to notes written after the change; notes already stored keep the
    expiry they were written with.
    """

    pii: dict[
        Literal["email", "phone", "card", "iban", "ssn", "ip", "national_id"],
        Literal["redact", "refuse", "allow"],
    ] = Field(default_factory=dict)
    allow_suspicious_shared: bool = False
    ttl_days: TtlDefaults = Field(default_factory=TtlDefaults)
    llm: Literal["off", "anthropic"] | None = Field(
        default=None,
        description="May A-MEM send this tenant's note text to the LLM processor? null: the "
        "deployment's setting (MEMVAULT_LLM). `off` keeps every decision offline.",
    )
    timezone: str | None = Field(
        default=None,
        max_length=64,
        pattern=r"^[A-Za-z][A-Za-z0-9_+-]*(/[A-Za-z0-9_+-]+){0,2}$",
        description="IANA timezone of the daily consolidation (default UTC).",
    )
    read_alerts: ReadAlertsPolicy = Field(
        default_factory=ReadAlertsPolicy,
        description="Read alert thresholds (docs/webhooks.md); each has a default.",
    )

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, value: str | None) -> str | None:
        if value is None:
            return None
        from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError("timezone must be an IANA timezone name") from None
        return value
