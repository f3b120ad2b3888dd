"""`memvault reindex` (registered by `memvault.cli`): rebuild stale index points in the foreground.

The helpers come in as an argument, so this module never imports `memvault.cli`.
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from memvault.cli.options import CliHelpers, DataDir, Tenants


def add_reindex_command(
    app: typer.Typer,
    helpers: CliHelpers,
) -> None:
    """Register `reindex` on the top-level app."""

    @app.command("reindex")
    @helpers.command
    def reindex(
        tenant: Tenants = None,
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

        services = helpers.opened(data_dir)
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
