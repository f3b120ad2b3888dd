"""Whether PostgreSQL's row-level security binds a connection, checked at start-up.

`row_security_problems` names (never values) every reason RLS would not bind the app's login:
a superuser or BYPASSRLS role it is or may become, a table or schema it owns, a tenant table
whose RLS is not enabled, forced and bound to `app.tenant_id` by every permissive policy that
applies to it, TRUNCATE (which ignores RLS), or per-role settings of the login role (it may set
its own `row_security = off`: `login_checks.role_setting_problems`).
`Database.check_row_security` refuses to serve on any of them.
"""

from __future__ import annotations

from sqlalchemy import Connection, text

from memvault.store.login_checks import role_setting_problems

_TENANT_SETTING = "'app.tenant_id'"  # how pg_get_expr renders current_setting's argument

# A role the connection is, or may SET ROLE to (or inherits from): `{0}` is a role oid.
_REACHABLE = (
    "(pg_has_role(session_user, {0}, 'MEMBER') OR pg_has_role(current_user, {0}, 'MEMBER'))"
)
_IN_SCHEMA = "c.relnamespace = current_schema()::regnamespace"


def row_security_problems(conn: Connection) -> list[str]:
    """Why RLS would not bind this PostgreSQL connection (empty: it would). Names only."""
    login = str(conn.execute(text("SELECT session_user")).scalar_one())
    problems: list[str] = []
    for name, is_super in conn.execute(
        text(
            "SELECT r.rolname, r.rolsuper FROM pg_roles r "
            f"WHERE (r.rolsuper OR r.rolbypassrls) AND {_REACHABLE.format('r.oid')} "
            "ORDER BY r.rolname <> session_user, r.rolname"
        )
    ):
        what = "a superuser" if is_super else "a BYPASSRLS role"
        if name != login:
            problems.append(f"the database role {login} may act as {name}, {what}")
        elif is_super:
            return [f"the database role {login} is a superuser"]  # nothing else matters
        else:
            problems.append(f"the database role {login} is {what}")
    problems += role_setting_problems(conn)
    schema = conn.execute(text("SELECT current_schema()")).scalar_one_or_none()
    if schema is None:
        return [*problems, "no schema on the search_path exists"]
    return problems + _ownership_problems(conn, login, str(schema)) + _table_problems(conn, login)


def _ownership_problems(conn: Connection, login: str, schema: str) -> list[str]:
    """Owners bypass RLS unless forced, and may switch it off: the app owns nothing."""
    problems: list[str] = []
    owned = conn.execute(
        text(
            f"SELECT c.relname FROM pg_class c WHERE {_IN_SCHEMA} "
            "AND c.relkind IN ('r', 'p', 'v', 'm', 'f') "
            f"AND {_REACHABLE.format('c.relowner')} ORDER BY c.relname"
        )
    )
    names = [str(name) for name in owned.scalars()]
    if names:
        problems.append(f"the database role {login} owns tables ({', '.join(names)})")
    owns_schema = conn.execute(
        text(
            f"SELECT {_REACHABLE.format('n.nspowner')} FROM pg_namespace n "
            "WHERE n.oid = current_schema()::regnamespace"
        )
    ).scalar_one()
    if owns_schema:
        problems.append(f"the database role {login} owns the schema {schema}")
    return problems


def _table_problems(conn: Connection, login: str) -> list[str]:
    """Every table with a `tenant_id` column: RLS enabled, forced, and bound to the tenant.

    A policy counts when it applies to this role; every permissive one must compare with
    `app.tenant_id` (a `USING (true)` policy would admit every row).
    """
    tables = conn.execute(
        text(
            "SELECT c.relname, c.relrowsecurity, c.relforcerowsecurity, "
            f"has_table_privilege(c.oid, 'TRUNCATE') FROM pg_class c WHERE {_IN_SCHEMA} "
            "AND c.relkind IN ('r', 'p') AND EXISTS (SELECT 1 FROM pg_attribute a "
            "WHERE a.attrelid = c.oid AND a.attname = 'tenant_id' AND a.attnum > 0 "
            "AND NOT a.attisdropped) ORDER BY c.relname"
        )
    ).all()
    if not tables:
        return ["no table with a tenant_id column in the schema"]
    granting: dict[str, list[str | None]] = {}
    for table, qual, check in conn.execute(
        text(
            "SELECT c.relname, pg_get_expr(p.polqual, p.polrelid), "
            "pg_get_expr(p.polwithcheck, p.polrelid) FROM pg_policy p "
            f"JOIN pg_class c ON c.oid = p.polrelid WHERE {_IN_SCHEMA} AND p.polpermissive "
            "AND EXISTS (SELECT 1 FROM unnest(p.polroles) AS r(oid) WHERE CASE "
            f"WHEN r.oid = 0 THEN true ELSE {_REACHABLE.format('r.oid')} END)"
        )
    ):
        granting.setdefault(str(table), []).extend([qual, check])
    unguarded = [
        str(table)
        for table, enabled, forced, _ in tables
        if not (enabled and forced and table in granting)
        or any(e is not None and _TENANT_SETTING not in e for e in granting[table])
    ]
    truncatable = [str(table) for table, _, _, can_truncate in tables if can_truncate]
    problems: list[str] = []
    if unguarded:
        problems.append(
            "row-level security is not enabled, forced and bound to app.tenant_id by a policy "
            f"on {', '.join(unguarded)}"
        )
    if truncatable:
        problems.append(
            f"the database role {login} may TRUNCATE (which ignores RLS) {', '.join(truncatable)}"
        )
    return problems
