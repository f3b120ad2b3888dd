"""What the app role may do to `tenant_deletions`, the operator's table (PostgreSQL).

A tenant deletion is requested by the operator over the API and run by the server, which serves
as the app role, so the app must write the job's row: there is no owner connection in a server
that follows least privilege. The grant is the least that running the job needs, and row-level
security (not forced: the owner, the operator, is not bound) narrows it further:

- SELECT: the job, its progress and its receipt are read back (`GET /v1/operator/...`);
- INSERT only of a `running` job at step `created` without a receipt;
- UPDATE only of `state`, `step`, `progress`, `receipt`, `updated_at`, and only while the job is
  `running`: a finished job and its signed receipt are never changed;
- no DELETE and no TRUNCATE: the record of a tenant deletion stays.

The table has no `tenant_id` (the tenant is gone when the job ends), so `row_security_problems`
does not check it; `upgrade_database` applies these statements on every `db upgrade`.
"""

from __future__ import annotations

TABLE = "tenant_deletions"
UPDATABLE = ("state", "step", "progress", "receipt", "updated_at")
POLICIES = {
    "app_reads_tenant_deletions": "FOR SELECT TO {r} USING (true)",
    "app_starts_tenant_deletions": (
        "FOR INSERT TO {r} WITH CHECK (state = 'running' AND step = 'created' AND receipt IS NULL)"
    ),
    "app_advances_tenant_deletions": (
        "FOR UPDATE TO {r} USING (state = 'running') WITH CHECK (true)"
    ),
}


def operator_table_statements(schema: str, role: str) -> list[str]:
    """The statements that leave the app role (`role`, quoted) the grant described above on
    `schema`'s (quoted) `tenant_deletions`. Idempotent."""
    table = f"{schema}.{TABLE}"
    statements = [
        f"REVOKE ALL ON {table} FROM {role}",
        f"GRANT SELECT, INSERT ON {table} TO {role}",
        f"GRANT UPDATE ({', '.join(UPDATABLE)}) ON {table} TO {role}",
        f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY",
    ]
    for name, body in POLICIES.items():
        statements.append(f"DROP POLICY IF EXISTS {name} ON {table}")
        statements.append(f"CREATE POLICY {name} ON {table} " + body.format(r=role))
    return statements
