"""The app login role at `memvault db upgrade` (PostgreSQL): created once, or found as it is.

A least-privilege owner has no CREATEROLE (on PostgreSQL 15 CREATEROLE is as good as superuser:
it can grant itself `pg_execute_server_program`). Then a superuser creates the app role once
(docs/deploy.md, "Least-privilege owner"), and every `db upgrade` finds it ready: LOGIN, and a
password that already opens it. Only an owner that may manage roles creates the role, makes it
LOGIN or sets its password; without that right, a change the role needs is refused with one line
that says what to run as a superuser.
"""

from __future__ import annotations

import re

from sqlalchemy import Connection, create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import OperationalError
from sqlalchemy.pool import NullPool

from memvault.errors import VaultError

LEAST_PRIVILEGE = 'docs/deploy.md, "Least-privilege owner"'


class AppRoleNotReady(VaultError):
    """The app role needs a change the owner may not make (no CREATEROLE)."""

    code = "database_not_ready"


def ident(name: str) -> str:
    """`name` quoted as an SQL identifier."""
    return '"' + name.replace('"', '""') + '"'


def ensure_app_role(conn: Connection, role: str, password: str | None) -> None:
    """Create the app login role if missing (LOGIN, nothing that could bypass RLS), make it
    LOGIN, and set `password` when it does not open the role yet; each only when needed."""
    row = conn.execute(
        text("SELECT rolcanlogin FROM pg_roles WHERE rolname = :r"), {"r": role}
    ).one_or_none()
    may_manage = bool(
        conn.execute(
            text("SELECT rolsuper OR rolcreaterole FROM pg_roles WHERE rolname = current_user")
        ).scalar()
    )
    if row is None:
        _need(may_manage, f"the app role {role} does not exist")
        conn.execute(
            text(
                f"CREATE ROLE {ident(role)} LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB "
                "NOCREATEROLE NOREPLICATION"
            )
        )
    elif not row[0]:
        _need(may_manage, f"the app role {role} may not log in (NOLOGIN)")
        conn.execute(text(f"ALTER ROLE {ident(role)} LOGIN"))
    if not password:
        return
    if not may_manage:
        if row is not None and _logs_in(conn, role, password):
            return  # the superuser set this password already: nothing to change
        _need(False, f"the app role {role} does not log in with MEMVAULT_DATABASE_URL's password")
    verifier = _scram_verifier(conn, role, password)
    # exec_driver_sql: the verifier's colons are not bind parameters.
    conn.exec_driver_sql(f"ALTER ROLE {ident(role)} PASSWORD '{verifier}'")


def _need(may_manage: bool, what: str) -> None:
    if not may_manage:
        raise AppRoleNotReady(
            f"{what}, and the owner may not manage roles (no CREATEROLE): create or alter the "
            f"role once as a superuser ({LEAST_PRIVILEGE})"
        )


def _logs_in(conn: Connection, role: str, password: str) -> bool:
    """Whether `role` logs in with `password` at the server `conn` is connected to."""
    url = make_url(str(conn.engine.url.render_as_string(hide_password=False)))
    engine = create_engine(url.set(username=role, password=password), poolclass=NullPool)
    try:
        with engine.connect() as probe:
            probe.execute(text("SELECT 1"))
    except OperationalError:
        return False
    finally:
        engine.dispose()
    return True


def _scram_verifier(conn: Connection, role: str, password: str) -> str:
    pgconn = getattr(conn.connection.dbapi_connection, "pgconn", None)
    if pgconn is None:
        raise AppRoleNotReady("setting the app role's password needs the psycopg driver")
    verifier = bytes(pgconn.encrypt_password(password.encode(), role.encode(), b"scram-sha-256"))
    value = verifier.decode("ascii")
    if not re.fullmatch(r"SCRAM-SHA-256\$[A-Za-z0-9+/=:$]+", value):
        raise AppRoleNotReady("unexpected password verifier format")
    return value
