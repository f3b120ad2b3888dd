"""SQLAlchemy models. Every primary key and index begins with `tenant_id`, except the sweep
indexes (`SWEEP_INDEXES`).

No column holds memory text in clear: `text_ct` and `attrs_ct` are AES-GCM envelopes, and
`content_hash` is a keyed hash (HMAC under the tenant's index key).
"""

from __future__ import annotations

from sqlalchemy import Float, Index, Integer, LargeBinary, String, Text, text
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

ID = String(128)
UUID_LEN = String(36)


class Base(DeclarativeBase):
    """Declarative base for the data store (the keystore has its own, in another database)."""


class TenantRow(Base):
    __tablename__ = "tenants"

    tenant_id: Mapped[str] = mapped_column(ID, primary_key=True)
    created_at: Mapped[float] = mapped_column(Float)
    policy_json: Mapped[str] = mapped_column(Text, default="{}")


class NoteRow(Base):
    """A memory note. `status` drives the write protocol; `is_active` is the soft delete."""

    __tablename__ = "notes"

    tenant_id: Mapped[str] = mapped_column(ID, primary_key=True)
    id: Mapped[str] = mapped_column(UUID_LEN, primary_key=True)
    user_id: Mapped[str] = mapped_column(ID)
    agent_id: Mapped[str] = mapped_column(ID)
    owner: Mapped[str] = mapped_column(ID)
    readers: Mapped[str] = mapped_column(Text)  # "|a|b|": delimited so LIKE '%|a|%' is exact
    writers: Mapped[str] = mapped_column(Text)
    visibility: Mapped[str] = mapped_column(String(16))
    note_type: Mapped[str] = mapped_column(String(16), default="memory")
    category: Mapped[str | None] = mapped_column(String(64), nullable=True)
    status: Mapped[str] = mapped_column(String(16))  # pending | active
    is_active: Mapped[int] = mapped_column(Integer, default=1)
    conflict: Mapped[int] = mapped_column(Integer, default=0)
    ephemeral: Mapped[int] = mapped_column(Integer, default=0)
    low_quality: Mapped[int] = mapped_column(Integer, default=0)
    suspicious: Mapped[int] = mapped_column(Integer, default=0)
    redacted_types: Mapped[str] = mapped_column(String(128), default="")
    created_at: Mapped[float] = mapped_column(Float)
    updated_at: Mapped[float] = mapped_column(Float)
    retrieval_count: Mapped[int] = mapped_column(Integer, default=0)
    last_accessed: Mapped[float] = mapped_column(Float)
    expires_at: Mapped[float | None] = mapped_column(Float, nullable=True)
    content_hash: Mapped[str] = mapped_column(String(64))
    token_count: Mapped[int] = mapped_column(Integer, default=0)
    key_version: Mapped[int] = mapped_column(Integer)
    model_id: Mapped[str] = mapped_column(String(64))
    text_ct: Mapped[bytes] = mapped_column(LargeBinary)
    attrs_ct: Mapped[bytes] = mapped_column(LargeBinary)
    # An update in progress: the next version waits here (sealed like the live one) while its
    # vector is written; readers keep seeing the live version until one transaction swaps them.
    next_text_ct: Mapped[bytes | None] = mapped_column(LargeBinary, nullable=True)
    next_attrs_ct: Mapped[bytes | None] = mapped_column(LargeBinary, nullable=True)
    next_state: Mapped[str | None] = mapped_column(Text, nullable=True)  # JSON, ids/flags only
    next_at: Mapped[float | None] = mapped_column(Float, nullable=True)
    # Sessions and event time: a keyed tag of (user, agent, session id), never the id in clear;
    # the event time a client gave (NULL: the write time); the indexing rules of its point.
    session_tag: Mapped[str | None] = mapped_column(String(64), nullable=True)
    occurred_at: Mapped[float | None] = mapped_column(Float, nullable=True)
    index_version: Mapped[int] = mapped_column(Integer, default=1, server_default="1")
    # A-MEM enrichment of the note: pending | done | failed (NULL: written without A-MEM).
    enrichment: Mapped[str | None] = mapped_column(String(16), nullable=True)
    # Validity: when the note stopped being current without a successor (the dialogue gate's
    # DELETE, reversible by an admin's restore). Supersession is a `links` row instead.
    invalidated_at: Mapped[float | None] = mapped_column(Float, nullable=True)

    __table_args__ = (
        Index("ix_notes_scope", "tenant_id", "user_id", "agent_id", "created_at"),
        # Equality on every column the duplicate check names, so the planner prefers it to
        # ix_notes_scope without statistics (a scope-wide walk otherwise).
        Index("ix_notes_dedup", "tenant_id", "user_id", "agent_id", "content_hash"),
        # Partial: only the reconciler looks for pending rows. A full (tenant_id, status) index
        # lured SQLite into scanning every active note of a tenant to hydrate a few ids.
        Index(
            "ix_notes_pending",
            "tenant_id",
            "updated_at",
            sqlite_where=text("status = 'pending'"),
            postgresql_where=text("status = 'pending'"),
        ),
        Index(
            "ix_notes_expiry",
            "expires_at",
            sqlite_where=text("expires_at IS NOT NULL"),
            postgresql_where=text("expires_at IS NOT NULL"),
        ),
        Index(
            "ix_notes_next",
            "tenant_id",
            "next_at",
            sqlite_where=text("next_at IS NOT NULL"),
            postgresql_where=text("next_at IS NOT NULL"),
        ),
        Index(
            "ix_notes_session",
            "tenant_id",
            "user_id",
            "agent_id",
            "session_tag",
            sqlite_where=text("session_tag IS NOT NULL"),
            postgresql_where=text("session_tag IS NOT NULL"),
        ),
    )


