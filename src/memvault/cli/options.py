"""Command-line options and helpers shared by `memvault.cli` and the command modules it registers.

A module of its own, so the command modules can use them without importing `memvault.cli`.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:
    from memvault.config import Settings
    from memvault.runtime.factory import Services
    from memvault.store.datadir import DataDirLock

__all__ = ["DEFAULT_URL", "CliHelpers", "DataDir", "ServerUrl", "Tenants"]

DataDir = Annotated[
    Path | None,
    typer.Option("--data-dir", help="Data directory (default: MEMVAULT_DATA_DIR or .memvault)"),
]
"""`--data-dir`: where the embedded stores live (default MEMVAULT_DATA_DIR or .memvault)."""

Tenants = Annotated[
    list[str] | None, typer.Option("--tenant", help="Only this tenant (repeatable)")
]
"""`--tenant`, repeatable: limit a maintenance command to these tenants (default: all)."""

DEFAULT_URL = "http://127.0.0.1:8700"

ServerUrl = Annotated[
    str | None,
    typer.Option("--url", help=f"memvault server (default: MEMVAULT_URL or {DEFAULT_URL})"),
]
"""`--url`: the memvault server an agent's command talks to (`server_url` resolves it)."""


def server_url(url: str | None) -> str:
    """`--url`, else env MEMVAULT_URL, else the local default."""
    return url or os.environ.get("MEMVAULT_URL") or DEFAULT_URL


def agent_key_from_env() -> str:
    """Env MEMVAULT_API_KEY, stripped; empty when it is not set."""
    return os.environ.get("MEMVAULT_API_KEY", "").strip()


@dataclass(frozen=True)
class CliHelpers:
    """What `memvault.cli` hands each command module when it registers the module's commands.

    `command` wraps a command (private umask, one-line errors); `settings_for` reads the settings
    for a `--data-dir`; `lock_data_dir` locks DATA_DIR when the stores are embedded;
    `open_services` opens the services, owning the lock it is given (or taking one itself).
    """

    command: Callable[[Any], Any]
    settings_for: Callable[[Path | None], Settings]
    lock_data_dir: Callable[[Settings], DataDirLock | None]
    open_services: Callable[[Settings, DataDirLock | None], Services]

    def opened(self, data_dir: Path | None) -> Services:
        """The services on `data_dir`, DATA_DIR locked first (the caller closes them)."""
        settings = self.settings_for(data_dir)
        return self.open_services(settings, self.lock_data_dir(settings))
