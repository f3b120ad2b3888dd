"""The `memvault` command line: serve, operator and key administration, reconcile, demo."""

from __future__ import annotations

import functools
import logging
import os
import secrets
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NoReturn, ParamSpec, TypeVar

import typer
from pydantic import ValidationError

from memvault.cli.amem import add_amem_commands
from memvault.cli.backup import add_backup_commands
from memvault.cli.compliance import register as add_compliance_commands
from memvault.cli.db import db_app
from memvault.cli.imports import register as add_import_command
from memvault.cli.keys import add_key_commands
from memvault.cli.mcp import add_mcp_command
from memvault.cli.options import CliHelpers, DataDir
from memvault.cli.reindex import add_reindex_command
from memvault.cli.untrusted import add_untrusted_command
from memvault.config import Settings
from memvault.embed.blas import cap_blas_threads
from memvault.errors import VaultError
from memvault.store.datadir import DataDirLock, needs_lock

if TYPE_CHECKING:
    from memvault.runtime.factory import Services

app = typer.Typer(help="memvault: encrypted, multi-tenant long-term memory for AI agents.")
operator_app = typer.Typer(help="Operator commands (tenants).")
keys_app = typer.Typer(help="Tenant API keys.")
app.add_typer(operator_app, name="operator")
app.add_typer(keys_app, name="keys")
app.add_typer(db_app, name="db")
add_compliance_commands(app)
add_import_command(app)


P = ParamSpec("P")
R = TypeVar("R")


def command(fn: Callable[P, R]) -> Callable[P, R]:
    """Run a CLI command with a private umask and one-line errors.

    Files the command (or an engine it runs) creates get mode 0600 and directories 0700. A
    `VaultError` (a locked data directory, an existing tenant, ...), an invalid setting or an OS
    error prints `error: <message>` on stderr and exits with status 1, without a traceback.
    Anything else prints its type only (its message may hold a path or SQL), unless
    MEMVAULT_DEBUG=1 asks for the traceback. Messages never carry a filesystem path, a secret or
    memory text.
    """

    @functools.wraps(fn)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        previous = os.umask(0o077)
        try:
            return fn(*args, **kwargs)
        except VaultError as exc:
            _fail(exc.message)
        except ValidationError as exc:
            _fail(_settings_problem(exc))
        except OSError as exc:
            _fail(exc.strerror or type(exc).__name__)
        except (typer.Exit, typer.Abort, typer.BadParameter):
            raise
        except Exception as exc:
            if os.environ.get("MEMVAULT_DEBUG") == "1":
                raise
            _fail(f"unexpected {type(exc).__name__} (MEMVAULT_DEBUG=1 shows the traceback)")
        finally:
            os.umask(previous)

    return run


def _fail(message: str) -> NoReturn:
    typer.echo("error: " + " ".join(message.split()), err=True)
    raise typer.Exit(1)


def _settings_problem(exc: ValidationError) -> str:
    """Name each invalid setting and the rule it broke, never its value (it may be a secret)."""
    problems = []
    for err in exc.errors():
        name = "_".join(str(p) for p in err.get("loc", ()))
        problems.append(f"MEMVAULT_{name.upper()} ({err.get('type', 'invalid')})")
    return "invalid setting: " + ", ".join(problems)


def _settings(data_dir: Path | None) -> Settings:
    settings = Settings()
    if data_dir is not None:
        settings = settings.model_copy(update={"data_dir": data_dir})
    return settings


def lock_data_dir(settings: Settings) -> DataDirLock | None:
    """Lock DATA_DIR before the heavy imports, so a second process is refused within a second."""
    return DataDirLock.acquire(settings.data_dir) if needs_lock(settings) else None


def open_cli_services(settings: Settings, lock: DataDirLock | None = None) -> Services:
    """Open the services, locking DATA_DIR first unless `lock` already holds it.

    The services own the lock from then on: `Services.close()` releases it.
    """
    lock = lock or lock_data_dir(settings)
    try:
        from memvault.runtime.factory import open_services

        return open_services(settings, data_dir_lock=lock)
    except BaseException:
        if lock is not None:
            lock.release()
        raise


def resolve_operator_key(settings: Settings) -> tuple[str, Path | None]:
    """MEMVAULT_OPERATOR_KEY if set, else a key generated once into DATA_DIR/operator.key (0600)."""
    if settings.operator_key is not None and settings.operator_key.get_secret_value():
        return settings.operator_key.get_secret_value(), None
    path = settings.data_dir / "operator.key"
    if not path.exists():
        settings.data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write("mvop_" + secrets.token_urlsafe(32) + "\n")
    return path.read_text().strip(), path