class LinkRow(Base):
    """A relation between two notes of one tenant and user: one row per pair.

    `kind` is `link` or `sequence` (undirected), or a typed relation read from `src` to `dst`
    (`vault/relations.py`): `supersedes` (src is the newer version of dst), `duplicate_of` (src
    restates dst), `expands`, `conflicts_with` or `derived_from`."""

    __tablename__ = "links"

    tenant_id: Mapped[str] = mapped_column(ID, primary_key=True)
    src_id: Mapped[str] = mapped_column(UUID_LEN, primary_key=True)
    dst_id: Mapped[str] = mapped_column(UUID_LEN, primary_key=True)
    user_id: Mapped[str] = mapped_column(ID)
    created_at: Mapped[float] = mapped_column(Float)
    kind: Mapped[str] = mapped_column(String(16), default="link", server_default="link")
    strength: Mapped[float | None] = mapped_column(Float, nullable=True)

    __table_args__ = (
        Index("ix_links_dst", "tenant_id", "dst_id"),
        Index("ix_links_user", "tenant_id", "user_id"),
    )


class AmemJobRow(Base):
    """An A-MEM enrichment still to run for a note (ids, counters and times only)."""

    __tablename__ = "amem_jobs"

    tenant_id: Mapped[str] = mapped_column(ID, primary_key=True)
    note_id: Mapped[str] = mapped_column(UUID_LEN, primary_key=True)
    user_id: Mapped[str] = mapped_column(ID)
    agent_id: Mapped[str] = mapped_column(ID)
    caller: Mapped[str] = mapped_column(ID)
    attempts: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    run_after: Mapped[float] = mapped_column(Float)
    created_at: Mapped[float] = mapped_column(Float)

    __table_args__ = (
        Index("ix_amem_jobs_due", "tenant_id", "run_after"),
        Index("ix_amem_jobs_user", "tenant_id", "user_id"),
    )


class ApiKeyRow(Base):
    """An API key: key id + SHA-256 of the secret. The secret itself is never stored."""

    __tablename__ = "api_keys"

    tenant_id: Mapped[str] = mapped_column(ID, primary_key=True)
    key_id: Mapped[str] = mapped_column(String(32), primary_key=True)
    secret_sha256: Mapped[str] = mapped_column(String(64))
    user_id: Mapped[str] = mapped_column(ID)
    agent_id: Mapped[str] = mapped_column(ID)
    role: Mapped[str] = mapped_column(String(32))
    created_at: Mapped[float] = mapped_column(Float)
    revoked_at: Mapped[float | None] = mapped_column(Float, nullable=True)
    suspended_at: Mapped[float | None] = mapped_column(Float, nullable=True)
    """Set by a read alert with `on_alert: suspend_key`; the key answers 401 until resumed."""


