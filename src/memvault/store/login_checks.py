"""Start-up checks of the app's PostgreSQL login beyond row-level security.

- **Per-role settings** (`role_setting_problems`): a role may set its own defaults
  (`ALTER ROLE memvault_app SET row_security = off` needs no privilege beyond being that role),
  and they apply to every later connection: an attacker with the app's SQL could switch row
  security off for every worker (each app connection then fails), or change `search_path`. The
  server refuses to start while its login role has any (`pg_db_role_setting`, readable by every
  role), naming the settings, never their values.
- **Password-less authentication** (`warn_if_passwordless`): PostgreSQL 15 gives a
  non-superuser no view of `pg_hba.conf` (`pg_hba_file_rules` is superuser-only, `system_user`
  arrives in 16). libpq knows whether the server asked for a password
  (`PQconnectionUsedPassword`): when it did not, and neither GSSAPI nor a client certificate was
  used, the login was by `trust` (or `peer`/`ident`, which grant the role to whoever holds the
  OS user). That is logged once as a warning at start-up, with the role's name only.
"""

from __future__ import annotations

import logging

from sqlalchemy import Connection, text

log = logging.getLogger(__name__)


def role_setting_problems(conn: Connection) -> list[str]:
    """Why the login role's own defaults make it unfit to serve (empty: none). Names only."""
    rows = conn.execute(
        text(
            "SELECT s.setdatabase = 0, ARRAY(SELECT split_part(c, '=', 1) "
            "FROM unnest(s.setconfig) AS c ORDER BY 1) FROM pg_db_role_setting s "
            "WHERE s.setrole = (SELECT oid FROM pg_roles WHERE rolname = session_user) "
            "AND s.setdatabase IN (0, (SELECT oid FROM pg_database "
            "WHERE datname = current_database())) ORDER BY 1 DESC"
        )
    ).all()
    if not rows:
        return []
    login = str(conn.execute(text("SELECT session_user")).scalar_one())
    names = sorted({str(name) for _, settings in rows for name in settings})
    where = " / ".join(
        "every database" if everywhere else "this database" for everywhere, _ in rows
    )
    return [
        f"the database role {login} has per-role settings ({', '.join(names)}; {where}), "
        f"which apply to every connection: remove them as a superuser "
        f"(ALTER ROLE {login} RESET ALL, and ALTER ROLE {login} IN DATABASE ... RESET ALL)"
    ]


def warn_if_passwordless(conn: Connection) -> bool:
    """Log a warning when this connection logged in without a password, certificate or
    GSSAPI (pg_hba.conf `trust`, `peer` or `ident`); True when it did."""
    pgconn = getattr(conn.connection.dbapi_connection, "pgconn", None)
    if pgconn is None or pgconn.used_password:
        return False
    if getattr(pgconn, "used_gssapi", False):
        return False
    if pgconn.ssl_in_use and _client_certificate(pgconn):
        return False
    login = conn.execute(text("SELECT session_user")).scalar_one()
    log.warning(
        "the database role %s logged in without a password (pg_hba.conf method trust, peer "
        "or ident): whoever reaches the server may act as it; use scram-sha-256",
        login,
    )
    return True


def _client_certificate(pgconn: object) -> bool:
    """Whether the connection was given a client certificate (`sslcert`)."""
    for option in getattr(pgconn, "info", None) or []:
        if getattr(option, "keyword", None) == b"sslcert" and getattr(option, "val", None):
            return True
    return False