@app.command()
@command
def serve(
    host: Annotated[str, typer.Option(help="Interface to bind")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port")] = 8700,
    data_dir: DataDir = None,
    log_format: Annotated[
        str, typer.Option("--log-format", help="json | text (both carry request ids)")
    ] = "text",
) -> None:
    """Run the REST API (the embedded default unless MEMVAULT_DATABASE_URL/QDRANT_URL are set)."""
    from memvault.observability import configure_logging, configure_tracing_from_env

    if log_format not in ("json", "text"):
        raise typer.BadParameter("must be json or text", param_hint="--log-format")
    configure_logging("json" if log_format == "json" else "text")
    configure_tracing_from_env()  # MEMVAULT_OTEL=1 with the otel extra installed
    # In JSON mode the start-up lines are log records too, so stdout carries no plain text.
    say = typer.echo if log_format == "text" else logging.getLogger("memvault.serve").info
    settings = _settings(data_dir)
    lock = lock_data_dir(settings)
    try:
        operator_key, key_path = resolve_operator_key(settings)
    except BaseException:
        if lock is not None:
            lock.release()
        raise
    say(f"memvault: data in {settings.data_dir.resolve()}")
    if key_path is not None:
        say(f"memvault: operator key in {key_path.resolve()}")
    else:
        say("memvault: operator key from MEMVAULT_OPERATOR_KEY")
    say("memvault: loading the embedding model ...")
    services = open_cli_services(settings, lock)
    blas = cap_blas_threads(settings.embed_threads)  # held for the server's lifetime
    import uvicorn

    from memvault.api.app import create_app

    try:
        api = create_app(services, operator_key=operator_key)
        # memvault's logging (configured above) formats uvicorn's records too; its access line
        # (raw path and query) is replaced by memvault.access (route template, request id).
        # uvloop and httptools (both dependencies) are named rather than left to "auto", so a
        # broken install fails here instead of quietly serving on asyncio + h11.
        uvicorn.run(
            api,
            host=host,
            port=port,
            log_config=None,
            access_log=False,
            loop="asyncio" if sys.platform == "win32" else "uvloop",
            http="httptools",
        )
    finally:
        services.close()
        blas.restore_original_limits()


@operator_app.command("create-tenant")
@command
def create_tenant(tenant_id: str, data_dir: DataDir = None) -> None:
    """Create a tenant and print its first tenant-admin key (shown once)."""
    services = open_cli_services(_settings(data_dir))
    try:
        issued = services.tenants.create(tenant_id)
        services.audit.record(tenant_id, "operator-cli", "tenant.created", key_id=issued.key_id)
    finally:
        services.close()
    typer.echo(f"tenant {tenant_id} created; tenant-admin key (store it now, it is not kept):")
    typer.echo(issued.api_key)


@keys_app.command("issue")
@command
def issue_key(
    tenant: Annotated[str, typer.Option(help="Tenant id")],
    user: Annotated[str, typer.Option(help="User id")],
    agent: Annotated[str, typer.Option(help="Agent id")],
    role: Annotated[str, typer.Option(help="agent | tenant_admin | auditor")] = "agent",
    isolation: Annotated[
        str | None,
        typer.Option(help="shared (Mode A, default for a new agent) | dedicated (Mode B)"),
    ] = None,
    data_dir: DataDir = None,
) -> None:
    """Issue an API key for (tenant, user, agent) and print it (shown once). An agent's
    isolation never changes (a key asking for the other mode is refused)."""
    services = open_cli_services(_settings(data_dir))
    try:
        services.tenants.require(tenant)
        issued = services.keys.issue(tenant, user, agent, role, isolation)
        services.audit.record(
            tenant,
            "operator-cli",
            "key.issued",
            key_id=issued.key_id,
            role=role,
            isolation=issued.isolation,
        )
    finally:
        services.close()
    typer.echo(issued.api_key)


@app.command()
@command
def reconcile(
    grace_seconds: Annotated[float, typer.Option(help="Leave younger pending rows alone")] = 60.0,
    data_dir: DataDir = None,
) -> None:
    """Repair pending rows and orphan vectors left by a crash: every tenant and partition
    (run while the server is stopped; the server's own passes check only what writes marked)."""
    services = open_cli_services(_settings(data_dir))
    try:
        report = services.reconciler.run_full(grace_seconds)
    finally:
        services.close()
    typer.echo(
        f"completed {report.completed} pending, removed {report.removed}, "
        f"deleted {report.orphans_deleted} orphan vectors"
    )


DemoDataDir = Annotated[
    Path | None,
    typer.Option(
        "--data-dir",
        help="Data directory (default: a fresh temporary directory, removed afterwards; "
        "MEMVAULT_DATA_DIR is not used)",
    ),
]


@app.command()
@command
def demo(data_dir: DemoDataDir = None) -> None:
    """A scripted walkthrough: two tenants, private vs shared notes, and an erase.

    Each run makes fresh tenants (acme-<hex>, globex-<hex>): it runs again on one --data-dir.
    """
    from memvault.demo import run_demo

    run_demo(data_dir, typer.echo)


_helpers = CliHelpers(command, _settings, lock_data_dir, open_cli_services)
add_key_commands(keys_app, _helpers)
add_backup_commands(app, _helpers)
add_mcp_command(app, _helpers)
add_untrusted_command(app)
add_reindex_command(app, _helpers)
add_amem_commands(app, _helpers)
