"""`memvault db`: the data store's schema, migrated by its owner (registered in `memvault.cli`)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, NoReturn

import typer

from memvault.config import Settings, is_postgres_url

db_app = typer.Typer(help="Database administration (on PostgreSQL, as the tables' owner).")


@db_app.callback()
def _db() -> None:
    """Database administration (on PostgreSQL, as the tables' owner)."""


@db_app.command("upgrade")
def upgrade(
    data_dir: Annotated[
        Path | None,
        typer.Option("--data-dir", help="Data directory (default: MEMVAULT_DATA_DIR or .memvault)"),
    ] = None,
) -> None:
    """Migrate the data store to the newest schema and grant the app login role.

    On PostgreSQL it connects with MEMVAULT_DATABASE_ADMIN_URL (the tables' owner; falls back
    to MEMVAULT_DATABASE_URL), creates the login role MEMVAULT_DB_APP_ROLE if missing (its
    password from MEMVAULT_DATABASE_URL, if that URL logs in as it with one), grants it what
    serving needs, then checks that `memvault serve` would accept MEMVAULT_DATABASE_URL.
    """
    from pydantic import ValidationError
    from sqlalchemy.exc import SQLAlchemyError

    from memvault.errors import VaultError

    previous = os.umask(0o077)  # a SQLite file created here is private, as under `serve`
    try:
        _upgrade(data_dir)
    except VaultError as exc:
        _fail(exc.message)
    except SQLAlchemyError as exc:
        _fail(_first_line(exc))
    except ValidationError as exc:
        _fail(f"invalid setting {', '.join(str(e['loc'][0]) for e in exc.errors())}")
    except OSError as exc:
        _fail(exc.strerror or type(exc).__name__)
    finally:
        os.umask(previous)


@db_app.command("vacuum")
def vacuum() -> None:
    """PostgreSQL: VACUUM the tables an erase deletes from, as the owner.

    Uses MEMVAULT_DATABASE_ADMIN_URL. An erase does this itself when that setting is present;
    run this after erasures made without it. SQLite needs nothing: erases checkpoint it.
    """
    from sqlalchemy.exc import SQLAlchemyError

    from memvault.store.vacuum import ERASE_TABLES, vacuum_tables

    settings = Settings()
    admin_url = settings.database_admin_url
    if not admin_url or not is_postgres_url(admin_url):
        _fail("memvault db vacuum needs MEMVAULT_DATABASE_ADMIN_URL (PostgreSQL, the owner)")
    try:
        done = vacuum_tables(admin_url, settings.db_schema, ERASE_TABLES)
    except SQLAlchemyError as exc:
        _fail(_first_line(exc))
    typer.echo(f"memvault db vacuum: {len(done)} tables vacuumed")


def _upgrade(data_dir: Path | None) -> None:
    from sqlalchemy.engine import make_url

    from memvault.errors import VaultError
    from memvault.store.database import Database, upgrade_database

    settings = Settings()
    if data_dir is not None:
        settings = settings.model_copy(update={"data_dir": data_dir})
    app_url = settings.resolved_database_url()
    admin_url = settings.database_admin_url or app_url
    role = settings.db_app_role
    if not is_postgres_url(admin_url):
        from memvault.store.datadir import private_dir, private_sqlite_file

        private_dir(settings.data_dir)
        private_sqlite_file(admin_url)
        head = upgrade_database(admin_url)
        typer.echo(f"memvault db upgrade: schema at revision {head}")
        return
    password = None
    if admin_url != app_url and is_postgres_url(app_url):
        parsed = make_url(app_url)
        if parsed.username == role:
            password = parsed.password if isinstance(parsed.password, str) else None
        else:
            typer.echo(
                f"warning: MEMVAULT_DATABASE_URL logs in as {parsed.username}, "
                f"but the grants go to MEMVAULT_DB_APP_ROLE={role}",
                err=True,
            )
    head = upgrade_database(
        admin_url, schema=settings.db_schema, app_role=role, app_password=password
    )
    typer.echo(f"memvault db upgrade: schema at revision {head}; app role {role} granted")
    db = Database(app_url, schema=settings.db_schema)
    try:
        db.migrate()  # the start-up checks `memvault serve` makes
    except VaultError as exc:
        typer.echo(
            f"warning: memvault serve would refuse MEMVAULT_DATABASE_URL: {exc.message}",
            err=True,
        )
    else:
        typer.echo("memvault db upgrade: MEMVAULT_DATABASE_URL passes the start-up checks")
    finally:
        db.dispose()


def _first_line(exc: Exception) -> str:
    """The driver's own message, first line only (no SQL, no parameters, no URL)."""
    cause = getattr(exc, "orig", None)
    if cause is None:  # SQLAlchemy's own errors may quote the URL: name the kind only
        return f"{type(exc).__name__} (check the database URL)"
    lines = str(cause).strip().splitlines()
    return f"{type(cause).__name__}: {lines[0] if lines else ''}"


def _fail(message: str) -> NoReturn:
    typer.echo("error: " + " ".join(message.split()), err=True)
    raise typer.Exit(1)
