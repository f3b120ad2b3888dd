"""Command-line options and helpers shared by `memvault.cli` and the command modules it registers.

A module of its own, so the command modules can use them without importing `memvault.cli`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:
    from memvault.config import Settings
    from memvault.runtime.factory import Services
    from memvault.store.datadir import DataDirLock

__all__ = ["CliHelpers", "DataDir", "Tenants"]

DataDir = Annotated[
    Path | None,
    typer.Option("--data-dir", help="Data directory (default: MEMVAULT_DATA_DIR or .memvault)"),
]
"""`--data-dir`: where the embedded stores live (default MEMVAULT_DATA_DIR or .memvault)."""

Tenants = Annotated[
    list[str] | None, typer.Option("--tenant", help="Only this tenant (repeatable)")
]
"""`--tenant`, repeatable: limit a maintenance command to these tenants (default: all)."""


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
