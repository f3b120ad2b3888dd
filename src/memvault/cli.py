"""The `memvault` command line: serve, operator and key administration, reconcile, demo."""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from typing import Annotated

import typer

from memvault.config import Settings

app = typer.Typer(help="memvault: encrypted, multi-tenant long-term memory for AI agents.")
operator_app = typer.Typer(help="Operator commands (tenants).")
keys_app = typer.Typer(help="Tenant API keys.")
app.add_typer(operator_app, name="operator")
app.add_typer(keys_app, name="keys")

DataDir = Annotated[
    Path | None,
    typer.Option("--data-dir", help="Data directory (default: MEMVAULT_DATA_DIR or .memvault)"),
]


def _settings(data_dir: Path | None) -> Settings:
    settings = Settings()
    if data_dir is not None:
        settings = settings.model_copy(update={"data_dir": data_dir})
    return settings


def resolve_operator_key(settings: Settings) -> tuple[str, Path | None]:
    """MEMVAULT_OPERATOR_KEY if set, else a key generated once into DATA_DIR/operator.key (0600)."""
    if settings.operator_key:
        return settings.operator_key, None
    path = settings.data_dir / "operator.key"
    if not path.exists():
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write("mvop_" + secrets.token_urlsafe(32) + "\n")
    return path.read_text().strip(), path


@app.command()
def serve(
    host: Annotated[str, typer.Option(help="Interface to bind")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port")] = 8700,
    data_dir: DataDir = None,
) -> None:
    """Run the REST API (the embedded default unless MEMVAULT_DATABASE_URL/QDRANT_URL are set)."""
    import uvicorn

    from memvault.api.app import create_app
    from memvault.vault.factory import open_services

    settings = _settings(data_dir)
    operator_key, key_path = resolve_operator_key(settings)
    typer.echo(f"memvault: data in {settings.data_dir.resolve()}")
    if key_path is not None:
        typer.echo(f"memvault: operator key in {key_path.resolve()}")
    else:
        typer.echo("memvault: operator key from MEMVAULT_OPERATOR_KEY")
    typer.echo("memvault: loading the embedding model ...")
    services = open_services(settings)
    try:
        uvicorn.run(create_app(services, operator_key=operator_key), host=host, port=port)
    finally:
        services.close()


@operator_app.command("create-tenant")
def create_tenant(tenant_id: str, data_dir: DataDir = None) -> None:
    """Create a tenant and print its first tenant-admin key (shown once)."""
    from memvault.vault.factory import open_services

    services = open_services(_settings(data_dir))
    try:
        issued = services.tenants.create(tenant_id)
        services.audit.record(tenant_id, "operator-cli", "tenant.created", key_id=issued.key_id)
    finally:
        services.close()
    typer.echo(f"tenant {tenant_id} created; tenant-admin key (store it now, it is not kept):")
    typer.echo(issued.api_key)


@keys_app.command("issue")
def issue_key(
    tenant: Annotated[str, typer.Option(help="Tenant id")],
    user: Annotated[str, typer.Option(help="User id")],
    agent: Annotated[str, typer.Option(help="Agent id")],
    role: Annotated[str, typer.Option(help="agent | tenant_admin | auditor")] = "agent",
    data_dir: DataDir = None,
) -> None:
    """Issue an API key for (tenant, user, agent) and print it (shown once)."""
    from memvault.vault.factory import open_services

    services = open_services(_settings(data_dir))
    try:
        services.tenants.require(tenant)
        issued = services.keys.issue(tenant, user, agent, role)
        services.audit.record(tenant, "operator-cli", "key.issued", key_id=issued.key_id, role=role)
    finally:
        services.close()
    typer.echo(issued.api_key)


@app.command()
def reconcile(
    grace_seconds: Annotated[float, typer.Option(help="Leave younger pending rows alone")] = 60.0,
    data_dir: DataDir = None,
) -> None:
    """Repair pending rows and orphan vectors left by a crash (run while the server is stopped)."""
    from memvault.vault.factory import open_services

    services = open_services(_settings(data_dir))
    try:
        report = services.reconciler.run(grace_seconds)
    finally:
        services.close()
    typer.echo(
        f"completed {report.completed} pending, removed {report.removed}, "
        f"deleted {report.orphans_deleted} orphan vectors"
    )


@app.command()
def demo(data_dir: DataDir = None) -> None:
    """A scripted walkthrough: two tenants, private vs shared notes, and an erase."""
    from memvault.demo import run_demo

    run_demo(data_dir, typer.echo)


if __name__ == "__main__":  # pragma: no cover
    app()
