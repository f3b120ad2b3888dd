"""`memvault consolidate` and `memvault quality-scan` (registered by `memvault.cli`).

The helpers come in as an argument, so this module never imports `memvault.cli`.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from memvault.cli.options import CliHelpers, DataDir, Tenants


def add_amem_commands(
    app: typer.Typer,
    helpers: CliHelpers,
) -> None:
    """Register `consolidate` and `quality-scan` on the top-level app."""

    @app.command("consolidate")
    @helpers.command
    def consolidate(tenant: Tenants = None, data_dir: DataDir = None) -> None:
        """Consolidate every scope now (what the server does daily at 02:30): near-duplicate
        notes of one category merge into the oldest; knowledge and shared notes never merge."""
        from memvault.amem.maintenance import ConsolidationReport, consolidate_tenant, scopes_of
        from memvault.amem.wiring import install

        services = helpers.opened(data_dir)
        try:
            amem = install(services, worker=False, scheduler=False)
            tenants = list(tenant) if tenant else services.db.tenant_ids()
            total_scopes = sum(len(scopes_of(amem, t)) for t in tenants)
            report = ConsolidationReport()
            with typer.progressbar(
                length=total_scopes, label="consolidating", file=sys.stderr
            ) as bar:
                for name in tenants:
                    report = report + consolidate_tenant(amem, name, progress=bar.update)
            typer.echo(
                f"{report.scopes} scopes: {report.groups} groups, "
                f"{report.related} relations written"
            )
        finally:
            services.close()

    @app.command("quality-scan")
    @helpers.command
    def quality_scan(
        tenant: Tenants = None,
        review: Annotated[
            Path | None,
            typer.Option("--review", help="Write each scope's review batch (markdown) here"),
        ] = None,
        data_dir: DataDir = None,
    ) -> None:
        """Flag too-short, expired-ephemeral and conflicting notes as low quality, per scope;
        with --review, write an Obsidian-compatible review batch per scope (0600 files)."""
        from memvault.amem import maintenance
        from memvault.amem.wiring import install

        services = helpers.opened(data_dir)
        try:
            amem = install(services, worker=False, scheduler=False)
            if review is not None:
                review.mkdir(parents=True, exist_ok=True, mode=0o700)
            for name in list(tenant) if tenant else services.db.tenant_ids():
                for scope in maintenance.scopes_of(amem, name):
                    view = services.vault.scoped(scope)
                    flags = maintenance.quality_scan(view)
                    typer.echo(f"{scope.tenant}/{scope.user}/{scope.agent}: {len(flags)} flagged")
                    if review is not None and flags:
                        out = review / f"{scope.tenant}--{scope.user}--{scope.agent}.md"
                        out.write_text(maintenance.review(view), encoding="utf-8")
        finally:
            services.close()
