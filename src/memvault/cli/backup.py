"""`memvault backup` and `memvault restore` (registered by `memvault.cli`: `add_backup_commands`).

The helpers come in as an argument, so this module never imports `memvault.cli`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from memvault.cli.options import CliHelpers, DataDir


def add_backup_commands(
    app: typer.Typer,
    helpers: CliHelpers,
) -> None:
    """Register `backup` and `restore` on the top-level app."""

    @app.command("backup")
    @helpers.command
    def backup(
        dest: Annotated[Path, typer.Argument(help="Data store snapshot: a new file or a dir")],
        keystore_dest: Annotated[
            Path,
            typer.Option(
                "--keystore-dest",
                help="Keystore snapshot: a new file or a dir, NOT beside or inside DEST",
            ),
        ],
        data_dir: DataDir = None,
    ) -> None:
        """Snapshot the data store and the keystore (online: the server may be running).

        The two go to separate places (a data backup must never hold the keys that decrypt
        it), as single 0600 files. The vector index is derived data and is not backed up.
        """
        from memvault.compliance.backup import backup as run_backup

        result = run_backup(helpers.settings_for(data_dir), dest, keystore_dest)
        typer.echo(f"data store snapshot: {result.data_file}")
        typer.echo(f"keystore snapshot:   {result.keystore_file}")
        typer.echo("keep keystore snapshots briefly (see docs/operations.md, Backups and restore)")

    @app.command("restore")
    @helpers.command
    def restore(
        data: Annotated[Path, typer.Option("--data", help="The data store snapshot")],
        keystore: Annotated[Path, typer.Option("--keystore", help="The keystore snapshot")],
        data_dir: DataDir = None,
    ) -> None:
        """Install both snapshots into an EMPTY data dir and rebuild the index by re-embedding.

        The master key must be in place first (DATA_DIR/master.key, MEMVAULT_MASTER_KEY_FILE
        or MEMVAULT_MASTER_KEY_ENV). Notes whose keys were destroyed after the backup (erased
        users) cannot be decrypted: they are deleted with everything derived from them.
        """
        from memvault.compliance.backup import restore as run_restore

        settings = helpers.settings_for(data_dir)
        typer.echo("memvault: loading the embedding model ...")
        report = run_restore(
            settings, data, keystore, progress=lambda n, m: typer.echo(f"restored {n}/{m}")
        )
        typer.echo(
            f"restore done: {report.restored} notes re-indexed in {report.tenants} tenants; "
            f"{report.dropped} notes dropped (their keys were destroyed after the backup), "
            f"{report.api_keys_revoked} API keys of those scopes revoked"
        )
