"""Settings from the environment (prefix `MEMVAULT_`), with the embedded default under DATA_DIR."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from pydantic import AliasChoices, Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

DEFAULT_READ_THREADS = 8
"""`Settings.read_threads` (`memvault.api.lanes`): restricts nothing at eight clients."""


def is_postgres_url(url: str) -> bool:
    """Whether a database URL names PostgreSQL (any driver); anything else is SQLite."""
    return url.startswith("postgresql")


class Settings(BaseSettings):
    """Where memvault keeps its data and which backends it uses.

    Unset URLs fall back to the embedded default: SQLite (`memvault.db`), a separate SQLite
    keystore (`keystore.db`), Qdrant Edge shards (`index/`) and a master key file, all in DATA_DIR.
    """

    model_config = SettingsConfigDict(env_prefix="MEMVAULT_", extra="ignore")

    data_dir: Path = Field(default=Path(".memvault"))
    database_url: str | None = None
    keystore_url: str | None = None
    qdrant_url: str | None = None
    # -- index rebuild policy (issue 35, big users) --
    index_rebuild_replaced_share: float = Field(default=0.2, gt=0.0, le=1.0)
    """Edge: the maintenance pass rebuilds a partition once this share of the vectors in its
    files are replaced ones (updates); deletes and erasure still rebuild within a pass."""
    index_hnsw_min_points: int = Field(default=20_000, ge=1)
    """Edge: a user's partition this large gets an HNSW index, built by maintenance in a side
    process (docs/index.md, "Big users"); smaller ones are scanned exactly."""
    # -- end index rebuild policy --
    local_index_per_worker: bool = False
    """Tests only: let several workers on one PostgreSQL database each keep a local (Edge)
    index. Never in production: an erase in one worker would not reach the others' vectors."""
    keystore_backup_retention_days: int = Field(default=7, ge=0, le=3650)
    """How long keystore backups (and WAL archives) are kept: erase receipts state it as the
    time after which copies no server can reach age out."""
    embedder: str = "use-m3"
    embed_threads: int = Field(default=1, ge=1, le=64)
    embed_process: bool = True
    """The embedding model runs in a child process, off the server's GIL (`ProcessEmbedder`);
    false runs it in the server's own process."""
    llm: str = "off"
    llm_base_url: str | None = None
    llm_model: str = "claude-sonnet-5-5"
    llm_timeout_s: float = Field(default=20.0, gt=0, le=600)
    llm_max_retries: int = Field(default=2, ge=0, le=10)
    anthropic_api_key: SecretStr | None = Field(
        default=None,
        validation_alias=AliasChoices("ANTHROPIC_API_KEY", "MEMVAULT_ANTHROPIC_API_KEY"),
    )
    amem: bool = True
    """A-MEM on writes: construction, linking, evolution, same-day merge, consolidation."""
    amem_defer_when_busy: bool = True
    """With the offline judge, an add whose A-MEM would run inline leaves it to the job worker
    while other adds are in flight (its answer then says `enrichment: pending`)."""
    group_commit: bool = True
    """Concurrent adds coalesce into micro-batches (one embedding call, upsert, transaction)."""
    group_commit_window_ms: float = Field(default=1.0, ge=0, le=50)
    """How long a batch's leader waits for writers still preparing (never when none are)."""
    consolidate_at: str = Field(default="02:30", pattern=r"^([01][0-9]|2[0-3]):[0-5][0-9]$")
    """Daily consolidation time, in each tenant's timezone (policy `timezone`, default UTC)."""
    index_max_open: int = Field(default=64, ge=1, le=100_000)
    """Embedded index: at most this many users' partitions (shards) open at once, least
    recently used closed first (each holds threads, file handles and mapped memory)."""
    index_memory_budget_mb: float | None = Field(default=512.0, gt=0, le=1_048_576)
    """Embedded index: the open partitions' estimated memory stays within this many MiB
    (docs/operations.md, "Open partitions"); unset (empty) for `index_max_open` alone."""
    read_threads: int = Field(default=DEFAULT_READ_THREADS, ge=1, le=64)
    """Threads that serve memory reads (search, get, list, links) in `memvault serve`."""
    key_cache_seconds: float | None = Field(default=None, ge=0, le=60)
    """How long a verified API key is trusted without a database read (`ApiKeys`). Unset:
    2 s on SQLite (this process is the only writer of key rows, and clears the cache on each
    change), 0 (off) on PostgreSQL, where another process may revoke a key."""
    webhook_poll_seconds: float = Field(default=2.0, ge=0, le=3600)
    """How often each worker posts due webhook deliveries (0: no delivery thread)."""
    webhook_retry_seconds: float = Field(default=10.0, ge=0.01, le=3600)
    """The first retry's delay of a failed webhook delivery; it doubles with each attempt."""
    webhook_max_attempts: int = Field(default=8, ge=1, le=50)
    """Attempts of one webhook delivery before it is marked `failed`."""
    audit_checkpoint_events: int = Field(default=1000, ge=1, le=1_000_000)
    """Sign a tenant's audit chain head into the keystore once this many events are unsigned."""
    audit_checkpoint_seconds: float = Field(default=60.0, ge=1, le=86_400)
    """... or this many seconds after its first unsigned event, whichever comes first."""
    master_key_file: Path | None = None
    master_key_env: str | None = None
    operator_key: SecretStr | None = None
    metrics_token: SecretStr | None = Field(default=None, min_length=24)
    """A bearer token that reads `/metrics` and nothing else (a Prometheus scraper's), besides
    the operator key. Neither set: `/metrics` answers 401 to everyone."""
    db_schema: str | None = None
    database_admin_url: str | None = None  # owner URL: `memvault db upgrade`, VACUUM after erase
    db_app_role: str = "memvault_app"  # PostgreSQL login role the app serves as

    def __repr_args__(self) -> Any:
        """As pydantic's, with the password inside any `*_url` setting masked (`repr`, `str`)."""
        for name, value in super().__repr_args__():
            yield name, _hide_password(value) if name and name.endswith("_url") else value

    def resolved_database_url(self) -> str:
        return self.database_url or f"sqlite:///{self.data_dir / 'memvault.db'}"

    def resolved_keystore_url(self) -> str:
        return self.keystore_url or f"sqlite:///{self.data_dir / 'keystore.db'}"

    def resolved_key_cache_seconds(self) -> float:
        if self.key_cache_seconds is not None:
            return self.key_cache_seconds
        return 0.0 if is_postgres_url(self.resolved_database_url()) else 2.0

    def resolved_master_key_file(self) -> Path:
        return self.master_key_file or self.data_dir / "master.key"


def _hide_password(url: object) -> object:
    """`url` with the password of its user info replaced by `***` (other values unchanged)."""
    if not isinstance(url, str) or "@" not in url:
        return url
    try:
        parts = urlsplit(url)
        if parts.password is None:
            return url
        host = parts.netloc.rsplit("@", 1)[1]
        return urlunsplit(parts._replace(netloc=f"{parts.username or ''}:***@{host}"))
    except ValueError:
        return "***"
