"""PostgreSQL VACUUM after an erase, as the tables' owner (the app role may not vacuum).

On PostgreSQL 15 only a table's owner (or a superuser) may VACUUM it, and the app login role
owns nothing (that is what lets row-level security bind it). So an erase vacuums only when the
deployment gives it the owner's URL (`MEMVAULT_DATABASE_ADMIN_URL`, the one `memvault db upgrade`
uses); otherwise the operator runs `memvault db vacuum`, or autovacuum gets there.
See docs/erasure.md for what VACUUM does and does not overwrite.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence

from sqlalchemy import create_engine, text

log = logging.getLogger(__name__)

ERASE_TABLES = (
    "notes",
    "agent_isolation",
    "links",
    "api_keys",
    "refusals",
    "idempotency_keys",
    "corpus_stats",
    "erasure_jobs",
    "amem_jobs",
)
"""The tables an erase deletes from (a tenant deletion: every tenant table)."""

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")


def vacuum_tables(owner_url: str, schema: str | None, tables: Sequence[str]) -> list[str]:
    """VACUUM `tables` (in `schema`) as the owner; returns the tables vacuumed.

    VACUUM cannot run inside a transaction, so this uses an autocommit connection of its own.
    """
    for name in (*tables, *([schema] if schema else [])):
        if not _NAME.fullmatch(name):
            raise ValueError("not a plain SQL identifier")
    kwargs = {"connect_args": {"options": f"-csearch_path={schema}"}} if schema else {}
    engine = create_engine(owner_url, isolation_level="AUTOCOMMIT", **kwargs)
    done: list[str] = []
    try:
        with engine.connect() as conn:
            for table in tables:
                conn.execute(text(f'VACUUM "{table}"'))
                done.append(table)
    finally:
        engine.dispose()
    return done
