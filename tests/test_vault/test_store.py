"""Storage: the scope predicate, migrations, and row-level security on PostgreSQL."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import func, select, text

from memvault.scope import Scope
from memvault.store.database import Database
from memvault.store.models import ApiKeyRow, NoteRow
from memvault.store.scoping import (
    OwnedBy,
    ReadableBy,
    member_list,
    scoped_select,
    scoped_select_ids,
)
from tests.conftest import (
    ServicesFactory,
    app_role_url,
    drop_schema,
    migrated_pg_schema,
    pg_url_or_skip,
)


def test_member_list_matches_exact_ids_only() -> None:
    encoded = member_list(["a1", "a10"])
    assert "|a1|" in encoded and "|a|" not in encoded
    assert ReadableBy(Scope("t", "u", "a1")).admits("t", "u", ["a1", "a10"])
    assert not ReadableBy(Scope("t", "u", "a")).admits("t", "u", ["a1", "a10"])
    assert not ReadableBy(Scope("t", "u", "a1")).admits("t", "u2", ["a1"])
    assert ReadableBy(Scope("t", "u", "zz")).admits("t", "u", ["*"])


def test_owned_by_requires_user_for_agent() -> None:
    with pytest.raises(ValueError):
        OwnedBy("t", None, "a1")


def test_scoped_select_filters_readers_with_like_metacharacters(
    make_services: ServicesFactory, backend: str
) -> None:
    services = make_services(backend)
    services.vault.scoped(Scope("t1", "u1", "a_1")).add("A note readable by a_1 only")
    services.vault.scoped(Scope("t1", "u1", "ab1")).add("A note readable by ab1 only")
    services.vault.scoped(Scope("t1", "u1", "A_1")).add("A note readable by A_1 only")
    with services.db.session("t1") as sess:
        rows = list(sess.execute(scoped_select(ReadableBy(Scope("t1", "u1", "a_1")))).scalars())
    assert [r.owner for r in rows] == ["a_1"]  # '_' is not a wildcard, and case matters


def test_migrate_is_idempotent(make_services: ServicesFactory, backend: str) -> None:
    services = make_services(backend)
    services.db.migrate()
    services.db.migrate()
    with services.db.session("t1") as sess:
        assert sess.execute(select(func.count()).select_from(NoteRow)).scalar_one() == 0


def test_every_primary_key_and_index_begins_with_tenant_id() -> None:
    from memvault.store.models import OPERATOR_TABLES, SWEEP_INDEXES, Base

    sweep_indexes = []
    for table in Base.metadata.tables.values():
        if table.name in OPERATOR_TABLES:
            continue
        assert table.primary_key.columns.values()[0].name == "tenant_id", table.name
        for index in table.indexes:
            if index.name in SWEEP_INDEXES:
                sweep_indexes.append(index.name)
                continue
            assert index.columns.values()[0].name == "tenant_id", index.name
    assert sorted(sweep_indexes) == sorted(SWEEP_INDEXES)  # every exception names a real index


def test_rls_hides_rows_without_the_tenant_set(make_services: ServicesFactory) -> None:
    services = make_services("postgres")
    services.tenants.create("t1")
    services.vault.scoped(Scope("t1", "u1", "a1")).add("Row-level security guards this note")
    db = services.db
    with db.engine.connect() as conn:  # a raw connection: no app.tenant_id at all
        assert conn.execute(text("SELECT current_user")).scalar_one() == "memvault_app"
        assert conn.execute(text("SELECT count(*) FROM notes")).scalar_one() == 0
        assert conn.execute(text("SELECT count(*) FROM api_keys")).scalar_one() == 0
    with db.session("t2") as sess:
        assert sess.execute(select(func.count()).select_from(NoteRow)).scalar_one() == 0
        assert sess.execute(select(func.count()).select_from(ApiKeyRow)).scalar_one() == 0
    with db.session("t1") as sess:
        assert sess.execute(select(func.count()).select_from(NoteRow)).scalar_one() == 1


def test_rls_refuses_writes_into_another_tenant(make_services: ServicesFactory) -> None:
    services = make_services("postgres")
    with pytest.raises(Exception, match="row-level security"), services.db.session("t1") as sess:
        sess.execute(
            text(
                "INSERT INTO refusals (tenant_id, id, ts, principal, code, detector) "
                "VALUES ('t2', 'x', 0, 'p', 'c', 'd')"
            )
        )


def test_postgres_schema_isolated_per_database_object() -> None:
    url = pg_url_or_skip()
    schema = migrated_pg_schema(url)
    db = Database(app_role_url(url), schema=schema)
    try:
        db.migrate()
        with db.session("t1") as sess:
            tables = sess.execute(
                text("SELECT count(*) FROM pg_tables WHERE schemaname = :s"), {"s": schema}
            ).scalar_one()
        assert tables >= 7
    finally:
        db.dispose()
        drop_schema(url, schema)


@pytest.mark.parametrize("n_ids", [2, 30, 200])
def test_sqlite_planner_uses_primary_key_to_hydrate_ids(
    make_services: ServicesFactory, n_ids: int
) -> None:
    # 30 is a full-mode search's candidate list: with the plain scope clause SQLite chose
    # (tenant_id, user_id) of ix_notes_dedup there and scanned the user's notes.
    services = make_services("sqlite")
    ids = [f"00000000-0000-7000-8000-{i:012d}" for i in range(n_ids)]
    query = scoped_select_ids(ReadableBy(Scope("t1", "u1", "a1")), ids, NoteRow.status == "active")
    sql = str(query.compile(services.db.engine, compile_kwargs={"literal_binds": True}))
    with services.db.engine.connect() as conn:
        plan = " ".join(str(row[-1]) for row in conn.execute(text("EXPLAIN QUERY PLAN " + sql)))
    assert "sqlite_autoindex_notes_1" in plan, plan


def test_a_checkpoint_a_reader_blocks_gives_up_after_its_attempts_not_the_busy_timeout(
    make_services: ServicesFactory, tmp_path: Path
) -> None:
    import sqlite3
    import time

    services = make_services("sqlite", data_dir=tmp_path / "vault")
    services.tenants.create("t1")
    db = services.db
    reader = sqlite3.connect(tmp_path / "vault" / "memvault.db")
    reader.execute("BEGIN")
    reader.execute("SELECT count(*) FROM notes").fetchone()  # an old snapshot
    services.vault.scoped(Scope("t1", "u1", "a1")).add("the orchard gate is painted green")
    try:
        began = time.monotonic()
        assert db.checkpoint(attempts=2) is False
        # Each attempt once waited the pool's 30 s busy timeout (a blocked erase took minutes).
        assert time.monotonic() - began < 20
    finally:
        reader.rollback()
        reader.close()
    with db.engine.connect() as conn:  # the pool's connections keep their own busy timeout
        assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() == 30_000
    assert db.checkpoint(attempts=2) is True
