"""`memvault import --from mem0|jsonl FILE`: bring memories from mem0 (or JSON lines) over REST.

The server must run (`MEMVAULT_URL`, default http://127.0.0.1:8700). With an agent key
(`--api-key` or env `MEMVAULT_API_KEY`) every record lands in that key's scope; with a tenant
admin key (`--admin-key` or env `MEMVAULT_ADMIN_KEY`) each record lands under its own user_id and
agent_id. The report lists refused records by index and detector, never their text; a bad record
never stops the run, and the report is printed even when the run stops early (exit status 1).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Annotated, NoReturn

import typer

from memvault.client.errors import MemvaultError
from memvault.client.importer import FORMATS, Importer, load


def import_memories(
    file: Annotated[
        Path, typer.Argument(help="The export file.", exists=True, dir_okay=False, readable=True)
    ],
    fmt: Annotated[
        str, typer.Option("--from", help=f"The file's format: {' or '.join(FORMATS)}.")
    ] = "mem0",
    api_key: Annotated[
        str | None,
        typer.Option("--api-key", help="An agent key: import everything into its scope."),
    ] = None,
    admin_key: Annotated[
        str | None,
        typer.Option(
            "--admin-key",
            envvar="MEMVAULT_ADMIN_KEY",
            help="A tenant-admin key: import each record under its own user and agent.",
        ),
    ] = None,
    url: Annotated[
        str | None, typer.Option("--url", envvar="MEMVAULT_URL", help="The memvault server.")
    ] = None,
    default_user: Annotated[
        str, typer.Option(help="user_id for records without one (with --admin-key).")
    ] = "default",
    default_agent: Annotated[
        str, typer.Option(help="agent_id for records without one (with --admin-key).")
    ] = "mem0",
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
    progress: Annotated[bool, typer.Option(help="Show a progress bar on stderr.")] = True,
) -> None:
    """Import memories from a mem0 export or a JSON lines file (idempotent: rerun freely)."""
    if fmt not in FORMATS:
        _fail(f"--from must be one of: {', '.join(FORMATS)}")
    if api_key is not None and admin_key is not None:
        _fail("give --api-key or --admin-key, not both")
    if admin_key is None and api_key is None:
        api_key = os.environ.get("MEMVAULT_API_KEY") or None
        if api_key is None:
            _fail("no key: set MEMVAULT_API_KEY or pass --api-key or --admin-key")
    try:
        records = load(file, fmt)
        importer = Importer(
            url,
            api_key=api_key,
            admin_key=admin_key,
            default_user=default_user,
            default_agent=default_agent,
            source_prefix=fmt,
        )
        if progress and records:
            with typer.progressbar(length=len(records), label="importing", file=sys.stderr) as bar:
                report = importer.run(records, bar.update)
        else:
            report = importer.run(records)
    except MemvaultError as exc:
        _fail(exc.message)
    except OSError as exc:
        _fail(exc.strerror or type(exc).__name__)
    if as_json:
        typer.echo(json.dumps(report.as_dict(), indent=2))
    else:
        for line in report.lines():
            typer.echo(line)
    if report.stopped is not None:  # the report above says what was done; a rerun resumes
        _fail(f"the import stopped early ({report.stopped}); run it again to resume")


def _fail(message: str) -> NoReturn:
    typer.echo("error: " + " ".join(message.split()), err=True)
    raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    """Add `memvault import` to the main CLI."""
    app.command("import")(import_memories)