class AuditEventRow(Base):
    """Hash-chained audit log per tenant (DESIGN "Audit event"). Ids and counts only, never text.

    `subject` and `details` hold canonical JSON; `at` is the RFC 3339 string that was hashed;
    `hash` is SHA-256 of the canonical JSON of the event without `hash`. Subject user ids are
    keyed pseudonyms (the tenant's index key), never clear ids.
    """

    __tablename__ = "audit_events"

    tenant_id: Mapped[str] = mapped_column(ID, primary_key=True)
    seq: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    at: Mapped[str] = mapped_column(String(32))
    actor: Mapped[str] = mapped_column(String(64))
    action: Mapped[str] = mapped_column(String(64))
    subject: Mapped[str] = mapped_column(Text)
    details: Mapped[str] = mapped_column(Text)
    prev: Mapped[str] = mapped_column(String(64))
    hash: Mapped[str] = mapped_column(String(64))


class RefusalRow(Base):
    """One refused write: who, when, which detector. Never the content."""

    __tablename__ = "refusals"

    tenant_id: Mapped[str] = mapped_column(ID, primary_key=True)
    id: Mapped[str] = mapped_column(UUID_LEN, primary_key=True)
    ts: Mapped[float] = mapped_column(Float)
    principal: Mapped[str] = mapped_column(String(64))
    code: Mapped[str] = mapped_column(String(32))
    detector: Mapped[str] = mapped_column(String(64))

    __table_args__ = (Index("ix_refusals_ts", "tenant_id", "ts"),)


class CorpusStatsRow(Base):
    """Per-namespace BM25 statistics: document count and total token count (for avgdl)."""

    __tablename__ = "corpus_stats"

    tenant_id: Mapped[str] = mapped_column(ID, primary_key=True)
    namespace: Mapped[str] = mapped_column(String(256), primary_key=True)
    doc_count: Mapped[int] = mapped_column(Integer, default=0)
    token_total: Mapped[int] = mapped_column(Integer, default=0)


class IdempotencyRow(Base):
    """One `Idempotency-Key` of one principal: the request's digest and its sealed response.

    The response (status, headers, body) is AES-GCM ciphertext under the principal's scope key
    (it may hold memory text or a freshly issued API key). Neither the client's key nor the
    request digest is stored in clear: both are HMAC tags under the tenant's index key. Rows
    expire 24 hours after `created_at` (see memvault.api.idempotency and docs/idempotency.md).
    """

    __tablename__ = "idempotency_keys"

    tenant_id: Mapped[str] = mapped_column(ID, primary_key=True)
    principal: Mapped[str] = mapped_column(String(64), primary_key=True)  # the API key id
    idem_key: Mapped[str] = mapped_column(String(255), primary_key=True)  # keyed tag of the key
    user_id: Mapped[str] = mapped_column(ID)
    agent_id: Mapped[str] = mapped_column(ID)
    request_hash: Mapped[str] = mapped_column(String(64))  # keyed tag of the request
    state: Mapped[str] = mapped_column(String(16))  # in_flight | done
    status_code: Mapped[int] = mapped_column(Integer, default=0)
    response_ct: Mapped[bytes | None] = mapped_column(LargeBinary, nullable=True)
    created_at: Mapped[float] = mapped_column(Float)
    # The request executing the key: a per-attempt token (process instance . nonce) and its lease,
    # renewed while it runs, so a crashed attempt can be taken over instead of blocking retries.
    lock_owner: Mapped[str | None] = mapped_column(String(64), nullable=True)
    locked_until: Mapped[float | None] = mapped_column(Float, nullable=True)

    __table_args__ = (
        Index("ix_idempotency_created", "tenant_id", "created_at"),
        Index("ix_idempotency_expiry", "created_at"),  # the sweep: tenants with expired ones
    )


