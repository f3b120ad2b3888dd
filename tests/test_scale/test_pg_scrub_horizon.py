"""A keystore scrub on PostgreSQL waits for transactions older than the shred before VACUUM FULL.

`VACUUM FULL` copies into the new heap every deleted row that some running transaction might
still see, and a transaction id held open in *any* database of the cluster counts. Before, the
scrub ran at once: a long transaction elsewhere (a report, another service's migration) left the
erased user's wrapped keys in the keystore's files while the erase receipt said `verified`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import Connection, make_url

from memvault.keyring import Keyring, _pg_scrub
from memvault.keyring._keystore import ScrubFailed
from memvault.scope import Scope
from memvault.testing import FakeKms
from tests.conftest import pg_url_or_skip
from tests.test_scale.pg import carve, database_files, scratch_database, wrapped_keys

GONE = "usrqzhorizon"


@pytest.fixture
def keystore_url() -> Iterator[str]:
    with scratch_database(pg_url_or_skip()) as url:
        yield url


@pytest.fixture
def old_transaction() -> Iterator[Connection]:
    """A transaction holding a transaction id, open in another database of the cluster."""
    other = make_url(pg_url_or_skip()).set(database="postgres")
    engine = create_engine(other)
    conn = engine.connect()
    conn.execute(text("SELECT txid_current()"))
    yield conn
    if conn.in_transaction():
        conn.rollback()
    conn.close()
    engine.dispose()


def _seeded(ks: str) -> tuple[Keyring, list[bytes]]:
    keyring = Keyring.open(ks, FakeKms())
    for agent in ("a1", "a2"):
        keyring.aead_for(Scope("t1", GONE, agent))
    keyring.aead_for(Scope("t1", "usrqzstays", "a1"))
    keys = wrapped_keys(ks, GONE)
    assert len(keys) == 2
    return keyring, keys


@pytest.mark.cluster_exclusive
def test_scrub_waits_for_an_older_transaction_in_another_database(
    keystore_url: str, old_transaction: Connection
) -> None:
    admin = pg_url_or_skip()
    keyring, keys = _seeded(keystore_url)
    try:
        # The transaction in database `postgres` began before the shred: it could see the rows.
        release = threading.Timer(2.0, old_transaction.rollback)
        release.start()
        started = time.monotonic()
        assert keyring.shred("t1", GONE) == 2  # deletes, then scrubs
        waited = time.monotonic() - started
        release.join()
        assert waited >= 1.5, "the scrub did not wait for the older transaction"
        assert carve(database_files(admin, keystore_url), keys) == 0
    finally:
        keyring.close()


@pytest.mark.cluster_exclusive
def test_scrub_gives_up_while_an_older_transaction_stays_open(
    keystore_url: str, old_transaction: Connection, monkeypatch: pytest.MonkeyPatch
) -> None:
    admin = pg_url_or_skip()
    monkeypatch.setattr(_pg_scrub, "HORIZON_WAIT_SECONDS", 0.5)
    keyring, keys = _seeded(keystore_url)
    try:
        with pytest.raises(ScrubFailed, match="older than the shred"):
            keyring.shred("t1", GONE)
        assert (
            wrapped_keys(keystore_url, GONE) == []
        )  # deleted, but their bytes may remain: not verified
        old_transaction.rollback()
        assert keyring.shred("t1", GONE) == 0  # an erase round goes again: now the scrub holds
        assert carve(database_files(admin, keystore_url), keys) == 0
    finally:
        keyring.close()
