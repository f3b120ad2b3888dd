"""Migrations are history: the schema each recorded revision builds stays what it was.

The revisions share DDL helpers (`store/migrations/_ddl.py`); a change there, or in a revision,
that alters what a past revision creates shows up here as a changed fingerprint of that
revision's schema (SQLite: `sqlite_master`; PostgreSQL: the catalog of a fresh schema, with the
schema and owner names taken out). A new revision is not checked until its fingerprint is added
to `RECORDED`.
"""

from __future__ import annotations

import hashlib
import re
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from alembic import command
from sqlalchemy import Connection, create_engine, text

from memvault.store.database import _alembic_config, _script
from tests.conftest import drop_schema, pg_url_or_skip

# sha256 of the fingerprint after upgrading one revision at a time from an empty database.
RECORDED: dict[str, dict[str, str]] = {
    "sqlite": {
        "0001": "dab7ac275cf9a0d5d661b0b503d3a6c4de6d07cf8297ea276417d8ce89824b73",
        "0002": "0b446226c22b07116734ad815f0a8071c3c556db047099d6f3e000cfe11e780d",
        "0003": "fb7f492ed8e29ea277be5bbd658148a279b66584956ddd540e8769e66241b102",
        "0004": "fb7f492ed8e29ea277be5bbd658148a279b66584956ddd540e8769e66241b102",
        "0005": "64b9fdcd8d3c6071d94b53174390230209788054d5b654be4edd5846e4d42cf9",
        "0006": "7a5ee76e9b55cf0dbe532aa3f808859b8f0105ab15b6fcd463c2e8d0ff661735",
        "0007": "a24fefcff809878beca949136998a48e73b49026edb7cad9d95724fc12ada4d5",
        "0008": "1ea80aeec5131aaff95cfe664c7f896cab065ef4593c2a64f190de115b7d340f",
        "0009": "cff5119ba137bf7d84c26ce93851c65579ec8486e4c16cd6037543bc9f7c22bf",
        "0010": "dffaefbd1fa976f96c978009ca372204a50e52fe129a21c865f9255b6b9ff9ab",
        "0011": "0f71edcd58285264d49b76d7099dea01748f32ec03a1d7f4ea813060e349a8e5",
    },
    "postgres": {
        "0001": "d5ac71adc9b0bacffb34381fb687197e878dbbd4bd180e78fb178c964da613b4",
        "0002": "93cc4e3dc38b2f7a1f0c8d8b9933fd75fc98be85537f4c5d781ed9382be9266d",
        "0003": "d3d30a106ce28bf15eefb1c9a44097a68867d4a3cd60a93ab727d386888d4ade",
        "0004": "cab0413cb30db075b590882c1e2d2466b42f141294ab87ba8dee650ba1d1669b",
        "0005": "40d8ae96501973df9358ed130ada2d6d4052f4ff620507a36fe2045c081e2491",
        "0006": "f4b1d42c7a5bc40214f0a9ce95e2271985a712963ccfb0b19da1c4f0e6eb4a48",
        "0007": "1695fffd17341ea17f1eac17536eb2b952ddd767b851a1ccad076fbdc1c243f8",
        "0008": "e2761753daec79996cff583c5534aba60e4ea80a966c3ee8efa8e2fc3de2d448",
        "0009": "31763e31ebf9dad9333f549ef9f4119dd118028b4b91427baf28edddc5125192",
        "0010": "f0e8a783d874097510f147475cb5f7bfe7475d3ef1962bba8a27e414c70cca73",
        "0011": "70cabe4582a2b6bb560a3608bfb91abb18629abddc22e04cb7fab5286881f25c",
    },
}