class ErasureJobRow(Base):
    """A durable erase job of one user or agent; its subject and receipt are sealed records.

    `sealed` holds the subject ids, the requester and the counts so far, sealed under the
    tenant key (`Keyring.seal_record`), so no erased id stays in clear; `subject_tag` is a keyed
    tag of the subject. `step` is the last step completed; a restart resumes after it.
    """

    __tablename__ = "erasure_jobs"

    tenant_id: Mapped[str] = mapped_column(ID, primary_key=True)
    id: Mapped[str] = mapped_column(UUID_LEN, primary_key=True)
    subject_tag: Mapped[str] = mapped_column(String(64))
    state: Mapped[str] = mapped_column(String(16))  # running | done
    step: Mapped[str] = mapped_column(String(32))
    sealed: Mapped[bytes] = mapped_column(LargeBinary)
    receipt_ct: Mapped[bytes | None] = mapped_column(LargeBinary, nullable=True)
    created_at: Mapped[float] = mapped_column(Float)
    updated_at: Mapped[float] = mapped_column(Float)

    __table_args__ = (Index("ix_erasure_jobs_state", "tenant_id", "state"),)


class TenantDeletionRow(Base):
    """An operator's tenant deletion job and its signed receipt (ids and counts only).

    No `tenant_id` column: the tenant's own rows (and RLS context) are gone when it completes.
    """

    __tablename__ = "tenant_deletions"

    id: Mapped[str] = mapped_column(UUID_LEN, primary_key=True)
    subject_tenant: Mapped[str] = mapped_column(ID)
    state: Mapped[str] = mapped_column(String(16))
    step: Mapped[str] = mapped_column(String(32))
    progress: Mapped[str] = mapped_column(Text)  # JSON counts
    receipt: Mapped[str | None] = mapped_column(Text, nullable=True)  # signed receipt JSON
    created_at: Mapped[float] = mapped_column(Float)
    updated_at: Mapped[float] = mapped_column(Float)


class DeploymentIdentityRow(Base):
    """The database's id and its bound keystore's id (`tenancy/deployment.py`); no tenant data."""

    __tablename__ = "deployment_identity"

    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    value: Mapped[str] = mapped_column(String(256))


class ConsoleSessionRow(Base):
    """A console session (`memvault.console.session`), shared by every worker on the database.

    `id_digest` is the SHA-256 of the session token (the cookie holds the token, the database
    never does). `sealed` is the signed-in API key and the CSRF token, AES-256-GCM under a key
    derived from the token: neither the database nor a copy of the cookie alone gives the key.
    A row past `expires_at` is refused and purged; sign-out deletes the row.
    """

    __tablename__ = "console_sessions"

    id_digest: Mapped[str] = mapped_column(String(64), primary_key=True)
    sealed: Mapped[bytes] = mapped_column(LargeBinary)
    expires_at: Mapped[float] = mapped_column(Float)

    __table_args__ = (Index("ix_console_sessions_expires", "expires_at"),)


class UntrustedSessionRow(Base):
    """A session its agent's runtime marked untrusted (`memvault.vault.untrusted`).

    `mark_tag` is a keyed tag (HMAC under the tenant's index key) of the agent's scope and the
    session id: neither the user, the agent nor the session id is stored in clear, and the mark's
    reason is never stored (its keyed tag goes to the audit event). A row past `expires_at` is
    no mark; `DELETE` on the session's `untrusted` route removes it.
    """

    __tablename__ = "untrusted_sessions"

    tenant_id: Mapped[str] = mapped_column(ID, primary_key=True)
    mark_tag: Mapped[str] = mapped_column(String(64), primary_key=True)
    marked_at: Mapped[float] = mapped_column(Float)
    expires_at: Mapped[float] = mapped_column(Float)

    __table_args__ = (Index("ix_untrusted_sessions_expires", "tenant_id", "expires_at"),)


