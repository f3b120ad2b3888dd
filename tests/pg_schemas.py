"""Migrated PostgreSQL schemas for tests, cheaply: the migration recorded once, then replayed.

Most PostgreSQL tests want a fresh schema as `memvault db upgrade` leaves it. Running Alembic for
each one costs about half a second (loading the revisions, rendering each one's DDL). Here the
first schema a process needs of a database is migrated for real (`upgrade_database`), with every
statement it sends recorded; each later schema replays those statements in one transaction, the
schema's name swapped for the new one's. Right after recording, a replay into a scratch schema
is compared with the migrated one (tables, columns, constraints, indexes, policies, functions,
triggers and privileges, names swapped): any difference fails the test that asked, so a migration
that a replay cannot reproduce is found at once. The migrations themselves keep their own tests
(test_vault/test_upgrades.py and the tests that call `upgrade_database` directly).
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import create_engine, event, text
from sqlalchemy.engine import Engine

from memvault.store.database import upgrade_database

Recorded = list[tuple[str, Any]]

_RECORDED: dict[str, tuple[str, Recorded]] = {}  # admin URL -> (schema it was recorded in, SQL)

# One row per object of the schema, `{s}` in place of its name: what a replay must reproduce.
_CATALOG = """
SELECT 'column', c.relname::text || '.' || a.attname || ' ' || format_type(a.atttypid, a.atttypmod)
       || CASE WHEN a.attnotnull THEN ' not null' ELSE '' END
       || coalesce(' default ' || pg_get_expr(d.adbin, d.adrelid), '')
  FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
  LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
 WHERE c.relnamespace = to_regnamespace(:s) AND a.attnum > 0 AND NOT a.attisdropped
UNION ALL
SELECT 'relation', c.relname || ' ' || c.relkind::text || ' rls=' || c.relrowsecurity::text
       || ' force=' || c.relforcerowsecurity::text || ' acl=' || coalesce(c.relacl::text, '')
  FROM pg_class c WHERE c.relnamespace = to_regnamespace(:s)
UNION ALL
SELECT 'constraint', t.relname || ' ' || k.conname || ' ' || pg_get_constraintdef(k.oid)
  FROM pg_constraint k JOIN pg_class t ON t.oid = k.conrelid
 WHERE k.connamespace = to_regnamespace(:s)
UNION ALL
SELECT 'index', indexdef::text FROM pg_indexes WHERE schemaname = :s
UNION ALL
SELECT 'policy', tablename || ' ' || policyname || ' ' || permissive || ' ' || roles::text || ' '
       || cmd || ' ' || coalesce(qual, '') || ' ' || coalesce(with_check, '')
  FROM pg_policies WHERE schemaname = :s
UNION ALL
SELECT 'function', pg_get_functiondef(p.oid) || ' acl=' || coalesce(p.proacl::text, '')
  FROM pg_proc p WHERE p.pronamespace = to_regnamespace(:s)
UNION ALL
SELECT 'trigger', pg_get_triggerdef(g.oid) FROM pg_trigger g JOIN pg_class c ON c.oid = g.tgrelid
 WHERE c.relnamespace = to_regnamespace(:s) AND NOT g.tgisinternal
UNION ALL
SELECT 'default acl', d.defaclobjtype::text || ' ' || d.defaclacl::text FROM pg_default_acl d
 WHERE d.defaclnamespace = to_regnamespace(:s)
UNION ALL
SELECT 'schema acl', coalesce(n.nspacl::text, '') FROM pg_namespace n WHERE n.nspname = :s
UNION ALL
SELECT 'alembic_version', version_num::text FROM alembic_version
"""


def new_migrated_schema(admin_url: str) -> str:
    """A fresh schema as `upgrade_database(admin_url, schema=...)` leaves it; its name.

    The caller drops it (on failure here, the half-made schema is the caller's to drop too: the
    name is only returned on success, so this drops it itself)."""
    schema = "mvt_" + uuid.uuid4().hex[:12]
    try:
        recorded = _RECORDED.get(admin_url)
        if recorded is None:
            statements: Recorded = []
            with _recording(statements):
                upgrade_database(admin_url, schema=schema)
            _check_replay(admin_url, schema, statements)
            _RECORDED[admin_url] = (schema, statements)
        else:
            source, statements = recorded
            _replay(admin_url, source, schema, statements)
    except BaseException:
        _drop(admin_url, schema)
        raise
    return schema


@contextmanager
def _recording(into: Recorded) -> Iterator[None]:
    """Record the SQL this thread sends through any engine (the migration makes its own)."""
    thread = threading.get_ident()

    def hook(conn: Any, cursor: Any, statement: str, params: Any, context: Any, many: bool) -> None:
        if threading.get_ident() == thread:
            if many:
                raise AssertionError("a migration used executemany: replay cannot record it")
            into.append((statement, params))

    event.listen(Engine, "before_cursor_execute", hook)
    try:
        yield
    finally:
        event.remove(Engine, "before_cursor_execute", hook)


def _swap(value: Any, source: str, schema: str) -> Any:
    if isinstance(value, str):
        return value.replace(source, schema)
    if isinstance(value, dict):
        return {k: _swap(v, source, schema) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_swap(v, source, schema) for v in value)
    return value


def _replay(admin_url: str, source: str, schema: str, statements: Recorded) -> None:
    engine = create_engine(admin_url, connect_args={"options": f"-csearch_path={schema}"})
    try:
        with engine.begin() as conn:
            cursor = conn.connection.driver_connection.cursor()  # type: ignore[union-attr]
            for statement, params in statements:
                swapped = _swap(params, source, schema) or None
                cursor.execute(_swap(statement, source, schema), swapped)
    finally:
        engine.dispose()


def _catalog(admin_url: str, schema: str) -> list[tuple[str, str]]:
    engine = create_engine(admin_url, connect_args={"options": f"-csearch_path={schema}"})
    try:
        with engine.connect() as conn:
            rows = conn.execute(text(_CATALOG), {"s": schema}).all()
    finally:
        engine.dispose()
    return sorted((str(kind), str(row).replace(schema, "{s}")) for kind, row in rows)


def _check_replay(admin_url: str, source: str, statements: Recorded) -> None:
    """Replay the recording into a scratch schema and compare it with the migrated one."""
    scratch = "mvt_" + uuid.uuid4().hex[:12]
    try:
        _replay(admin_url, source, scratch, statements)
        want, got = _catalog(admin_url, source), _catalog(admin_url, scratch)
    finally:
        _drop(admin_url, scratch)
    if want != got:
        missing = sorted(set(want) - set(got))[:5]
        extra = sorted(set(got) - set(want))[:5]
        raise AssertionError(
            f"a replayed migration differs from the migrated schema: missing {missing}, "
            f"extra {extra}"
        )


def _drop(url: str, schema: str) -> None:
    engine = create_engine(url)
    try:
        with engine.begin() as conn:
            conn.execute(text(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'))
    finally:
        engine.dispose()