PG_CATALOG = {
    "columns": "SELECT table_name, ordinal_position, column_name, data_type, "
    "character_maximum_length, is_nullable, column_default FROM information_schema.columns "
    "WHERE table_schema = current_schema() ORDER BY 1, 2",
    "constraints": "SELECT c.relname, k.conname, k.contype, pg_get_constraintdef(k.oid) "
    "FROM pg_constraint k JOIN pg_class c ON c.oid = k.conrelid "
    "WHERE c.relnamespace = current_schema()::regnamespace ORDER BY 1, 2",
    "indexes": "SELECT tablename, indexname, indexdef FROM pg_indexes "
    "WHERE schemaname = current_schema() ORDER BY 1, 2",
    "row_security": "SELECT relname, relrowsecurity, relforcerowsecurity FROM pg_class "
    "WHERE relnamespace = current_schema()::regnamespace AND relkind = 'r' ORDER BY 1",
    "policies": "SELECT tablename, policyname, permissive, roles::text, cmd, qual, with_check "
    "FROM pg_policies WHERE schemaname = current_schema() ORDER BY 1, 2",
    "grants": "SELECT table_name, grantee, privilege_type "
    "FROM information_schema.role_table_grants "
    "WHERE table_schema = current_schema() AND grantee <> current_user ORDER BY 1, 2, 3",
    "functions": "SELECT proname, pg_get_function_result(oid), prosecdef, provolatile, "
    "proconfig::text, prosrc, proacl::text FROM pg_proc "
    "WHERE pronamespace = current_schema()::regnamespace ORDER BY 1",
}


def _sqlite_fingerprint(conn: Connection) -> str:
    rows = conn.execute(text("SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY 1, 2"))
    return "\n".join(" | ".join(str(v) for v in row) for row in rows)


def _pg_fingerprint(conn: Connection) -> str:
    schema = str(conn.execute(text("SELECT current_schema()")).scalar())
    owner = str(conn.execute(text("SELECT current_user")).scalar())
    lines = []
    for name, sql in PG_CATALOG.items():
        lines.append(f"-- {name}")
        lines.extend(" | ".join(str(v) for v in row) for row in conn.execute(text(sql)))
    dump = "\n".join(lines).replace(f'"{schema}"', "<schema>").replace(schema, "<schema>")
    return re.sub(rf"\b{re.escape(owner)}\b", "<owner>", dump)


@pytest.fixture
def migrate_step(backend: str, tmp_path: Path) -> Iterator[Callable[[str], str]]:
    """Upgrade a fresh database to the named revision; return the fingerprint of its schema."""
    if backend == "sqlite":
        engine = create_engine(f"sqlite:///{tmp_path / 'history.db'}")
        role, fingerprint, admin, schema = None, _sqlite_fingerprint, "", ""
    else:
        admin, schema = pg_url_or_skip(), "mvh_" + uuid.uuid4().hex[:12]
        with create_engine(admin).begin() as conn:
            conn.execute(text(f'CREATE SCHEMA "{schema}"'))
        engine = create_engine(admin, connect_args={"options": f"-csearch_path={schema}"})
        role, fingerprint = "memvault_app", _pg_fingerprint

    def step(revision: str) -> str:
        with engine.begin() as conn:
            cfg = _alembic_config()
            cfg.attributes["connection"] = conn
            cfg.attributes["app_role"] = role
            command.upgrade(cfg, revision)
            return fingerprint(conn)

    try:
        yield step
    finally:
        engine.dispose()
        if schema:
            drop_schema(admin, schema)


def test_each_recorded_revision_builds_the_schema_it_always_did(
    backend: str, migrate_step: Callable[[str], str]
) -> None:
    recorded = RECORDED[backend]
    revisions = [r.revision for r in reversed(list(_script().walk_revisions()))]
    assert set(recorded) <= set(revisions)
    for revision in revisions:
        dump = migrate_step(revision)
        digest = hashlib.sha256(dump.encode()).hexdigest()
        if revision in recorded:
            assert digest == recorded[revision], (
                f"revision {revision} now builds another schema on {backend} "
                f"(sha256 {digest}):\n{dump}"
            )