class WebhookRow(Base):
    """A tenant's webhook endpoint: URL, subscribed event types (JSON list), and its signing
    secret sealed under the tenant key (`Keyring.seal_record`), never in clear."""

    __tablename__ = "webhooks"

    tenant_id: Mapped[str] = mapped_column(ID, primary_key=True)
    webhook_id: Mapped[str] = mapped_column(String(32), primary_key=True)
    url: Mapped[str] = mapped_column(String(2048))
    events: Mapped[str] = mapped_column(Text)
    secret_ct: Mapped[bytes] = mapped_column(LargeBinary)
    created_at: Mapped[float] = mapped_column(Float)


class WebhookDeliveryRow(Base):
    """One event for one endpoint (the outbox): pending until a 2xx answer, retried with
    backoff, `failed` after the last attempt. `body` holds ids and event types, never text."""

    __tablename__ = "webhook_deliveries"

    tenant_id: Mapped[str] = mapped_column(ID, primary_key=True)
    delivery_id: Mapped[str] = mapped_column(UUID_LEN, primary_key=True)
    webhook_id: Mapped[str] = mapped_column(String(32))
    event_type: Mapped[str] = mapped_column(String(64))
    body: Mapped[str] = mapped_column(Text)
    status: Mapped[str] = mapped_column(String(16))  # pending | delivered | failed
    attempts: Mapped[int] = mapped_column(Integer)
    next_at: Mapped[float] = mapped_column(Float)
    last_status: Mapped[int | None] = mapped_column(Integer, nullable=True)
    created_at: Mapped[float] = mapped_column(Float)
    delivered_at: Mapped[float | None] = mapped_column(Float, nullable=True)

    __table_args__ = (Index("ix_webhook_deliveries_due", "tenant_id", "status", "next_at"),)


class ReadAlertRow(Base):
    """A read alert that fired: key id, rule, counts and note ids (JSON), never text."""

    __tablename__ = "read_alerts"

    tenant_id: Mapped[str] = mapped_column(ID, primary_key=True)
    alert_id: Mapped[str] = mapped_column(UUID_LEN, primary_key=True)
    at: Mapped[float] = mapped_column(Float)
    key_id: Mapped[str] = mapped_column(String(32))
    rule: Mapped[str] = mapped_column(String(64))
    details: Mapped[str] = mapped_column(Text)


OPERATOR_TABLES = ("tenants", "tenant_deletions", "deployment_identity", "console_sessions")
"""Tables without a per-tenant primary key: the tenant registry, the operator's deletions, the
deployment's identity (the database's id and its bound keystore's) and the console's sessions
(an operator's session has no tenant)."""


SWEEP_INDEXES = ("ix_notes_expiry", "ix_idempotency_expiry")
"""Indexes that begin with a time, not `tenant_id`: the retention and idempotency sweeps ask
once which tenants have expired rows (through a definer function on PostgreSQL), instead of
asking every tenant in turn. They are partial or narrow, and no request path reads them."""


class IndexMarkRow(Base):
    """A partition touched by a write since the reconciler last looked (`store.index_marks`).

    `user_key` is the note's `user_id` ('' for notes without one; `*` asks for the whole
    tenant). `touched_at` is the writer's clock when it last (re)wrote the mark; the reconciler
    deletes a mark only with the `touched_at` it read, so a newer write keeps it.
    """

    __tablename__ = "index_marks"

    tenant_id: Mapped[str] = mapped_column(ID, primary_key=True)
    user_key: Mapped[str] = mapped_column(ID, primary_key=True)
    touched_at: Mapped[float] = mapped_column(Float)


class AgentIsolationRow(Base):
    """How an agent of a user is isolated (`store.agent_isolation`): `shared` (Mode A, one index
    partition per user, visibility filters per reader) or `dedicated` (Mode B, a partition of
    its own, no shared notes). Written by the first agent key issued for (user, agent), never
    changed afterwards; deleted when the agent or its user is erased."""

    __tablename__ = "agent_isolation"

    tenant_id: Mapped[str] = mapped_column(ID, primary_key=True)
    user_id: Mapped[str] = mapped_column(ID, primary_key=True)
    agent_id: Mapped[str] = mapped_column(ID, primary_key=True)
    isolation: Mapped[str] = mapped_column(String(16))
    created_at: Mapped[float] = mapped_column(Float)
