"""Command-line options shared by `memvault.cli` and the command modules it registers.

A module of its own, so the command modules can use them without importing `memvault.cli`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

__all__ = ["DataDir"]

DataDir = Annotated[
    Path | None,
    typer.Option("--data-dir", help="Data directory (default: MEMVAULT_DATA_DIR or .memvault)"),
]
"""`--data-dir`: where the embedded stores live (default MEMVAULT_DATA_DIR or .memvault)."""
