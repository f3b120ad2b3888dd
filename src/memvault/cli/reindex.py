"""`memvault reindex` (registered by `memvault.cli`): rebuild stale index points in the foreground.

The helpers come in as arguments, so this module never imports `memvault.cli`.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from memvault.cli.options import DataDir

if TYPE_CHECKING:
    from memvault.config import Settings
    from memvault.runtime.factory import Services
    from memvault.store.datadir import DataDirLock


def add_reindex_command(
    app: typer.Typer,
    command: Callable[[Any], Any],
    settings_for: Callable[[Path | None], Settings],
    lock_data_dir: Callable[[Settings], DataDirLock | None],
    open_cli_services: Callable[[Settings, DataDirLock | None], Services],
) -> None:
    """Register `reindex` on the top-level app."""

    @app.command("reindex")
    @command
    def reindex(
        tenant: Annotated[
            list[str] | None, typer.Option("--tenant", help="Only this tenant (repeatable)")
        ] = None,
        status: Annotated[
            bool, typer.Option("--status", help="Only report the stale notes, change nothing")
        ] = False,
        batch: Annotated[
            int, typer.Option("--batch", min=1, max=4096, help="Notes per batch (one commit)")
        ] = 128,
        data_dir: DataDir = None,
    ) -> None:
        """Re-embed and re-index notes built under older indexing rules or another model.

        Scope by scope, from decrypted text, with a progress bar. Interrupt it at any point and
        run it again: it resumes with the notes still stale. A running server does the same in
        the background (a bounded batch per maintenance pass); with the embedded index, stop the
        server to run this command (the data directory is locked while it serves).
        """
        from memvault.vault.reindex import Reindexer

        settings = settings_for(data_dir)
        services = open_cli_services(settings, lock_data_dir(settings))
        try:
            reindexer = Reindexer(services.vault, batch=batch)
            before = reindexer.status(list(tenant) if tenant else None)
            typer.echo(
                f"index version {before.index_version}, model {before.model_id}: "
                f"{before.total_stale} stale notes in {len(before.stale)} tenants"
            )
            if status or before.total_stale == 0:
                return
            with typer.progressbar(
                length=before.total_stale, label="reindexing", file=sys.stderr
            ) as bar:
                done = reindexer.run(list(before.stale), progress=bar.update)
            after = reindexer.status(list(before.stale))
            typer.echo(f"rebuilt {done} notes; {after.total_stale} still stale")
            if after.total_stale:
                raise typer.Exit(1)
        finally:
            services.close()
