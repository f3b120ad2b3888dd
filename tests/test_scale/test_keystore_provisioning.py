"""Provisioning a PostgreSQL keystore as docs/keyring.md writes it: a role of its own owning its
database, `pg_checkpoint`, and EXECUTE on `pg_switch_wal()` granted *in that database*. The role
creates the tables, passes the erasability check and scrubs. A role that may not create the
tables, or finds them made by another role, is refused saying so (before: "unexpected
ProgrammingError")."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import URL, make_url

from memvault.keyring._keystore import KeyStore
from memvault.keyring._pg_scrub import KeystoreNotErasable
from tests.conftest import pg_url_or_skip


def _run(url: str, *statements: str) -> None:
    engine = create_engine(url, isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        for statement in statements:
            conn.execute(text(statement))
    engine.dispose()


@pytest.fixture
def role_and_database() -> Iterator[tuple[str, str, URL]]:
    admin = pg_url_or_skip()
    name = f"mvksprov_{uuid.uuid4().hex[:10]}"
    _run(admin, f'CREATE ROLE "{name}" LOGIN', f'CREATE DATABASE "{name}"')
    try:
        yield admin, name, make_url(admin).set(username=name, password=None, database=name)
    finally:
        _run(admin, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)', f'DROP ROLE "{name}"')


def test_the_documented_keystore_provisioning_works(
    role_and_database: tuple[str, str, URL],
) -> None:
    admin, name, url = role_and_database
    _run(admin, f'ALTER DATABASE "{name}" OWNER TO "{name}"', f'GRANT pg_checkpoint TO "{name}"')
    in_keystore_db = make_url(admin).set(database=name).render_as_string(hide_password=False)
    _run(in_keystore_db, f'GRANT EXECUTE ON FUNCTION pg_catalog.pg_switch_wal() TO "{name}"')
    store = KeyStore(str(url.render_as_string(hide_password=False)))
    try:
        store.check_erasable()
        store.scrub()
    finally:
        store.close()


def test_a_keystore_role_that_may_not_create_its_tables_is_told_what_it_lacks(
    role_and_database: tuple[str, str, URL],
) -> None:
    _admin, _name, url = role_and_database  # the database is the superuser's: no CREATE
    with pytest.raises(KeystoreNotErasable, match="GRANT CREATE ON SCHEMA public"):
        KeyStore(str(url.render_as_string(hide_password=False)))


def test_a_keystore_role_that_does_not_own_existing_tables_is_told_so(
    role_and_database: tuple[str, str, URL],
) -> None:
    admin, name, url = role_and_database
    in_keystore_db = make_url(admin).set(database=name).render_as_string(hide_password=False)
    KeyStore(in_keystore_db).close()  # the superuser created the tables
    with pytest.raises(KeystoreNotErasable, match="does not own the keystore tables"):
        KeyStore(str(url.render_as_string(hide_password=False)))
